import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killGroup, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { byRecipient, IN_FLIGHT_BOUND, RECOVERY_MS, startProcessRig, type ProcessRig } from './helpers/process-rig.js';
import { apiAt, expectOk } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

// Small enough that what is left after a kill is sent well within RECOVERY_MS on a loaded machine:
// the bound is about claims let go at once, not about throughput.
const CONTACTS = 3000;

let rig: ProcessRig;

beforeAll(async () => {
  rig = await startProcessRig({ replyDelayMs: 2 });
});
afterAll(() => rig.close());

const ok = (server: ServerProcess, key: string, method: string, path: string, body?: unknown) => expectOk(apiAt(server.url), key, method, path, body);

describe('a campaign survives a kill -9', () => {
  it(`every one of ${CONTACTS} contacts gets exactly one message, except at most the mail in flight at the kill, all within ${RECOVERY_MS / 1000} s of the restart`, async () => {
    const first = await startServerProcess(rig.env());
    const { key, body } = await rig.campaignReady(first, 'campaign-crash.test', CONTACTS);
    const campaign = await ok(first, key, 'POST', '/v1/campaigns', body);
    await waitFor('campaign under way', async () => rig.sink.received.length, (n) => n >= 800, 60_000);
    killGroup(first.child);
    await first.exit;
    const atKill = rig.sink.received.length;
    expect(atKill, 'the kill came while the campaign was still sending').toBeLessThan(CONTACTS);

    // With the default lease: only letting go of the dead process's claims at the start makes this bound.
    const second = await startServerProcess(rig.env());
    const final = await waitFor('campaign SENT', () => ok(second, key, 'GET', `/v1/campaigns/${campaign.id}`), (c) => c.status === 'SENT', RECOVERY_MS);
    expect((await second.stop()).code).toBe(0);
    await rig.quiet();

    const copies = rig.copies(byRecipient);
    const missed = Array.from({ length: CONTACTS }, (_, i) => `c${i}@example.org`).filter((address) => !copies.has(address));
    expect(missed, 'contacts never mailed').toEqual([]);
    const extra = [...copies.values()].reduce((sum, n) => sum + n - 1, 0);
    console.info(`campaign kill -9 after ${atKill} of ${CONTACTS} delivered: ${extra} messages delivered twice (bound ${IN_FLIGHT_BOUND})`);
    expect(Math.max(...copies.values())).toBeLessThanOrEqual(2);
    expect(extra).toBeLessThanOrEqual(IN_FLIGHT_BOUND);
    expect(copies.size).toBe(CONTACTS);
    expect(final).toMatchObject({ total: CONTACTS, sent: CONTACTS });
  }, 240_000);
});
