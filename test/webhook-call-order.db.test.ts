import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDueCalls } from '../src/data/webhook-delivery.js';
import { verifiedDomain } from './helpers/domains.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;

beforeAll(async () => {
  // No webhook sender of its own: only this test claims.
  server = await startTestServer({ ROLE: 'api' });
});
afterAll(() => server.stop());

// Due for a claim made right after: the database's now() has microseconds, the claim's Date only
// milliseconds, so a call due at now() can still be a moment ahead of a claim that follows it.
const DUE = "now() - interval '1 second'";

const claim = (token: string, fronts = new Map<string, string>(), room: { limit?: number; perClaim?: number; inFlight?: Map<string, number> } = {}) => {
  const now = new Date();
  return claimDueCalls(server.deps.db, {
    now, leaseUntil: new Date(now.getTime() + 60_000), token, limit: room.limit ?? 10, perWebhook: 10, perClaim: room.perClaim ?? 10,
    inFlight: room.inFlight ?? new Map(), fronts, silent: [],
  });
};

/** Sends one email of a new team with a webhook, and answers the email's email.queued call. */
async function oneQueuedCall(domainName: string) {
  const { apiKey } = await server.team();
  const domain = await verifiedDomain(server, apiKey, domainName);
  expect((await server.call('POST', '/v1/webhooks', { key: apiKey, body: { url: 'http://127.0.0.1:9/hook', events: ['email.queued', 'email.sent'] } })).status).toBe(200);
  const sent = await server.call('POST', '/v1/emails', { key: apiKey, body: { from: `a@${domain.name}`, to: 'r@example.org', subject: 'Hi', text: 'Hi' } });
  expect(sent.status).toBe(200);
  return { queued: await server.deps.db.selectFrom('webhook_calls').selectAll().where('subject_key', '=', sent.body.emailId).executeTakeFirstOrThrow() };
}

describe("one email's webhook calls", () => {
  it('a later call of an email never passes an earlier one still pending, even when the queue puts it ahead', async () => {
    const { queued } = await oneQueuedCall('order.test');
    const { db } = server.deps;
    // What a retry's move to the back can leave behind when the email's next call is written at
    // that moment: the earlier call (waiting for its retry) queued after the later one.
    await sql`
      INSERT INTO webhook_calls (team_id, webhook_id, id, subject_key, type, data, status, attempt, next_attempt_at, created_at, updated_at)
      SELECT team_id, webhook_id, 'later-call', subject_key, 'email.sent', data, 'PENDING', 0, ${sql.raw(DUE)}, created_at + interval '1 second', now()
      FROM webhook_calls WHERE id = ${queued.id}`.execute(db);
    await sql`
      UPDATE webhook_calls SET seq = nextval(pg_get_serial_sequence('webhook_calls', 'seq')), next_attempt_at = now() + interval '1 hour'
      WHERE id = ${queued.id}`.execute(db);

    expect((await claim('w.1')).calls, 'the later call waits for the earlier one').toEqual([]);
    await sql`UPDATE webhook_calls SET status = 'DELIVERED' WHERE id = ${queued.id}`.execute(db);
    expect((await claim('w.2')).calls.map((call) => call.id)).toEqual(['later-call']);
  });

  it('later calls queued ahead of the earlier calls they wait for never hide those: once due, every earlier call is claimed', async () => {
    const { queued } = await oneQueuedCall('order-window.test');
    const { db } = server.deps;
    const SUBJECTS = 300;
    // More later calls at the front than a claim looks at (256 a webhook), each of a subject whose
    // earlier call waits for its retry behind all of them.
    const copy = (id: string, subject: string, type: string, createdAt: string, dueAt: string) => sql`
      INSERT INTO webhook_calls (team_id, webhook_id, id, subject_key, type, data, status, attempt, next_attempt_at, created_at, updated_at)
      SELECT team_id, webhook_id, ${id}, ${subject}, ${type}, data, 'PENDING', 1, ${sql.raw(dueAt)}, ${sql.raw(createdAt)}, now()
      FROM webhook_calls WHERE id = ${queued.id}`;
    await sql`UPDATE webhook_calls SET status = 'DELIVERED' WHERE id = ${queued.id}`.execute(db);
    for (let i = 0; i < SUBJECTS; i++) await copy(`later-${i}`, `subject-${i}`, 'email.sent', "created_at + interval '1 second'", DUE).execute(db);
    for (let i = 0; i < SUBJECTS; i++) await copy(`earlier-${i}`, `subject-${i}`, 'email.queued', 'created_at', "now() + interval '1 hour'").execute(db);

    const fronts = new Map<string, string>();
    const claimed: string[] = [];
    for (let round = 0; round < 5; round++) claimed.push(...(await claim(`w.wait${round}`, fronts)).calls.map((call) => call.id));
    expect(claimed, 'no later call passes its earlier one').toEqual([]);

    await sql`UPDATE webhook_calls SET next_attempt_at = ${sql.raw(DUE)} WHERE id LIKE 'earlier-%'`.execute(db);
    for (let round = 0; round < 2 * SUBJECTS / 10 && claimed.length < SUBJECTS; round++) {
      const ids = (await claim(`w.due${round}`, fronts)).calls.map((call) => call.id);
      claimed.push(...ids);
      // As the sender records them: what it took is done and leaves the queue.
      if (ids.length > 0) await db.updateTable('webhook_calls').set({ status: 'DELIVERED' }).where('id', 'in', ids).execute();
    }
    expect(claimed.filter((id) => id.startsWith('later-')), 'no later call passes its earlier one').toEqual([]);
    expect(claimed.sort()).toEqual(Array.from({ length: SUBJECTS }, (_, i) => `earlier-${i}`).sort());
  });
});

describe("a webhook's share of the sending", () => {
  it('a claim takes no more of a webhook\'s calls than its share per claim, nor than its slots left, and says more are due', async () => {
    const { queued } = await oneQueuedCall('share.test');
    const { db } = server.deps;
    await sql`
      INSERT INTO webhook_calls (team_id, webhook_id, id, subject_key, type, data, status, attempt, next_attempt_at, created_at, updated_at)
      SELECT team_id, webhook_id, 'share-' || n, 'share-subject-' || n, type, data, 'PENDING', 0, ${sql.raw(DUE)}, created_at, now()
      FROM webhook_calls, generate_series(1, 9) AS n WHERE id = ${queued.id}`.execute(db);
    const key = `${queued.team_id}:${queued.webhook_id}`;
    // Other tests' webhooks may have calls due too: only this one's count.
    const ours = async (token: string, room: { perClaim?: number; inFlight?: Map<string, number> } = {}) => {
      const claimed = await claim(token, new Map(), { limit: 1000, ...room });
      return { calls: claimed.calls.filter((call) => call.webhook_id === queued.webhook_id), more: claimed.more };
    };

    const first = await ours('w.share1', { perClaim: 3 });
    expect(first.calls).toHaveLength(3);
    expect(first.more).toBe(true);
    // 8 of its 10 slots taken: 2 left, though a claim may take 3.
    const second = await ours('w.share2', { perClaim: 3, inFlight: new Map([[key, 8]]) });
    expect(second.calls).toHaveLength(2);
    expect(second.more).toBe(true);
    const rest = await ours('w.share3');
    expect(rest.calls).toHaveLength(5);
    expect(new Set([...first.calls, ...second.calls, ...rest.calls].map((call) => call.id)).size).toBe(10);
  });
});
