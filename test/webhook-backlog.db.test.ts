import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startWebhookSender, type WebhookSender } from '../src/webhooks/sender.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';

// ROLE=api: no sender of its own; the test starts one once the backlog is written.
let server: TestServer;
let receiver: WebhookReceiver;
let sender: WebhookSender | undefined;

beforeAll(async () => {
  server = await startTestServer({ ROLE: 'api', WEBHOOK_POLL_MS: '50' });
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await sender?.stop();
  await receiver.close();
  await server.stop();
});

const BACKLOG = 6_000;

// Without statistics (the embedded database never gathers them; PostgreSQL only once autovacuum
// comes by) a backlog written at once looks like a few rows, and the planner may check each
// claimed call against its subject's earlier calls by reading every pending call of the webhook:
// sending n calls would cost n².
it('a backlog of webhook calls written at once is planned as what it is: the sender gathers the statistics of the calls before claiming from it', async () => {
  const { teamId, apiKey } = await server.team();
  const hook = await server.call('POST', '/v1/webhooks', { key: apiKey, body: { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['email.sent'] } });
  expect(hook.status).toBe(200);
  const { db } = server.deps;
  await sql`
    INSERT INTO webhook_calls (team_id, webhook_id, id, subject_key, type, data, status, attempt, next_attempt_at, created_at, updated_at)
    SELECT ${teamId}, ${hook.body.id}, 'call_' || i, 'em_' || i, 'email.sent', ${JSON.stringify({ id: 'em', status: 'SENT', to: ['r@example.org'] })}::jsonb,
      'PENDING', 0, now(), now(), now()
    FROM generate_series(1, ${BACKLOG}) AS i`.execute(db);

  sender = startWebhookSender(server.deps);
  await receiver.waitForCount(100);
  // The planner's statistics of the calls are gathered by the sender itself once the table has
  // outgrown them: with them, the check of each claimed call probes webhook_calls_pending_subject.
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'webhook_calls'`.execute(db);
  expect(rows[0]!.n).toBeGreaterThan(0);
  await receiver.waitForCount(BACKLOG);
});
