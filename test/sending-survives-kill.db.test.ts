import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { usingPostgres } from './helpers/database.js';
import { killGroup, logLines, startServerProcess } from './helpers/processes.js';
import { byEmailId, IN_FLIGHT_BOUND, RECOVERY_MS, startProcessRig, type ProcessRig } from './helpers/process-rig.js';
import { call } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

// Small enough that what is left after a kill is sent well within RECOVERY_MS on a loaded machine:
// the bound is about claims let go at once, not about throughput.
const TOTAL = 1000;

let rig: ProcessRig;

beforeEach(async () => {
  rig = await startProcessRig({ replyDelayMs: 3 });
});
afterEach(() => rig.close());

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

const untilSomeSent = (count: number) => waitFor('sending under way', async () => rig.sink.received.length, (n) => n >= count, 30_000);

async function untilAllDelivered(url: string, key: string, withinMs = 60_000) {
  const delivered = async () => (await call(url, 'GET', '/v1/emails?status=DELIVERED&limit=1', { key })).body.count;
  await waitFor(`all ${TOTAL} emails DELIVERED`, delivered, (count) => count === TOTAL, withinMs);
}

/** Every email reached the sink at most twice, and the copies beyond one are no more than was in flight at a kill. */
function expectEachOnceBeyondInFlight(ids: string[], what: string) {
  const copies = rig.copies(byEmailId);
  expect(ids.filter((id) => !copies.has(id)), 'emails never delivered').toEqual([]);
  const duplicated = ids.filter((id) => copies.get(id)! > 1);
  const extra = duplicated.reduce((sum, id) => sum + copies.get(id)! - 1, 0);
  console.info(`${what}: ${duplicated.length} emails delivered twice (bound ${IN_FLIGHT_BOUND})`);
  expect(Math.max(0, ...duplicated.map((id) => copies.get(id)!))).toBeLessThanOrEqual(2);
  expect(extra).toBeLessThanOrEqual(IN_FLIGHT_BOUND);
  expect(rig.sink.received.length).toBe(TOTAL + extra);
}

const dispatcherTotals = (stderr: string) => logLines(stderr).find((line) => line.msg === 'dispatcher stopped');

describe('sending survives a kill -9', () => {
  it(`every one of ${TOTAL} emails is SENT exactly once at the sink, except at most the mail in flight at the kill, all within ${RECOVERY_MS / 1000} s of the restart`, async () => {
    const first = await startServerProcess(rig.env());
    const { key, from } = await rig.sendingTeam(first, 'crash.test');
    const ids = await sendAll(first.url, key, from);
    await untilSomeSent(300);
    killGroup(first.child);
    await first.exit;
    const atKill = rig.sink.received.length;
    expect(atKill, 'the kill came while mail was still being sent').toBeLessThan(TOTAL);

    // The default lease (DISPATCH_LEASE_SECONDS, 5 minutes) is in force: only letting go of the dead
    // process's claims at the start makes this bound.
    const second = await startServerProcess(rig.env());
    await untilAllDelivered(second.url, key, RECOVERY_MS);
    expect((await second.stop()).code).toBe(0);
    await rig.quiet();
    expectEachOnceBeyondInFlight(ids, `kill -9 after ${atKill} of ${TOTAL} delivered`);
  }, 150_000);
});

describe('sending survives a SIGTERM', () => {
  it(`stopped while sending, then started again: every one of ${TOTAL} emails reaches the sink exactly once`, async () => {
    const first = await startServerProcess(rig.env());
    const { key, from } = await rig.sendingTeam(first, 'term.test');
    const ids = await sendAll(first.url, key, from);
    await untilSomeSent(300);
    expect(await first.stop(), 'a SIGTERM stops the service cleanly').toEqual({ code: 0, signal: null });
    // A clean stop lets the mail in flight finish and records it, and claims nothing more.
    const atStop = rig.sink.received.length;
    expect(atStop, 'the SIGTERM came while mail was still being sent').toBeLessThan(TOTAL);
    expect(dispatcherTotals(first.stderr())).toMatchObject({ sent: atStop });

    const second = await startServerProcess(rig.env());
    await untilAllDelivered(second.url, key);
    expect((await second.stop()).code).toBe(0);
    await rig.quiet();

    const copies = rig.copies(byEmailId);
    expect(ids.filter((id) => copies.get(id) !== 1), 'emails not delivered exactly once').toEqual([]);
    expect(rig.sink.received).toHaveLength(TOTAL);
    expect(dispatcherTotals(second.stderr())).toMatchObject({ sent: TOTAL - atStop });
  }, 150_000);
});

describe.skipIf(!usingPostgres())('several worker processes on one PostgreSQL', () => {
  // PGlite is one process per data directory: there is no second worker to share with.
  it('share the work and send nothing twice', async () => {
    const api = await startServerProcess(rig.env());
    const worker = await startServerProcess(rig.env({ ROLE: 'worker' }));
    const { key, from } = await rig.sendingTeam(api, 'shared.test');
    const ids = await sendAll(api.url, key, from);
    await untilAllDelivered(api.url, key);

    const stopped = await Promise.all([api, worker].map(async (server) => {
      expect((await server.stop()).code).toBe(0);
      return dispatcherTotals(server.stderr())!;
    }));
    await rig.quiet();
    const copies = rig.copies(byEmailId);
    expect(ids.filter((id) => copies.get(id) !== 1), 'emails not delivered exactly once').toEqual([]);
    expect(rig.sink.received).toHaveLength(TOTAL);

    const sent = stopped.map((line) => line.sent as number);
    expect(sent.every((count) => count > 0), `each process sent some: ${sent}`).toBe(true);
    expect(sent[0]! + sent[1]!).toBe(TOTAL);
  }, 150_000);
});

describe.skipIf(!usingPostgres())('a worker killed beside another on one PostgreSQL', () => {
  it(`the surviving worker takes over the dead one's claims without a restart: all ${TOTAL} emails within ${RECOVERY_MS / 1000} s of the kill`, async () => {
    const api = await startServerProcess(rig.env({ ROLE: 'api' }));
    const [doomed, survivor] = await Promise.all([startServerProcess(rig.env({ ROLE: 'worker' })), startServerProcess(rig.env({ ROLE: 'worker' }))]);
    const { key, from } = await rig.sendingTeam(api, 'takeover.test');
    const ids = await sendAll(api.url, key, from);
    await untilSomeSent(300);
    killGroup(doomed!.child);
    await doomed!.exit;
    const atKill = rig.sink.received.length;
    expect(atKill, 'the kill came while mail was still being sent').toBeLessThan(TOTAL);
    await untilAllDelivered(api.url, key, RECOVERY_MS);
    for (const server of [api, survivor!]) expect((await server.stop()).code).toBe(0);
    await rig.quiet();
    expectEachOnceBeyondInFlight(ids, `one of two workers killed after ${atKill} of ${TOTAL} delivered`);
    expect(logLines(survivor!.stderr()).some((line) => line.msg === 'taking over the claims of silent workers')).toBe(true);
  }, 150_000);
});

