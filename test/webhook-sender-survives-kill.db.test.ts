import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { killGroup, startServerProcess } from './helpers/processes.js';
import { startProcessRig, type ProcessRig } from './helpers/process-rig.js';
import { call } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from './helpers/webhook-receiver.js';

const EMAILS = 200;
/** email.queued, email.sent and email.delivered of each. */
const CALLS = EMAILS * 3;
const WEBHOOK_CONCURRENCY = 16;
// A dead process's claimed calls come back at the restart (the embedded database) or once its
// heartbeat is 5 s old (PostgreSQL), whatever their lease (WEBHOOK_TIMEOUT_MS + 15 s).
const WEBHOOK_TIMEOUT_MS = 2000;

let rig: ProcessRig;
let receiver: WebhookReceiver;

beforeEach(async () => {
  rig = await startProcessRig({ replyDelayMs: 3 });
  receiver = await startWebhookReceiver();
});
afterEach(async () => {
  await rig.close();
  await receiver.close();
});

const webhookEnv = {
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
  WEBHOOK_CONCURRENCY: String(WEBHOOK_CONCURRENCY),
  WEBHOOK_RETRY_BASE_MS: '100',
  WEBHOOK_POLL_MS: '50',
  WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
};

/**
 * A delivery the receiver took: answered 2xx, or never answered because the sender died with the
 * request in flight (the receiver may have acted on it). A 503 is no delivery.
 */
const accepted = (r: ReceivedRequest) => r.answeredStatus === null || (r.answeredStatus >= 200 && r.answeredStatus < 300);

/** Every call of the webhook in its log, paged through (100 a page). */
async function callLog(url: string, key: string, webhookId: string): Promise<{ id: string; status: string; type: string; payload: any }[]> {
  const calls = [];
  for (let page = 1; ; page++) {
    const res = await call(url, 'GET', `/v1/webhooks/${webhookId}/calls?limit=100&page=${page}`, { key });
    expect(res.status).toBe(200);
    calls.push(...res.body.data);
    if (res.body.data.length < 100) return calls;
  }
}

describe('webhook delivery survives a kill -9', () => {
  it(`every one of ${CALLS} calls is DELIVERED and received, none lost, only calls in flight at the kill twice`, async () => {
    // Slow and failing at first: every call's first attempt is answered 503 after 100 ms.
    receiver.answerWith((request) => ({ delayMs: 100, status: request.headers['x-usesend-retry'] === 'false' ? 503 : 200 }));
    const first = await startServerProcess(rig.env(webhookEnv));
    const { key, from } = await rig.sendingTeam(first, 'hooks-crash.test');
    const created = await call(first.url, 'POST', '/v1/webhooks', { key, body: { url: receiver.url, events: ['email.queued', 'email.sent', 'email.delivered'] } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const webhookId: string = created.body.id;

    const emailIds: string[] = [];
    for (let b = 0; b < EMAILS / 100; b++) {
      const batch = Array.from({ length: 100 }, (_, i) => ({ from, to: `r${b * 100 + i}@example.org`, subject: `Mail ${b * 100 + i}`, text: 'Hello' }));
      const res = await call(first.url, 'POST', '/v1/emails/batch', { key, body: batch });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      emailIds.push(...res.body.data.map((d: { emailId: string }) => d.emailId));
    }

    await receiver.waitFor('calls under way', (received) => received.filter(accepted).length >= 60, 30_000);
    killGroup(first.child);
    await first.exit;
    const atKill = new Set(receiver.received.filter(accepted).map((r) => r.headers['webhook-id']));
    expect(atKill.size, 'the kill came while calls were still to be made').toBeLessThan(CALLS);

    receiver.answerWith(() => ({ status: 200 }));
    const second = await startServerProcess(rig.env(webhookEnv));
    const delivered = async () => (await call(second.url, 'GET', `/v1/webhooks/${webhookId}/calls?status=DELIVERED&limit=1`, { key })).body.count;
    await waitFor(`all ${CALLS} calls DELIVERED`, delivered, (count) => count === CALLS, WEBHOOK_TIMEOUT_MS + 90_000);

    const log = await callLog(second.url, key, webhookId);
    expect((await second.stop()).code).toBe(0);
    expect(log).toHaveLength(CALLS);
    expect(log.filter((c) => c.status !== 'DELIVERED')).toEqual([]);
    // Three calls for every email, none of another.
    const perEmail = new Map<string, string[]>();
    for (const c of log) perEmail.set(c.payload.data.id, [...(perEmail.get(c.payload.data.id) ?? []), c.type]);
    expect([...perEmail.keys()].sort()).toEqual([...emailIds].sort());
    for (const types of perEmail.values()) expect(types.sort()).toEqual(['email.delivered', 'email.queued', 'email.sent']);

    // Every call reached the receiver and was taken there at least once.
    const taken = new Map<string, number>();
    for (const r of receiver.received.filter(accepted)) taken.set(r.headers['webhook-id']!, (taken.get(r.headers['webhook-id']!) ?? 0) + 1);
    expect(log.filter((c) => !taken.has(c.id)).map((c) => c.id), 'calls never received').toEqual([]);
    expect([...taken.keys()].filter((id) => !log.some((c) => c.id === id)), 'calls received that the log does not have').toEqual([]);
    // Twice only what was in flight (claimed, and not yet recorded) when the process died.
    const twice = [...taken].filter(([, n]) => n > 1);
    const extra = twice.reduce((sum, [, n]) => sum + n - 1, 0);
    console.info(`kill -9 after ${atKill.size} of ${CALLS} calls taken: ${twice.length} calls taken twice (bound ${WEBHOOK_CONCURRENCY})`);
    expect(extra).toBeLessThanOrEqual(WEBHOOK_CONCURRENCY);

    // Each email's calls were still taken in event order.
    for (const emailId of emailIds) {
      const firstTaken = (type: string) => receiver.received.findIndex((r) => accepted(r) && r.json.type === type && r.json.data.id === emailId);
      expect(firstTaken('email.queued')).toBeLessThan(firstTaken('email.sent'));
      expect(firstTaken('email.sent')).toBeLessThan(firstTaken('email.delivered'));
    }
  }, 150_000);
});
