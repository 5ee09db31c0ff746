/**
 * Campaigns end to end: a campaign to a book of N contacts, released by the releaser and then
 * delivered, personalised and DKIM-signed, through the SMTP transport to a loopback smtp-server
 * sink running in its own process on the same cores.
 *
 *   npx tsx bench/campaigns.ts [postgres://…/db]   (no URL: embedded PGlite)
 *
 * The phases are measured apart: releasing every recipient (no dispatcher running), then a
 * dispatcher draining the queue. Peak RSS is sampled across both, from a full garbage collection
 * after the import: what the import left alive counts, its garbage does not.
 */
import { measureCeiling, type Ceiling } from './ceiling.js';
import { createCampaign, importBook, releaseAll, startBenchHarness, type CpuPerMessage } from './harness.js';

export type CampaignsBenchResult = {
  database: 'postgres' | 'pglite';
  contacts: number;
  batchSize: number;
  release: { recipientsPerSecond: number; seconds: number };
  delivery: { messagesPerSecond: number; seconds: number; receivedBySink: number; cpu: CpuPerMessage };
  peakRssMb: number;
  /** This machine's signed ceiling, measured in the same run once the campaign is delivered (bench/ceiling.ts). */
  ceiling: Ceiling;
  /** Delivered over the ceiling (own client): the goal is ≥ 0.8 on PostgreSQL, ≥ 0.6 on PGlite. */
  ratio: number;
  /** Delivered over the ceiling with nodemailer's push rate. */
  nodemailerRatio: number;
};

export async function benchCampaigns(options: { databaseUrl?: string; contacts?: number; batchSize?: number } = {}): Promise<CampaignsBenchResult> {
  const total = options.contacts ?? 100_000;
  const batchSize = options.batchSize ?? 5_000;
  const bench = await startBenchHarness(options.databaseUrl);
  try {
    const book = await importBook(bench, total);
    const campaign = await createCampaign(bench, book.id, 'Bench', batchSize);

    // The peak of the campaign's phases: the import above is the contacts benchmark's business.
    bench.resetPeakRss();
    const releaseSeconds = await releaseAll(bench, campaign.id, total);

    const delivery = await bench.deliver();
    const peakRssMb = bench.peakRssMb();
    const ceiling = await measureCeiling({ poolSize: bench.server.deps.config.smtpPoolSize });
    return {
      database: bench.server.deps.dbKind,
      contacts: total,
      batchSize,
      release: { recipientsPerSecond: Math.round(total / releaseSeconds), seconds: Number(releaseSeconds.toFixed(2)) },
      delivery,
      peakRssMb,
      ceiling,
      ratio: Number((delivery.messagesPerSecond / ceiling.messagesPerSecond).toFixed(2)),
      nodemailerRatio: Number((delivery.messagesPerSecond / ceiling.nodemailerMessagesPerSecond).toFixed(2)),
    };
  } finally {
    await bench.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const contacts = process.argv[3] ? Number(process.argv[3]) : undefined;
  console.log(JSON.stringify(await benchCampaigns({ databaseUrl: process.argv[2] || undefined, contacts }), null, 2));
}
