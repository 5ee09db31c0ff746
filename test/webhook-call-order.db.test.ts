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

const claim = (token: string, fronts = new Map<string, string>()) => {
  const now = new Date();
  return claimDueCalls(server.deps.db, {
    now, leaseUntil: new Date(now.getTime() + 60_000), token, limit: 10, perWebhook: 10, inFlight: new Map(), fronts, silent: [],
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
      SELECT team_id, webhook_id, 'later-call', subject_key, 'email.sent', data, 'PENDING', 0, now(), created_at + interval '1 second', now()
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
    for (let i = 0; i < SUBJECTS; i++) await copy(`later-${i}`, `subject-${i}`, 'email.sent', "created_at + interval '1 second'", 'now()').execute(db);
    for (let i = 0; i < SUBJECTS; i++) await copy(`earlier-${i}`, `subject-${i}`, 'email.queued', 'created_at', "now() + interval '1 hour'").execute(db);

    const fronts = new Map<string, string>();
    const claimed: string[] = [];
    for (let round = 0; round < 5; round++) claimed.push(...(await claim(`w.wait${round}`, fronts)).calls.map((call) => call.id));
    expect(claimed, 'no later call passes its earlier one').toEqual([]);

    await sql`UPDATE webhook_calls SET next_attempt_at = now() WHERE id LIKE 'earlier-%'`.execute(db);
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
