import { sql } from 'kysely';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { verifiedDomain } from './helpers/domains.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';

let server: TestServer;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  server = await startTestServer({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_POLL_MS: '50', DISPATCH_POLL_MS: '50' });
});
afterAll(async () => {
  await server.stop();
  await receiver.close();
});

describe('a webhook call committed after later ones', () => {
  it('is delivered within seconds, though the sender already read the queue past its place', async () => {
    const { apiKey } = await server.team();
    const ok = (method: string, path: string, body?: unknown) => expectOk(server, apiKey, method, path, body);
    const domain = await verifiedDomain(server, apiKey, 'late.test');
    await ok('POST', '/v1/webhooks', { url: receiver.url, events: ['email.queued'] });
    const { db } = server.deps;
    const send = async (subject: string) => {
      const { emailId } = await ok('POST', '/v1/emails', { from: `a@${domain.name}`, to: 'r@example.org', subject, text: 'Hi' });
      await receiver.waitFor(`the call of ${subject}`, (all) => all.some((r) => r.json?.data?.id === emailId));
      return emailId as string;
    };
    await send('First');
    // A transaction that writes a call takes its seq at once and may commit after others did.
    const { rows } = await sql<{ seq: string }>`SELECT nextval(pg_get_serial_sequence('webhook_calls', 'seq'))::text AS seq`.execute(db);
    const later = await send('Later');
    // The sender claimed the later call: the queue's front it found is past the reserved seq.
    await sql`
      INSERT INTO webhook_calls (team_id, webhook_id, id, seq, subject_key, type, data, status, attempt, next_attempt_at, created_at, updated_at)
      SELECT team_id, webhook_id, 'late-call', ${rows[0]!.seq}::bigint, 'late-subject', type, data, 'PENDING', 0, now(), now(), now()
      FROM webhook_calls WHERE subject_key = ${later}`.execute(db);
    // Without a bound on how long a front hides what is behind it, the call would wait a minute.
    await receiver.waitFor('the late call', (all) => all.some((r) => r.headers['webhook-id'] === 'late-call'), 20_000);
  });
});
