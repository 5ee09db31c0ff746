import { rm } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, usingPostgres, type TestDatabase } from './helpers/database.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { childEnv, cli, killAll, killGroup, logLines, startServerProcess, tempDir, within, type ServerProcess } from './helpers/processes.js';
import { call } from './helpers/server.js';
import { messageIdOf, startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';

const TOTAL = 2000;
const BATCH_SIZE = 50;
const CONCURRENCY = 4;
/** The most mail one dispatcher has claimed and not yet recorded: all a crash may send twice. */
const IN_FLIGHT_BOUND = BATCH_SIZE * CONCURRENCY;

let dns: TestDnsServer;
let sink: SmtpSink;
let database: TestDatabase;
let dataDir: string;

beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(() => dns.close());

beforeEach(async () => {
  sink = await startSmtpSink({ closeTimeout: 50, replyDelayMs: 3 });
  database = await createTestDatabase();
  dataDir = await tempDir();
});
afterEach(async () => {
  killAll();
  await sink.close();
  await database.drop();
  await rm(dataDir, { recursive: true, force: true });
});

function env(extra: Record<string, string> = {}) {
  return childEnv({
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    SMTP_URL: sink.url,
    SMTP_POOL_SIZE: '4',
    DNS_SERVERS: dns.address,
    RATE_LIMIT_PER_SECOND: '100000',
    DISPATCH_BATCH_SIZE: String(BATCH_SIZE),
    DISPATCH_CONCURRENCY: String(CONCURRENCY),
    DISPATCH_POLL_MS: '50',
    // Long enough for a batch to be sent, short enough for the restart to reclaim the dead one's.
    DISPATCH_LEASE_SECONDS: '5',
    ...extra,
  });
}

/** A team whose domain passed verification against the loopback DNS server; answers its key and sender. */
async function sendingTeam(server: ServerProcess, name: string) {
  const { apiKey } = await cli(['team', 'create', '--name', name], env());
  const created = await call(server.url, 'POST', '/v1/domains', { key: apiKey, body: { name } });
  dns.serve(created.body);
  await call(server.url, 'PUT', `/v1/domains/${created.body.id}/verify`, { key: apiKey });
  await within(
    (async () => {
      while ((await call(server.url, 'GET', `/v1/domains/${created.body.id}`, { key: apiKey })).body.status !== 'SUCCESS') {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })(),
    10_000,
    'domain verification',
  );
  return { key: apiKey, from: `news@${name}` };
}

async function sendAll(url: string, key: string, from: string): Promise<string[]> {
  const batches = Array.from({ length: TOTAL / 100 }, (_, b) =>
    Array.from({ length: 100 }, (_, i) => ({ from, to: `r${b * 100 + i}@example.org`, subject: `Mail ${b * 100 + i}`, text: 'Hello' })),
  );
  const ids: string[] = [];
  for (const batch of batches) {
    const res = await call(url, 'POST', '/v1/emails/batch', { key, body: batch });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    ids.push(...res.body.data.map((d: { emailId: string }) => d.emailId));
  }
  return ids;
}

async function untilAllSent(url: string, key: string, timeoutMs: number) {
  await within(
    (async () => {
      while ((await call(url, 'GET', '/v1/emails?status=DELIVERED&limit=1', { key })).body.count < TOTAL) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })(),
    timeoutMs,
    `all ${TOTAL} emails DELIVERED`,
  );
}

/** How often the sink got each email. */
function copiesAtSink(): Map<string, number> {
  const copies = new Map<string, number>();
  for (const message of sink.received) {
    const id = messageIdOf(message.raw)!.split('@')[0]!;
    copies.set(id, (copies.get(id) ?? 0) + 1);
  }
  return copies;
}

describe('sending survives a kill -9', () => {
  it(`every one of ${TOTAL} emails is SENT exactly once at the sink, except at most the mail in flight at the kill`, async () => {
    const first = await startServerProcess(env());
    const { key, from } = await sendingTeam(first, 'crash.test');
    const ids = await sendAll(first.url, key, from);
    await within(
      (async () => {
        while (sink.received.length < 300) await new Promise((resolve) => setTimeout(resolve, 5));
      })(),
      30_000,
      'sending under way',
    );
    killGroup(first.child);
    await first.exit;
    const atKill = sink.received.length;
    expect(atKill, 'the kill came while mail was still being sent').toBeLessThan(TOTAL);

    const second = await startServerProcess(env());
    await untilAllSent(second.url, key, 60_000);
    // Anything still on its way would arrive now.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const copies = copiesAtSink();
    expect(ids.filter((id) => !copies.has(id)), 'emails never delivered').toEqual([]);
    const duplicated = ids.filter((id) => copies.get(id)! > 1);
    const extra = duplicated.reduce((sum, id) => sum + copies.get(id)! - 1, 0);
    console.info(`kill -9 after ${atKill} of ${TOTAL} delivered: ${duplicated.length} emails delivered twice (bound ${IN_FLIGHT_BOUND})`);
    expect(Math.max(0, ...duplicated.map((id) => copies.get(id)!))).toBeLessThanOrEqual(2);
    expect(extra).toBeLessThanOrEqual(IN_FLIGHT_BOUND);
    expect(sink.received.length).toBe(TOTAL + extra);
    await second.stop();
  }, 150_000);
});

describe.skipIf(!usingPostgres())('several worker processes on one PostgreSQL', () => {
  // PGlite is one process per data directory: there is no second worker to share with.
  it('share the work and send nothing twice', async () => {
    const api = await startServerProcess(env());
    const worker = await startServerProcess(env({ ROLE: 'worker' }));
    const { key, from } = await sendingTeam(api, 'shared.test');
    const ids = await sendAll(api.url, key, from);
    await untilAllSent(api.url, key, 60_000);

    const copies = copiesAtSink();
    expect(ids.filter((id) => copies.get(id) !== 1), 'emails not delivered exactly once').toEqual([]);
    expect(sink.received).toHaveLength(TOTAL);

    const stopped = await Promise.all([api, worker].map(async (server) => {
      expect((await server.stop()).code).toBe(0);
      return logLines(server.stderr()).find((line) => line.msg === 'dispatcher stopped')!;
    }));
    const sent = stopped.map((line) => line.sent as number);
    expect(sent.every((count) => count > 0), `each process sent some: ${sent}`).toBe(true);
    expect(sent[0]! + sent[1]!).toBe(TOTAL);
  }, 150_000);
});
