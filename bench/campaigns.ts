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
import { startReleaser } from '../src/campaigns/releaser.js';
import { SENDER, startBenchHarness } from './harness.js';

export type CampaignsBenchResult = {
  database: 'postgres' | 'pglite';
  contacts: number;
  batchSize: number;
  release: { recipientsPerSecond: number; seconds: number };
  delivery: { messagesPerSecond: number; seconds: number; receivedBySink: number };
  peakRssMb: number;
};

const IMPORT_CHUNK = 10_000;

export async function benchCampaigns(options: { databaseUrl?: string; contacts?: number; batchSize?: number } = {}): Promise<CampaignsBenchResult> {
  const total = options.contacts ?? 100_000;
  const batchSize = options.batchSize ?? 5_000;
  const bench = await startBenchHarness(options.databaseUrl);
  try {
    const { api } = bench;
    const { db } = bench.server.deps;
    const book = await api('POST', '/contactBooks', { name: 'Bench', variables: ['plan'] });
    for (let start = 0; start < total; start += IMPORT_CHUNK) {
      const rows = Array.from({ length: Math.min(IMPORT_CHUNK, total - start) }, (_, i) => ({
        email: `reader${start + i}@example.org`, firstName: `Reader ${start + i}`, properties: { plan: i % 2 ? 'pro' : 'free' },
      }));
      await api('POST', `/contactBooks/${book.id}/contacts/bulk`, rows);
    }
    const campaign = await api('POST', '/campaigns', {
      name: 'Bench', from: SENDER, subject: 'Hello {{firstName,fallback=there}}', contactBookId: book.id, batchSize, sendNow: true,
      html: '<h1>Hello {{firstName}}</h1><p>Your plan: <b>{{plan}}</b>. A <a href="https://example.com">link</a>.</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
    });

    // The peak of the campaign's phases: the import above is the contacts benchmark's business.
    bench.resetPeakRss();
    const releaseStarted = performance.now();
    const releaser = startReleaser(bench.server.deps, { autostart: false });
    await releaser.tick();
    await releaser.stop();
    const releaseSeconds = (performance.now() - releaseStarted) / 1000;
    const { released } = await db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('released')).where('campaign_id', '=', campaign.id).executeTakeFirstOrThrow();
    if (Number(released) !== total) throw new Error(`released ${released} of ${total}`);

    const delivery = await bench.deliver();
    return {
      database: bench.server.deps.dbKind,
      contacts: total,
      batchSize,
      release: { recipientsPerSecond: Math.round(total / releaseSeconds), seconds: Number(releaseSeconds.toFixed(2)) },
      delivery,
      peakRssMb: bench.peakRssMb(),
    };
  } finally {
    await bench.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const contacts = process.argv[3] ? Number(process.argv[3]) : undefined;
  console.log(JSON.stringify(await benchCampaigns({ databaseUrl: process.argv[2] || undefined, contacts }), null, 2));
}
