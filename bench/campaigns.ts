/**
 * Campaigns end to end: a campaign to a book of N contacts, released by the releaser and then
 * delivered, personalised and DKIM-signed, through the SMTP transport to a loopback smtp-server
 * sink running in its own process on the same cores.
 *
 *   npx tsx bench/campaigns.ts [postgres://…/db]   (no URL: embedded PGlite)
 *
 * The phases are measured apart: releasing every recipient (no dispatcher running), then a
 * dispatcher draining the queue. Peak RSS is sampled across both (not the import before them).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startReleaser } from '../src/campaigns/releaser.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { startDispatcher } from '../src/sending/dispatcher.js';
import { startServer } from '../src/server.js';
import { createTeam } from '../src/services/teams.js';
import { databaseFor, startSink } from './emails.js';

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
  const sink = await startSink();
  const database = await databaseFor(options.databaseUrl);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-bench-'));
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const config = loadConfig({
    PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'error', ROLE: 'api', DATA_DIR: dataDir, RATE_LIMIT_PER_SECOND: '1000000',
    SMTP_URL: `smtp://127.0.0.1:${sink.port}`, SMTP_POOL_SIZE: '8', DISPATCH_BATCH_SIZE: '200', DISPATCH_CONCURRENCY: '4', DISPATCH_POLL_MS: '50',
  });
  const server = await startServer(config, { database: database.source, log: createLogger('error') });
  try {
    const { db } = server.deps;
    const { teamId, apiKey } = await createTeam(db, 'bench');
    const api = (method: string, route: string, body: unknown) =>
      fetch(`${server.url}/v1${route}`, { method, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
        .then(async (res) => {
          if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
          return res.json() as Promise<{ id: string }>;
        });
    const domain = await api('POST', '/domains', { name: 'bench.example.com' });
    // Verified by hand: DNS is not what this measures.
    await db.updateTable('domains').set({ status: 'SUCCESS' }).where('team_id', '=', teamId).where('id', '=', Number(domain.id)).execute();
    const book = await api('POST', '/contactBooks', { name: 'Bench', variables: ['plan'] });
    for (let start = 0; start < total; start += IMPORT_CHUNK) {
      const rows = Array.from({ length: Math.min(IMPORT_CHUNK, total - start) }, (_, i) => ({
        email: `reader${start + i}@example.org`, firstName: `Reader ${start + i}`, properties: { plan: i % 2 ? 'pro' : 'free' },
      }));
      await api('POST', `/contactBooks/${book.id}/contacts/bulk`, rows);
    }
    const campaign = await api('POST', '/campaigns', {
      name: 'Bench', from: 'Bench <news@bench.example.com>', subject: 'Hello {{firstName,fallback=there}}', contactBookId: book.id, batchSize, sendNow: true,
      html: '<h1>Hello {{firstName}}</h1><p>Your plan: <b>{{plan}}</b>. A <a href="https://example.com">link</a>.</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
    });

    // The peak of the campaign's phases: the import above is the contacts benchmark's business.
    peakRss = process.memoryUsage().rss;
    const releaseStarted = performance.now();
    const releaser = startReleaser(server.deps, { autostart: false });
    await releaser.tick();
    await releaser.stop();
    const releaseSeconds = (performance.now() - releaseStarted) / 1000;
    const { released } = await db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('released')).where('campaign_id', '=', campaign.id).executeTakeFirstOrThrow();
    if (Number(released) !== total) throw new Error(`released ${released} of ${total}`);

    const started = performance.now();
    const dispatcher = startDispatcher(server.deps);
    for (;;) {
      const { pending } = await db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('pending')).where('send_at', 'is not', null).executeTakeFirstOrThrow();
      if (Number(pending) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (performance.now() - started) / 1000;
    await dispatcher.stop();
    const sent = await db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('n')).where('campaign_id', '=', campaign.id).where('status', '=', 'SENT').executeTakeFirstOrThrow();
    return {
      database: server.deps.dbKind,
      contacts: total,
      batchSize,
      release: { recipientsPerSecond: Math.round(total / releaseSeconds), seconds: Number(releaseSeconds.toFixed(2)) },
      delivery: { messagesPerSecond: Math.round(Number(sent.n) / seconds), seconds: Number(seconds.toFixed(2)), receivedBySink: await sink.count() },
      peakRssMb: Math.round(peakRss / 1024 / 1024),
    };
  } finally {
    clearInterval(sampler);
    await server.close();
    await database.drop();
    await sink.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const contacts = process.argv[3] ? Number(process.argv[3]) : undefined;
  console.log(JSON.stringify(await benchCampaigns({ databaseUrl: process.argv[2] || undefined, contacts }), null, 2));
}
