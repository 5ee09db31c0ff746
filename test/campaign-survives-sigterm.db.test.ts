import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { usingPostgres } from './helpers/database.js';
import { logLines, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { byRecipient, startProcessRig, type ProcessRig } from './helpers/process-rig.js';
import { call } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

const CONTACTS = 4000;
let rig: ProcessRig;

beforeEach(async () => {
  rig = await startProcessRig({ replyDelayMs: 3 });
});
afterEach(() => rig.close());

async function startCampaign(server: ServerProcess, domain: string) {
  const { key, body } = await rig.campaignReady(server, domain, CONTACTS);
  const res = await call(server.url, 'POST', '/v1/campaigns', { key, body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { key, id: res.body.id as string };
}

const underWay = () => waitFor('campaign under way', async () => rig.sink.received.length, (n) => n >= 500, 60_000);

/**
 * SIGTERM; the process must exit 0, which also says its drain ended in time: one still under way
 * at SHUTDOWN_TIMEOUT_MS is cut short with exit 1 (test/shutdown-timeout.db.test.ts).
 */
async function terminate(server: ServerProcess) {
  expect(await server.stop(), 'a SIGTERM stops the process cleanly, in time').toEqual({ code: 0, signal: null });
}

async function untilSent(server: ServerProcess, key: string, id: string) {
  return waitFor('campaign SENT', async () => (await call(server.url, 'GET', `/v1/campaigns/${id}`, { key })).body, (c) => c.status === 'SENT', 60_000);
}

/** Every contact got exactly one message. */
async function expectEachContactOnce() {
  await rig.quiet();
  const copies = rig.copies(byRecipient);
  const wrong = Array.from({ length: CONTACTS }, (_, i) => `c${i}@example.org`).filter((address) => copies.get(address) !== 1);
  expect(wrong, 'contacts not mailed exactly once').toEqual([]);
  expect(rig.sink.received).toHaveLength(CONTACTS);
}

/** An API process and a worker on one PostgreSQL database, sending a campaign already under way. */
async function apiAndWorkerSending(domain: string) {
  const api = await startServerProcess(rig.env({ ROLE: 'api' }));
  const worker = await startServerProcess(rig.env({ ROLE: 'worker' }));
  const campaign = await startCampaign(api, domain);
  await underWay();
  return { api, worker, ...campaign };
}

const sentBy = (server: ServerProcess) => logLines(server.stderr()).find((line) => line.msg === 'dispatcher stopped')?.sent as number | undefined;

describe('SIGTERM while a campaign is sending', () => {
  it('ROLE=all drains (what is with the relay finishes, the rest is given back) and exits 0 in time; the next start finishes with every contact mailed once', async () => {
    const first = await startServerProcess(rig.env());
    const { key, id } = await startCampaign(first, 'sigterm-all.test');
    await underWay();
    await terminate(first);
    const atStop = rig.sink.received.length;
    expect(atStop, 'the SIGTERM came while the campaign was still sending').toBeLessThan(CONTACTS);
    // Everything that reached the sink was recorded as sent before the exit.
    expect(sentBy(first)).toBe(atStop);

    const second = await startServerProcess(rig.env());
    const final = await untilSent(second, key, id);
    await terminate(second);
    await expectEachContactOnce();
    expect(final).toMatchObject({ total: CONTACTS, sent: CONTACTS });
  }, 180_000);

  it.skipIf(!usingPostgres())('on PostgreSQL, ROLE=worker drains and exits 0 in time, and another worker finishes with every contact mailed once', async () => {
    const { api, worker, key, id } = await apiAndWorkerSending('sigterm-worker.test');
    await terminate(worker);
    const atStop = rig.sink.received.length;
    expect(atStop).toBeLessThan(CONTACTS);
    expect(sentBy(worker)).toBe(atStop);

    const next = await startServerProcess(rig.env({ ROLE: 'worker' }));
    const final = await untilSent(api, key, id);
    await terminate(next);
    await expectEachContactOnce();
    expect(final).toMatchObject({ total: CONTACTS, sent: CONTACTS });
  }, 180_000);

  it.skipIf(!usingPostgres())('on PostgreSQL, ROLE=api exits 0 in time mid-campaign and the workers go on sending it, every contact once', async () => {
    const { api, worker, key, id } = await apiAndWorkerSending('sigterm-api.test');
    await terminate(api);
    expect(rig.sink.received.length, 'the API stopped while the campaign was still sending').toBeLessThan(CONTACTS);

    const nextApi = await startServerProcess(rig.env({ ROLE: 'api' }));
    const final = await untilSent(nextApi, key, id);
    for (const server of [nextApi, worker]) await terminate(server);
    await expectEachContactOnce();
    expect(final).toMatchObject({ total: CONTACTS, sent: CONTACTS });
  }, 180_000);
});
