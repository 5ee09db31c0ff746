import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { logLines, startServerProcess } from './helpers/processes.js';
import { byEmailId, startProcessRig, type ProcessRig } from './helpers/process-rig.js';
import { call } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

const EMAILS = 8;
const SHUTDOWN_TIMEOUT_MS = 1_000;
/** The relay takes this long to answer each message: a drain cannot end within the timeout. */
const REPLY_DELAY_MS = 4_000;

let rig: ProcessRig;

beforeEach(async () => {
  rig = await startProcessRig({ replyDelayMs: REPLY_DELAY_MS });
});
afterEach(() => rig.close());

describe('SHUTDOWN_TIMEOUT_MS', () => {
  it('a drain that cannot finish in time is cut short at SHUTDOWN_TIMEOUT_MS (exit 1), and the next start sends what was left, nothing lost', async () => {
    const first = await startServerProcess(rig.env({ SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) }));
    const { key, from } = await rig.sendingTeam(first, 'slow-relay.test');
    const res = await call(first.url, 'POST', '/v1/emails/batch', {
      key,
      body: Array.from({ length: EMAILS }, (_, i) => ({ from, to: `r${i}@example.org`, subject: `Mail ${i}`, text: 'Hello' })),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const ids: string[] = res.body.data.map((d: { emailId: string }) => d.emailId);
    await waitFor('messages with the relay', async () => rig.sink.openSessions(), (open) => open > 0);

    const started = Date.now();
    first.child.kill('SIGTERM');
    const exit = await first.exit;
    const took = Date.now() - started;
    // Cut short, not drained: a drain that waited for the relay would have ended it with exit 0.
    expect(exit).toEqual({ code: 1, signal: null });
    expect(logLines(first.stderr()).map((line) => line.msg)).toContain('shutdown did not finish within SHUTDOWN_TIMEOUT_MS; exiting with work still claimed');
    // Not before the timeout, however early its timer fired by the clock.
    expect(took).toBeGreaterThanOrEqual(SHUTDOWN_TIMEOUT_MS - 50);

    const second = await startServerProcess(rig.env());
    await waitFor(
      `all ${EMAILS} DELIVERED`,
      async () => (await call(second.url, 'GET', '/v1/emails?status=DELIVERED&limit=1', { key })).body.count,
      (count) => count === EMAILS,
      60_000,
    );
    expect((await second.stop()).code).toBe(0);
    await rig.quiet();
    const copies = rig.copies(byEmailId);
    // The messages the relay had taken when the process went may arrive twice; none is lost.
    expect(ids.filter((id) => !copies.has(id)), 'emails never delivered').toEqual([]);
    expect(Math.max(...copies.values())).toBeLessThanOrEqual(2);
  }, 120_000);
});
