import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { openDatabase, type DatabaseHandle, type Db } from '../src/db/connection.js';
import { insertCall } from '../src/data/webhook-calls.js';
import { audit } from '../src/events/audit.js';
import { createLogger } from '../src/log.js';
import { runRetention, startRetention } from '../src/retention/worker.js';
import { createTeam } from '../src/services/teams.js';
import { createTestDatabase, usingPostgres, type TestDatabase } from './helpers/database.js';
import { verifiedDomain } from './helpers/domains.js';
import { statusesOf, waitForEmail } from './helpers/emails.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { sleep, waitFor } from './helpers/wait.js';

const DAY_MS = 86_400_000;
const RETENTION_DAYS = 30;
const PAST_RETENTION = (RETENTION_DAYS + 1) * DAY_MS;

/** Moves rows' timestamps back: it stands in for the days passing. */
const age = (db: Db, table: 'emails' | 'webhook_calls' | 'idempotency_keys', column: 'created_at' | 'scheduled_at', where: ReturnType<typeof sql>, ms: number) =>
  sql`UPDATE ${sql.table(table)} SET ${sql.ref(column)} = ${sql.ref(column)} - ${ms} * interval '1 millisecond' WHERE ${where}`.execute(db);

describe('retention through the running service', () => {
  let sink: SmtpSink;
  let server: TestServer;
  let teamId: number;
  let key: string;
  let from: string;

  beforeAll(async () => {
    // The relay puts off mail to one address; its retry is an hour away, within a window of 40 days.
    sink = await startSmtpSink({ closeTimeout: 50 });
    sink.rule = { rcpt: (address) => (address === 'busy@example.org' ? { code: 451, message: '4.3.0 try again later' } : null) };
    server = await startTestServer({ RETENTION_DAYS: String(RETENTION_DAYS), SMTP_URL: sink.url, DISPATCH_POLL_MS: '20', SEND_RETRY_BASE_MS: '3600000', SEND_RETRY_WINDOW_HOURS: String(40 * 24) });
    ({ teamId, apiKey: key } = await server.team());
    from = `Mailroom <hello@${(await verifiedDomain(server, key, 'retention.test')).name}>`;
  });
  afterAll(async () => {
    await server.stop();
    await sink.close();
  });

  const send = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const res = await server.call('POST', '/v1/emails', { key, body: { from, subject: 'Your receipt', html: '<p>Thanks!</p>', ...body }, headers });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.emailId as string;
  };
  const getEmail = async (id: string) => {
    const res = await server.call('GET', `/v1/emails/${id}`, { key });
    expect(res.status).toBe(200);
    return res.body;
  };
  const ageEmails = (ids: string[], ms: number) => age(server.deps.db, 'emails', 'created_at', sql`id = ANY(${ids})`, ms);

  it('an email sent more than RETENTION_DAYS ago loses its html, text and attachments and nothing else: the API shows it with every field and event', async () => {
    const attachment = { filename: 'receipt.txt', content: Buffer.from('total: 42').toString('base64') };
    const old = await send({ to: 'ada@example.org', text: 'Thanks, Ada', attachments: [attachment] });
    const recent = await send({ to: 'grace@example.org' });
    const cancelled = await send({ to: 'alan@example.org', scheduledAt: new Date(Date.now() + 3_600_000).toISOString() });
    expect((await server.call('POST', `/v1/emails/${cancelled}/cancel`, { key })).status).toBe(200);
    for (const id of [old, recent]) await waitForEmail(server, key, id, (email) => email.latestStatus === 'DELIVERED');
    await ageEmails([old, cancelled], PAST_RETENTION);
    await age(server.deps.db, 'emails', 'scheduled_at', sql`id = ${cancelled}`, PAST_RETENTION);
    const metrics = async () => (await server.call('GET', '/v1/analytics/reputation-metrics', { key })).body;
    const counted = async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM email_counts WHERE team_id = ${teamId}`.execute(server.deps.db)).rows[0]!.n;
    const before = { metrics: await metrics(), counted: await counted(), emails: new Map([[old, await getEmail(old)], [cancelled, await getEmail(cancelled)]]) };
    expect(before.emails.get(old)).toMatchObject({ html: '<p>Thanks!</p>', text: 'Thanks, Ada' });

    const run = await runRetention(server.deps);
    expect(run).toMatchObject({ emailBodies: 2 });

    for (const id of [old, cancelled]) {
      const email = await getEmail(id);
      expect(email).toEqual({ ...before.emails.get(id), html: null, text: null });
      const row = await server.deps.db.selectFrom('emails').select(['attachments', 'body_dropped_at', 'subject']).where('id', '=', id).executeTakeFirstOrThrow();
      expect(row).toMatchObject({ attachments: [], subject: 'Your receipt', body_dropped_at: expect.any(Date) });
    }
    expect(statusesOf(await getEmail(old))).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    expect(statusesOf(await getEmail(cancelled))).toEqual(['SCHEDULED', 'CANCELLED']);
    expect(await getEmail(recent)).toMatchObject({ html: '<p>Thanks!</p>', text: 'Thanks!', latestStatus: 'DELIVERED' });
    expect(await metrics()).toEqual(before.metrics);
    expect(await counted()).toBe(before.counted);

    expect(await runRetention(server.deps), 'a second run finds nothing more').toMatchObject({ emailBodies: 0 });
  });

  it('mail with something left to send keeps its body whatever its age: waiting for a retry, or scheduled', async () => {
    const delayed = await send({ to: 'busy@example.org', text: 'Still on its way' });
    await waitForEmail(server, key, delayed, (email) => email.latestStatus === 'DELIVERY_DELAYED');
    // Created long ago, due in an hour: its time counts from when it is due.
    const scheduled = await send({ to: 'later@example.org', text: 'Later', scheduledAt: new Date(Date.now() + 3_600_000).toISOString() });
    await ageEmails([delayed, scheduled], PAST_RETENTION);

    await runRetention(server.deps);

    expect(await getEmail(delayed)).toMatchObject({ html: '<p>Thanks!</p>', text: 'Still on its way', latestStatus: 'DELIVERY_DELAYED' });
    expect(await getEmail(scheduled)).toMatchObject({ html: '<p>Thanks!</p>', text: 'Later', latestStatus: 'SCHEDULED' });
  });

  it('webhook calls done with for more than RETENTION_DAYS leave the call log; pending and recent ones stay', async () => {
    const created = await server.call('POST', '/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/hook', events: ['webhook.test'] } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const webhookId = created.body.id as string;
    // Paused, its pending call waits rather than going out.
    expect((await server.call('PATCH', `/v1/webhooks/${webhookId}`, { key, body: { status: 'PAUSED' } })).status).toBe(200);
    const call = async (status: 'PENDING' | 'DELIVERED' | 'FAILED' | 'DISCARDED', ms: number) => {
      const { id } = await insertCall(server.deps.db, { teamId, webhookId, type: 'webhook.test', subjectKey: null, data: {} }, new Date());
      await server.deps.db.updateTable('webhook_calls').set({ status }).where('id', '=', id).execute();
      await age(server.deps.db, 'webhook_calls', 'created_at', sql`id = ${id}`, ms);
      return id;
    };
    const stays = [await call('PENDING', PAST_RETENTION), await call('DELIVERED', DAY_MS), await call('FAILED', (RETENTION_DAYS - 1) * DAY_MS)];
    for (const status of ['DELIVERED', 'FAILED', 'DISCARDED'] as const) await call(status, PAST_RETENTION);

    expect(await runRetention(server.deps)).toMatchObject({ webhookCalls: 3 });

    const log = await server.call('GET', `/v1/webhooks/${webhookId}/calls`, { key });
    expect(log.status).toBe(200);
    expect(log.body.data.map((c: { id: string }) => c.id).sort()).toEqual([...stays].sort());
  });

  it('idempotency keys go once their 24 hours are over; live ones stay and still answer', async () => {
    const body = { to: 'once@example.org' };
    const expired = `expired-${Date.now()}`;
    const live = `live-${Date.now()}`;
    await send(body, { 'Idempotency-Key': expired });
    const first = await send(body, { 'Idempotency-Key': live });
    await age(server.deps.db, 'idempotency_keys', 'created_at', sql`team_id = ${teamId} AND key = ${expired}`, DAY_MS + 1000);

    expect(await runRetention(server.deps)).toMatchObject({ idempotencyKeys: 1 });

    const keys = await server.deps.db.selectFrom('idempotency_keys').select('key').where('team_id', '=', teamId).execute();
    expect(keys.map((row) => row.key)).toEqual([live]);
    expect(await send(body, { 'Idempotency-Key': live })).toBe(first);
  });
});

describe('the retention job', () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let deps: Parameters<typeof startRetention>[0];
  let teamId: number;

  beforeAll(async () => {
    database = await createTestDatabase();
    handle = await openDatabase(database.source);
    deps = { db: handle.db, dbKind: handle.kind, config: loadConfig({ RETENTION_DAYS: String(RETENTION_DAYS) }), log: createLogger('silent') };
    ({ teamId } = await createTeam(deps, { name: 'Retention' }));
  });
  afterAll(async () => {
    await handle.close();
    await database.drop();
  });

  const expiredKeys = (count: number) =>
    sql`INSERT INTO idempotency_keys (team_id, key, request_hash, response, created_at)
      SELECT ${teamId}, 'key-' || g || '-' || ${Math.random()}, 'hash', '{}'::jsonb, now() - interval '2 days' FROM generate_series(1, ${count}) g`.execute(handle.db);
  /** Changes recorded `days` ago, by the CLI (a person's or a key's are kept alike). */
  const auditRows = async (count: number, days: number) => {
    const at = new Date(Date.now() - days * DAY_MS);
    const changes = Array.from({ length: count }, (_, i) => ({ action: 'domain.created' as const, targetType: 'domain' as const, targetId: `${days}-${i}` }));
    await audit(handle.db, { teamId, actor: { type: 'cli', id: 'cli', label: 'CLI', ip: null } }, changes, at);
  };
  const auditLeft = async () => (await handle.db.selectFrom('audit_log').select('target_id').where('team_id', '=', teamId).orderBy('target_id').execute()).map((row) => row.target_id);

  const keysLeft = async () => Number((await handle.db.selectFrom('idempotency_keys').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

  it('works in batches: each statement removes at most the batch size, until one comes back short', async () => {
    await sql`INSERT INTO emails (team_id, id, from_address, to_addresses, subject, html, text, message_id, status, created_at)
      SELECT ${teamId}, 'email-' || g, 'a@retention.test', '["b@example.org"]', 'Old', '<p>old</p>', 'old', '<' || g || '@retention.test>', 'DELIVERED', now() - interval '40 days'
      FROM generate_series(1, 20) g`.execute(handle.db);
    await sql`INSERT INTO webhook_calls (team_id, webhook_id, id, type, data, status, next_attempt_at, created_at, updated_at)
      SELECT ${teamId}, 'hook', 'call-' || g, 'webhook.test', '{}', 'DELIVERED', now(), now() - interval '40 days', now() FROM generate_series(1, 15) g`.execute(handle.db);
    await expiredKeys(10);
    await sql`INSERT INTO users (id, team_id, email, role) VALUES ('usr_retention', ${teamId}, 'retention@example.test', 'owner')`.execute(handle.db);
    await sql`INSERT INTO sessions (token_hash, user_id, expires_at)
      SELECT 'expired-' || g, 'usr_retention', now() - interval '1 minute' FROM generate_series(1, 8) g
      UNION ALL SELECT 'live', 'usr_retention', now() + interval '1 day'`.execute(handle.db);

    await sql`INSERT INTO inbound_emails (team_id, id, mail_from, rcpt_to, subject, text, html, authentication, size, received_at)
      SELECT ${teamId}::integer, 'in-' || g, 'a@example.org', '["support@retention.test"]'::jsonb, 'Old', 'old', '<p>old</p>', '{}'::jsonb, 6, now() - interval '40 days'
      FROM generate_series(1, 9) g
      UNION ALL SELECT ${teamId}::integer, 'in-new', 'a@example.org', '["support@retention.test"]'::jsonb, 'New', 'new', null, '{}'::jsonb, 6, now()`.execute(handle.db);
    await sql`INSERT INTO inbound_email_parts (team_id, email_id, seq, bytes)
      SELECT ${teamId}::integer, id, part, 'raw'::bytea FROM inbound_emails, generate_series(0, 1) part WHERE team_id = ${teamId}`.execute(handle.db);

    await auditRows(11, 400);

    // 20 bodies: 7 + 7 + 6; 9 received: 7 + 2; 15 calls: 7 + 7 + 1; 10 keys: 7 + 3; 8 expired sessions: 7 + 1; 11 audit rows: 7 + 4.
    expect(await runRetention(deps, { batchSize: 7 })).toEqual({ emailBodies: 20, inboundMail: 9, webhookCalls: 15, idempotencyKeys: 10, sessions: 8, auditRows: 11, batches: 14 });
    expect(await runRetention(deps, { batchSize: 7 })).toEqual({ emailBodies: 0, inboundMail: 0, webhookCalls: 0, idempotencyKeys: 0, sessions: 0, auditRows: 0, batches: 6 });
    const received = await handle.db.selectFrom('inbound_emails').select(['id', 'subject']).where('body_dropped_at', 'is', null).where('text', 'is not', null).execute();
    expect(received, 'mail received within RETENTION_DAYS keeps its content; older mail keeps its fields').toEqual([{ id: 'in-new', subject: 'New' }]);
    const rawLeft = await handle.db.selectFrom('inbound_email_parts').select(['email_id', 'seq']).where('team_id', '=', teamId).orderBy('seq').execute();
    expect(rawLeft, 'every part of an old raw message goes with it').toEqual([{ email_id: 'in-new', seq: 0 }, { email_id: 'in-new', seq: 1 }]);
    expect(await handle.db.selectFrom('inbound_emails').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).toEqual({ n: 10 });
    const sessionsLeft = await handle.db.selectFrom('sessions').select('token_hash').execute();
    expect(sessionsLeft, 'a live session is kept').toEqual([{ token_hash: 'live' }]);
  });

  it('audit rows older than AUDIT_RETENTION_DAYS (365 by default, whatever RETENTION_DAYS says) go; newer ones stay', async () => {
    await auditRows(2, 366);
    await auditRows(1, 364);
    await auditRows(1, RETENTION_DAYS + 10);
    expect(await runRetention(deps)).toMatchObject({ auditRows: 2 });
    expect(await auditLeft()).toEqual(['364-0', '40-0']);

    const shorter = { ...deps, config: loadConfig({ RETENTION_DAYS: String(RETENTION_DAYS), AUDIT_RETENTION_DAYS: '30' }) };
    expect(await runRetention(shorter)).toMatchObject({ auditRows: 2 });
    expect(await auditLeft()).toEqual([]);
  });

  it('stop() during a run returns promptly, leaving the rest for the next run', async () => {
    await expiredKeys(20_000);
    const worker = startRetention(deps, { batchSize: 5 });
    await waitFor('the run under way', keysLeft, (n) => n < 20_000);

    await worker.stop();
    // Promptly: stop() came back with the run unfinished, not after it.
    const left = await keysLeft();
    expect(left).toBeGreaterThan(0);
    await sleep(200);
    expect(await keysLeft(), 'nothing goes on after stop()').toBe(left);

    expect(await runRetention(deps)).toMatchObject({ idempotencyKeys: left });
  });

  it.runIf(usingPostgres())('on PostgreSQL one process at a time runs it: another finds it under way and skips that round', async () => {
    await expiredKeys(5000);
    const other = await openDatabase(database.source);
    try {
      const running = runRetention(deps, { batchSize: 5 });
      await waitFor('the run under way', keysLeft, (n) => n < 5000);
      expect(await runRetention({ ...deps, db: other.db })).toBeUndefined();
      expect(await running).toMatchObject({ idempotencyKeys: 5000 });
      expect(await runRetention({ ...deps, db: other.db }), 'free again once the run is over').toMatchObject({ idempotencyKeys: 0 });
    } finally {
      await other.close();
    }
  });
});
