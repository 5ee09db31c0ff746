import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { childEnv, cli, killAll, killGroup, startServerProcess, tempDir, within, type ServerProcess } from './helpers/processes.js';
import { call } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';

const CONTACTS = 10_000;
const DISPATCH_BATCH = 50;
const CONCURRENCY = 4;
/** The most mail one dispatcher has claimed and not yet recorded: all a crash may send twice. */
const IN_FLIGHT_BOUND = DISPATCH_BATCH * CONCURRENCY;

let dns: TestDnsServer;
let sink: SmtpSink;
let database: TestDatabase;
let dataDir: string;

beforeAll(async () => {
  dns = await startDnsServer();
  sink = await startSmtpSink({ closeTimeout: 50, replyDelayMs: 2 });
  database = await createTestDatabase();
  dataDir = await tempDir();
});
afterAll(async () => {
  killAll();
  await sink.close();
  await dns.close();
  await database.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const env = () =>
  childEnv({
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    SMTP_URL: sink.url,
    SMTP_POOL_SIZE: '4',
    DNS_SERVERS: dns.address,
    RATE_LIMIT_PER_SECOND: '100000',
    DISPATCH_BATCH_SIZE: String(DISPATCH_BATCH),
    DISPATCH_CONCURRENCY: String(CONCURRENCY),
    DISPATCH_POLL_MS: '50',
    CAMPAIGN_POLL_MS: '50',
    DISPATCH_LEASE_SECONDS: '5',
  });

async function ok(server: ServerProcess, key: string, method: string, path: string, body?: unknown) {
  const res = await call(server.url, method, path, { key, body });
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
}

async function campaignReady(server: ServerProcess) {
  const { apiKey: key } = await cli(['team', 'create', '--name', 'Crash'], env());
  const domain = await ok(server, key, 'POST', '/v1/domains', { name: 'campaign-crash.test' });
  dns.serve(domain);
  await ok(server, key, 'PUT', `/v1/domains/${domain.id}/verify`);
  await within(
    (async () => {
      while ((await ok(server, key, 'GET', `/v1/domains/${domain.id}`)).status !== 'SUCCESS') await new Promise((r) => setTimeout(r, 50));
    })(),
    10_000,
    'domain verification',
  );
  const book = await ok(server, key, 'POST', '/v1/contactBooks', { name: 'Ten thousand' });
  for (let start = 0; start < CONTACTS; start += 5000) {
    const rows = Array.from({ length: 5000 }, (_, i) => ({ email: `c${start + i}@example.org`, firstName: `C${start + i}` }));
    await ok(server, key, 'POST', `/v1/contactBooks/${book.id}/contacts/bulk`, rows);
  }
  return { key, body: { name: 'Crash', from: `news@${domain.name}`, subject: 'Hi {{firstName}}', contactBookId: book.id, html: '<p>x</p>{{unsubscribeUrl}}', batchSize: 500, sendNow: true } };
}

describe('a campaign survives a kill -9', () => {
  it(`every one of ${CONTACTS} contacts gets exactly one message, except at most the mail in flight at the kill`, async () => {
    const first = await startServerProcess(env());
    const { key, body } = await campaignReady(first);
    const campaign = await ok(first, key, 'POST', '/v1/campaigns', body);
    await within(
      (async () => {
        while (sink.received.length < 1500) await new Promise((resolve) => setTimeout(resolve, 5));
      })(),
      60_000,
      'campaign under way',
    );
    killGroup(first.child);
    await first.exit;
    const atKill = sink.received.length;
    expect(atKill, 'the kill came while the campaign was still sending').toBeLessThan(CONTACTS);

    const second = await startServerProcess(env());
    await within(
      (async () => {
        while ((await ok(second, key, 'GET', `/v1/campaigns/${campaign.id}`)).status !== 'SENT') await new Promise((r) => setTimeout(r, 100));
      })(),
      120_000,
      'campaign SENT',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));

    const copies = new Map<string, number>();
    for (const message of sink.received) for (const to of message.rcptTo) copies.set(to, (copies.get(to) ?? 0) + 1);
    const missed = Array.from({ length: CONTACTS }, (_, i) => `c${i}@example.org`).filter((address) => !copies.has(address));
    expect(missed, 'contacts never mailed').toEqual([]);
    const extra = [...copies.values()].reduce((sum, n) => sum + n - 1, 0);
    console.info(`campaign kill -9 after ${atKill} of ${CONTACTS} delivered: ${extra} messages delivered twice (bound ${IN_FLIGHT_BOUND})`);
    expect(Math.max(...copies.values())).toBeLessThanOrEqual(2);
    expect(extra).toBeLessThanOrEqual(IN_FLIGHT_BOUND);
    expect(copies.size).toBe(CONTACTS);
    const final = await ok(second, key, 'GET', `/v1/campaigns/${campaign.id}`);
    expect(final).toMatchObject({ total: CONTACTS, sent: CONTACTS });
    await second.stop();
  }, 240_000);
});
