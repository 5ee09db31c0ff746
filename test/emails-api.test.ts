import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { UseSend } from 'usesend-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError } from './helpers/api-error.js';
import { verifiedDomain } from './helpers/domains.js';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let teamId: number;
let key: string;
let client: UseSend;
let domain: { id: number; name: string };
let from: string;

beforeAll(async () => {
  // The capture transport (no SMTP_URL): its simulator addresses stand in for receivers.
  server = await startTestServer({ DISPATCH_POLL_MS: '20', SCHEDULE_TIMEZONE: 'Europe/Berlin' });
  ({ teamId, apiKey: key } = await server.team());
  client = new UseSend(key, server.url);
  domain = await verifiedDomain(server, key, 'api-mail.test');
  from = `Mailroom <hello@${domain.name}>`;
});
afterAll(() => server.stop());

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();
const countEmails = async () => (await server.call('GET', '/v1/emails?limit=1', { key })).body.count as number;

describe('the usesend-js emails methods', () => {
  it('send, get, batch, update and cancel work unchanged and answer in the shapes the client expects', async () => {
    const sent = await client.emails.send({ from, to: 'ada@example.org', subject: 'Hello', html: '<p>Hi <b>Ada</b></p>' });
    expect(sent.error).toBeNull();
    const emailId = sent.data!.emailId!;
    expect(emailId).toMatch(/^[a-z0-9]{24}$/);

    await waitForEmail(server, key, emailId, settled);
    const fetched = await client.emails.get(emailId);
    expect(fetched.error).toBeNull();
    expect(fetched.data).toMatchObject({
      id: emailId, teamId, from: `"Mailroom" <hello@${domain.name}>`, to: 'ada@example.org', subject: 'Hello',
      html: '<p>Hi <b>Ada</b></p>', text: 'Hi Ada', cc: null, bcc: null, replyTo: null,
      latestStatus: 'DELIVERED', scheduledAt: null,
    });
    expect(statusesOf(fetched.data as never)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    for (const event of fetched.data!.emailEvents) expect(event).toMatchObject({ emailId, createdAt: expect.stringMatching(/Z$/) });

    const firstSchedule = inAnHour();
    const batch = await client.emails.batch([
      { from, to: ['a@example.org', 'b@example.org'], subject: 'One', text: 'one' },
      { from, to: 'c@example.org', cc: 'd@example.org', subject: 'Two', text: 'two', scheduledAt: firstSchedule },
    ]);
    expect(batch.error).toBeNull();
    expect(batch.data).toHaveLength(2);
    const [first, scheduled] = batch.data!.map((d) => d.emailId);
    expect((await client.emails.get(scheduled!)).data).toMatchObject({ latestStatus: 'SCHEDULED', cc: 'd@example.org' });
    expect((await waitForEmail(server, key, first!, settled)).to).toBe('a@example.org, b@example.org');

    const later = new Date(Date.now() + 7_200_000).toISOString();
    expect(await client.emails.update(scheduled!, { scheduledAt: later })).toEqual({ data: { emailId: scheduled }, error: null });
    expect((await client.emails.get(scheduled!)).data).toMatchObject({ scheduledAt: later, latestStatus: 'SCHEDULED' });

    expect(await client.emails.cancel(scheduled!)).toEqual({ data: { emailId: scheduled }, error: null });
    const cancelled = (await client.emails.get(scheduled!)).data!;
    expect(statusesOf(cancelled as never)).toEqual(['SCHEDULED', 'SCHEDULED', 'CANCELLED']);
    // The history keeps the schedule the email was accepted with, though the email now has another.
    expect(cancelled.emailEvents.slice(0, 2).map((event) => event.data)).toEqual([{ scheduledAt: firstSchedule }, { scheduledAt: later, previousScheduledAt: firstSchedule }]);

    // An error comes back as the whole standard body, which the client recognises by its error.code.
    const conflict = (message: RegExp) => ({ data: null, error: { error: { code: 'CONFLICT', message: expect.stringMatching(message) } } });
    expect(await client.emails.cancel(scheduled!)).toEqual(conflict(/is CANCELLED; it can only be cancelled while SCHEDULED/));
    expect(await client.emails.cancel(emailId)).toEqual(conflict(/is DELIVERED/));
    expect(await client.emails.update(emailId, { scheduledAt: later })).toEqual(conflict(/is DELIVERED/));
    expect(await client.emails.get('no-such-email')).toEqual({ data: null, error: { error: { code: 'NOT_FOUND', message: 'Email not found' } } });
  });
});

describe('sending', () => {
  it('natural-language scheduledAt is read forward in SCHEDULE_TIMEZONE; a past or unreadable one is a 400 saying what was understood', async () => {
    const res = await server.call('POST', '/v1/emails', { key, body: { from, to: 'x@example.org', subject: 'Later', text: 'x', scheduledAt: 'tomorrow 9am' } });
    expect(res.status).toBe(200);
    const email = (await server.call('GET', `/v1/emails/${res.body.emailId}`, { key })).body;
    const at = new Date(email.scheduledAt);
    expect(at.getTime()).toBeGreaterThan(Date.now());
    expect(at.getTime() - Date.now()).toBeLessThan(48 * 3_600_000);
    const berlin = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit' }).format(at);
    expect(berlin).toBe('09:00');
    expect(email.emailEvents[0]).toMatchObject({ status: 'SCHEDULED', data: { scheduledAt: email.scheduledAt } });

    const past = await server.call('POST', '/v1/emails', { key, body: { from, to: 'x@example.org', subject: 'Past', text: 'x', scheduledAt: '2020-01-01T00:00:00Z' } });
    expectApiError(past, 400, 'VALIDATION_ERROR');
    expect(past.body.error.details).toEqual([{ path: 'scheduledAt', message: expect.stringContaining('understood as 2020-01-01T00:00:00.000Z, which is in the past') }]);
    const vague = await server.call('POST', '/v1/emails', { key, body: { from, to: 'x@example.org', subject: 'Vague', text: 'x', scheduledAt: 'tomorrow-ish or so' } });
    expectApiError(vague, 400, 'VALIDATION_ERROR');
    expect(vague.body.error.details[0].message).toMatch(/only "tomorrow" of "tomorrow-ish or so" reads as a time/);
  });

  it('bad input on every field is a 400 naming each, and nothing is stored', async () => {
    const before = await countEmails();
    const bad = await server.call('POST', '/v1/emails', {
      key,
      body: {
        from: 'nobody@unverified.test',
        to: ['not-an-address', ...Array.from({ length: 50 }, (_, i) => `r${i}@example.org`)],
        cc: 'also bad',
        bcc: ['x@'],
        replyTo: '@example.org',
        subject: '',
        headers: { From: 'me@evil.test', 'Content-Type': 'text/plain', 'List-Unsubscribe': '<x>', 'X-Fine': 'ok' },
        attachments: [{ filename: 'a/b.txt', content: 'not base64!' }],
        scheduledAt: 'whenever',
      },
    });
    expectApiError(bad, 400, 'VALIDATION_ERROR');
    const paths = bad.body.error.details.map((d: { path: string }) => d.path);
    // Shapes first: these are refused before any rule is looked at.
    for (const field of ['to', 'subject', 'attachments[0].filename', 'attachments[0].content']) expect(paths).toContain(field);

    const shapeOk = { from, to: 'x@example.org', subject: 'S', text: 'x' };
    const ruleErrors = await server.call('POST', '/v1/emails', {
      key,
      body: {
        ...shapeOk, from: 'nobody@unverified.test', to: 'not-an-address', cc: 'also bad', bcc: ['x@'], replyTo: '@example.org',
        headers: { From: 'x', 'Content-Type': 'y', 'list-unsubscribe-post': 'z', 'X-Ok': 'ok' }, scheduledAt: 'whenever',
      },
    });
    expectApiError(ruleErrors, 400, 'VALIDATION_ERROR');
    expect(ruleErrors.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual(['bcc', 'cc', 'from', 'headers', 'replyTo', 'scheduledAt', 'to']);
    expect(ruleErrors.body.error.details.find((d: { path: string }) => d.path === 'headers').message).toMatch(/From, Content-Type, list-unsubscribe-post/);

    const noBody = await server.call('POST', '/v1/emails', { key, body: { from, to: 'x@example.org', subject: 'S' } });
    expect(noBody.body.error.details.map((d: { path: string }) => d.path)).toEqual(['html']);
    const tooMany = await server.call('POST', '/v1/emails', {
      key, body: { ...shapeOk, attachments: Array.from({ length: 11 }, (_, i) => ({ filename: `${i}.txt`, content: 'aGk=' })) },
    });
    expect(tooMany.body.error.details).toEqual([{ path: 'attachments', message: 'must be at most 10 items' }]);

    const batch = await server.call('POST', '/v1/emails/batch', { key, body: [shapeOk, { ...shapeOk, to: 'broken' }, shapeOk] });
    expectApiError(batch, 400, 'VALIDATION_ERROR');
    expect(batch.body.error.details).toEqual([{ path: '[1].to', message: '"broken" is not a valid email address' }]);
    const oversized = await server.call('POST', '/v1/emails/batch', { key, body: Array.from({ length: 101 }, () => shapeOk) });
    expectApiError(oversized, 400, 'VALIDATION_ERROR');
    expectApiError(await server.call('POST', '/v1/emails/batch', { key, body: [] }), 400, 'VALIDATION_ERROR');
    expect(await countEmails()).toBe(before);
  });

  it('the same Idempotency-Key and body within 24 h answer the first result and send nothing again; another body is a 409', async () => {
    const body = { from, to: 'once@example.org', subject: 'Once', text: 'only once' };
    const headers = { 'Idempotency-Key': `order-${Date.now()}` };
    const before = await countEmails();
    const answers = await Promise.all([1, 2, 3].map(() => server.call('POST', '/v1/emails', { key, body, headers })));
    for (const res of answers) expect(res.status).toBe(200);
    expect(new Set(answers.map((res) => res.body.emailId)).size).toBe(1);
    expect(await countEmails()).toBe(before + 1);

    const other = await server.call('POST', '/v1/emails', { key, body: { ...body, subject: 'Different' }, headers });
    expectApiError(other, 409, 'CONFLICT');
    const asBatch = await server.call('POST', '/v1/emails/batch', { key, body: [body], headers });
    expectApiError(asBatch, 409, 'CONFLICT');

    const batchHeaders = { 'Idempotency-Key': `batch-${Date.now()}` };
    const firstBatch = await client.emails.batch([body, body], { idempotencyKey: batchHeaders['Idempotency-Key'] });
    const secondBatch = await client.emails.batch([body, body], { idempotencyKey: batchHeaders['Idempotency-Key'] });
    expect(secondBatch).toEqual(firstBatch);
    expect(await countEmails()).toBe(before + 3);

    // Keys are the team's own: another team's same key is a different request.
    const other_team = await server.team();
    const theirs = await server.call('POST', '/v1/emails', { key: other_team.apiKey, body, headers });
    expect(theirs.status).toBe(400);
    expectApiError(await server.call('POST', '/v1/emails', { key, body, headers: { 'Idempotency-Key': 'x'.repeat(257) } }), 400, 'VALIDATION_ERROR');
  });

  it('an Idempotency-Key expires after 24 hours: the same request then sends again, and the key answers the new send', async () => {
    const body = { from, to: 'daily@example.org', subject: 'Daily', text: 'once a day' };
    const idempotencyKey = `daily-${Date.now()}`;
    const post = async (sent = body) => {
      const res = await server.call('POST', '/v1/emails', { key, body: sent, headers: { 'Idempotency-Key': idempotencyKey } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.emailId as string;
    };
    // The key's age is its row's: moving its timestamp back stands in for the hours passing.
    const age = (ms: number) =>
      sql`UPDATE idempotency_keys SET created_at = created_at - ${ms} * interval '1 millisecond'
        WHERE team_id = ${teamId} AND key = ${idempotencyKey}`.execute(server.deps.db);
    const DAY_MS = 24 * 3_600_000;

    const before = await countEmails();
    const first = await post();
    await age(DAY_MS - 60_000);
    expect(await post(), 'a minute before the key expires').toBe(first);
    expect(await countEmails()).toBe(before + 1);

    await age(60_001);
    const second = await post();
    expect(second, 'once the key has expired').not.toBe(first);
    expect(await countEmails()).toBe(before + 2);
    expect(await post(), 'the key now holds the second send').toBe(second);
    for (const id of [first, second]) expect(await waitForEmail(server, key, id, settled)).toMatchObject({ latestStatus: 'DELIVERED', to: 'daily@example.org' });

    // Expired, the key is free for another request too: no conflict with what it held.
    await age(DAY_MS + 1);
    const other = await post({ ...body, subject: 'Another day' });
    expect([first, second]).not.toContain(other);
    expect(await countEmails()).toBe(before + 3);
  });

  it('the capture transport writes each message to DATA_DIR/outbox; simulator addresses bounce, complain and delay', async () => {
    const send = async (to: string) => (await server.call('POST', '/v1/emails', { key, body: { from, to, subject: 'Sim', text: 'x' } })).body.emailId;
    const [bounce, complaint, delayed] = await Promise.all(['bounce@simulator.test', 'complaint@simulator.test', 'delayed@simulator.test'].map(send));
    expect(statusesOf(await waitForEmail(server, key, bounce, settled))).toEqual(['QUEUED', 'SENT', 'BOUNCED']);
    expect(statusesOf(await waitForEmail(server, key, complaint, settled))).toEqual(['QUEUED', 'SENT', 'DELIVERED', 'COMPLAINED']);
    expect(statusesOf(await waitForEmail(server, key, delayed, (e) => e.emailEvents.length === 3))).toEqual(['QUEUED', 'SENT', 'DELIVERY_DELAYED']);
    const outbox = await readdir(path.join(server.deps.config.dataDir, 'outbox'));
    for (const id of [bounce, complaint, delayed]) expect(outbox).toContain(`${id}.eml`);

    const { body } = await server.call('GET', '/v1/suppressions', { key });
    expect(body.data.map((s: { email: string; reason: string }) => [s.email, s.reason])).toEqual(
      expect.arrayContaining([['bounce@simulator.test', 'HARD_BOUNCE'], ['complaint@simulator.test', 'COMPLAINT']]),
    );
    const suppressed = await send('Bounce@Simulator.test');
    expect(statusesOf(await waitForEmail(server, key, suppressed, settled))).toEqual(['QUEUED', 'SUPPRESSED']);
    expect(await readdir(path.join(server.deps.config.dataDir, 'outbox'))).not.toContain(`${suppressed}.eml`);
  });

  it('deleting a domain keeps its mail with no domain; mail not yet sent then fails rather than going out unsigned', async () => {
    const doomed = await verifiedDomain(server, key, 'doomed-mail.test');
    const send = async (body: Record<string, unknown>) =>
      (await server.call('POST', '/v1/emails', { key, body: { from: `x@${doomed.name}`, to: 'd@example.org', subject: 'D', text: 'x', ...body } })).body.emailId;
    const delivered = await send({});
    await waitForEmail(server, key, delivered, settled);
    const later = await send({ scheduledAt: inAnHour() });
    expect((await server.call('DELETE', `/v1/domains/${doomed.id}`, { key })).status).toBe(200);

    const kept = (await server.call('GET', `/v1/emails/${delivered}`, { key })).body;
    expect(kept).toMatchObject({ domainId: null, latestStatus: 'DELIVERED' });
    expect(statusesOf(kept)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    expect((await server.call('GET', `/v1/emails/${later}`, { key })).body).toMatchObject({ domainId: null, latestStatus: 'SCHEDULED' });
    await server.call('PATCH', `/v1/emails/${later}`, { key, body: { scheduledAt: new Date().toISOString() } });
    expect(await waitForEmail(server, key, later, settled)).toMatchObject({ latestStatus: 'FAILED' });
    expect(await readdir(path.join(server.deps.config.dataDir, 'outbox'))).not.toContain(`${later}.eml`);
  });
});

describe('listing and scope', () => {
  it('GET /v1/emails pages newest first and filters by domain, status and date', async () => {
    const other = await verifiedDomain(server, key, 'api-other.test');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await server.call('POST', '/v1/emails', { key, body: { from: `x@${other.name}`, to: 'l@example.org', subject: `L${i}`, text: 'x', scheduledAt: inAnHour() } })).body.emailId);
    }
    const page1 = await server.call('GET', `/v1/emails?domainId=${other.id}&limit=2`, { key });
    expect(page1.body).toMatchObject({ count: 3, data: [{ id: ids[2], domainId: other.id, latestStatus: 'SCHEDULED' }, { id: ids[1] }] });
    const page2 = await server.call('GET', `/v1/emails?domainId=${other.id}&limit=2&page=2`, { key });
    expect(page2.body.data.map((e: { id: string }) => e.id)).toEqual([ids[0]]);
    const scheduled = await server.call('GET', `/v1/emails?status=SCHEDULED&startDate=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}`, { key });
    expect(scheduled.body.data.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining(ids));
    const future = await server.call('GET', `/v1/emails?startDate=2999-01-01`, { key });
    expect(future.body).toEqual({ data: [], count: 0 });
  });

  it('a key scoped to a domain sends from, reads and lists only that domain; sending-only keys may use every email endpoint', async () => {
    const other = await verifiedDomain(server, key, 'api-scoped-other.test');
    const scoped = await server.key(teamId, 'sending', domain.id);
    const own = await server.call('POST', '/v1/emails', { key: scoped, body: { from, to: 's@example.org', subject: 'S', text: 'x', scheduledAt: inAnHour() } });
    expect(own.status).toBe(200);
    expectApiError(await server.call('POST', '/v1/emails', { key: scoped, body: { from: `x@${other.name}`, to: 's@example.org', subject: 'S', text: 'x' } }), 403, 'FORBIDDEN');
    const foreign = await server.call('POST', '/v1/emails', { key, body: { from: `x@${other.name}`, to: 's@example.org', subject: 'S', text: 'x', scheduledAt: inAnHour() } });
    expectApiError(await server.call('GET', `/v1/emails/${foreign.body.emailId}`, { key: scoped }), 403, 'FORBIDDEN');
    expectApiError(await server.call('POST', `/v1/emails/${foreign.body.emailId}/cancel`, { key: scoped }), 403, 'FORBIDDEN');
    expectApiError(await server.call('GET', `/v1/emails?domainId=${other.id}`, { key: scoped }), 403, 'FORBIDDEN');
    const listed = await server.call('GET', '/v1/emails?limit=100', { key: scoped });
    expect(listed.body.data.every((e: { domainId: number }) => e.domainId === domain.id)).toBe(true);
    expect((await server.call('POST', `/v1/emails/${own.body.emailId}/cancel`, { key: scoped })).status).toBe(200);
    expectApiError(await server.call('GET', '/v1/suppressions', { key: scoped }), 403, 'FORBIDDEN');
  });
});
