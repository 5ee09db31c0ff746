import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hoursEnv, verifiedDomain } from './helpers/domains.js';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';

const RETRY_WINDOW_MS = 3000;

let sink: SmtpSink;
let server: TestServer;
let key: string;
let from: string;

beforeAll(async () => {
  sink = await startSmtpSink({ closeTimeout: 50 });
  server = await startTestServer({
    SMTP_URL: sink.url,
    DISPATCH_POLL_MS: '20',
    SEND_RETRY_BASE_MS: '50',
    SEND_RETRY_WINDOW_HOURS: hoursEnv(RETRY_WINDOW_MS),
  });
  key = (await server.team()).apiKey;
  from = `news@${(await verifiedDomain(server, key, 'outcomes.test')).name}`;
});
afterAll(async () => {
  await server.stop();
  await sink.close();
});

async function send(to: string | string[], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await server.call('POST', '/v1/emails', { key, body: { from, to, subject: 'Outcome', text: 'Hello', ...extra } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.emailId;
}

const isFor = (address: string) => (message: { rcptTo: string[] }) => message.rcptTo.includes(address);

describe('delivery outcomes over SMTP', () => {
  it('a 4xx answer is retried with backoff: delivered once, with DELIVERY_DELAYED then SENT and DELIVERED events', async () => {
    let refused = 0;
    sink.rule = { data: (message) => (isFor('busy@example.org')(message) && refused++ < 2 ? { code: 451, message: '4.3.0 try again later' } : null) };
    const id = await send('busy@example.org');
    const email = await waitForEmail(server, key, id, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', 'DELIVERY_DELAYED', 'DELIVERY_DELAYED', 'SENT', 'DELIVERED']);
    expect(email.emailEvents[1].data).toMatchObject({ code: 451, attempt: 1, response: expect.stringContaining('451 4.3.0 try again later') });
    expect(Date.parse(email.emailEvents[1].data.nextAttemptAt)).toBeGreaterThan(Date.parse(email.emailEvents[1].createdAt));
    expect(sink.forEmail(id)).toHaveLength(1);
  });

  it('a 5xx answer to a recipient bounces the email (SMTP reply in data) and suppresses the address; later mail to it is SUPPRESSED and not sent', async () => {
    sink.rule = { rcpt: (address) => (address === 'gone@example.org' ? { code: 550, message: '5.1.1 no such user' } : null) };
    const id = await send('gone@example.org');
    const bounced = await waitForEmail(server, key, id, settled);
    expect(bounced.latestStatus).toBe('BOUNCED');
    expect(statusesOf(bounced)).toEqual(['QUEUED', 'BOUNCED']);
    expect(bounced.emailEvents[1].data).toMatchObject({ bounceType: 'Permanent', recipients: ['gone@example.org'] });
    expect(JSON.stringify(bounced.emailEvents[1].data)).toContain('550 5.1.1 no such user');

    const list = await server.call('GET', '/v1/suppressions', { key });
    expect(list.body.data).toContainEqual({ email: 'gone@example.org', reason: 'HARD_BOUNCE', sourceEmailId: id, createdAt: expect.any(String) });

    const refusedBefore = sink.refusals.length;
    const again = await send('Gone Again <GONE@example.org>');
    const suppressed = await waitForEmail(server, key, again, settled);
    expect(statusesOf(suppressed)).toEqual(['QUEUED', 'SUPPRESSED']);
    expect(sink.refusals.length, 'the suppressed address was not even tried').toBe(refusedBefore);
    expect(sink.forEmail(again)).toEqual([]);
  });

  it('mail to several recipients goes to those not suppressed, and a 5xx for one of them suppresses only that one', async () => {
    await server.call('POST', '/v1/suppressions', { key, body: { email: 'blocked@example.org' } });
    sink.rule = { rcpt: (address) => (address === 'unknown@example.org' ? { code: 550, message: '5.1.1 unknown' } : null) };
    const id = await send(['ok@example.org', 'unknown@example.org'], { bcc: 'blocked@example.org' });
    const email = await waitForEmail(server, key, id, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    expect(email.emailEvents[1].data).toMatchObject({ suppressed: ['blocked@example.org'], rejected: [{ address: 'unknown@example.org', code: 550 }] });
    expect(sink.forEmail(id).map((m) => m.rcptTo)).toEqual([['ok@example.org']]);
    const { body } = await server.call('GET', '/v1/suppressions', { key });
    expect(body.data.map((s: { email: string }) => s.email)).toContain('unknown@example.org');
    expect((await server.call('DELETE', '/v1/suppressions/unknown@example.org', { key })).body).toEqual({ success: true });
  });

  it('with the SMTP server down mail is retried and nothing is lost; once it is back the mail is delivered once', async () => {
    sink.rule = {};
    await sink.stop();
    // More than SMTP_POOL_SIZE (5), so failed connections must give their pool slots back.
    const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => send(`down${i}@example.org`)));
    for (const id of ids) await waitForEmail(server, key, id, (email) => email.latestStatus === 'DELIVERY_DELAYED');
    await sink.start();
    for (const id of ids) {
      const email = await waitForEmail(server, key, id, settled);
      expect(email.latestStatus).toBe('DELIVERED');
      expect(statusesOf(email).slice(1, -2).every((status) => status === 'DELIVERY_DELAYED')).toBe(true);
      expect(statusesOf(email).slice(-2)).toEqual(['SENT', 'DELIVERED']);
      expect(sink.forEmail(id)).toHaveLength(1);
    }
  });

  it('mail still refused when the retry window has passed FAILED, and was never delivered', async () => {
    sink.rule = { data: (message) => (isFor('never@example.org')(message) ? { code: 421, message: '4.7.0 go away' } : null) };
    const started = Date.now();
    const id = await send('never@example.org');
    const email = await waitForEmail(server, key, id, settled, RETRY_WINDOW_MS + 5000);
    expect(email.latestStatus).toBe('FAILED');
    expect(Date.now() - started).toBeLessThan(RETRY_WINDOW_MS + 3000);
    expect(email.emailEvents.at(-1).data).toMatchObject({ reason: 'not delivered within the retry window', code: 421 });
    expect(sink.forEmail(id)).toEqual([]);
  });

  it('a cancelled email is never sent, even when cancelled as the dispatcher picks it up', async () => {
    sink.rule = {};
    const due = Date.now() + 1500;
    const dueAt = new Date(due).toISOString();
    const res = await server.call('POST', '/v1/emails/batch', {
      key,
      body: Array.from({ length: 100 }, (_, i) => ({ from, to: `race${i}@example.org`, subject: 'Race', text: 'Hi', scheduledAt: dueAt })),
    });
    expect(res.status).toBe(200);
    const ids: string[] = res.body.data.map((d: { emailId: string }) => d.emailId);
    // Cancels spread over the moment the emails fall due, while the dispatcher polls every 20 ms.
    await new Promise((resolve) => setTimeout(resolve, due - Date.now() - 60));
    const answers = await Promise.all(
      ids.map(async (id, i) => {
        await new Promise((resolve) => setTimeout(resolve, i * 2));
        return (await server.call('POST', `/v1/emails/${id}/cancel`, { key })).status;
      }),
    );
    expect(answers.every((status) => status === 200 || status === 409)).toBe(true);
    const cancelled = ids.filter((_id, i) => answers[i] === 200);
    const refused = ids.filter((_id, i) => answers[i] === 409);
    for (const id of ids) await waitForEmail(server, key, id, settled);
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const id of cancelled) {
      expect(sink.forEmail(id), `cancelled email ${id} was sent`).toEqual([]);
      expect((await server.call('GET', `/v1/emails/${id}`, { key })).body.latestStatus).toBe('CANCELLED');
    }
    for (const id of refused) expect(sink.forEmail(id)).toHaveLength(1);
    // Both sides of the race happened, or the test proved nothing.
    expect(cancelled.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
  });
});

describe('an SMTP relay that requires STARTTLS and authentication', () => {
  let secureSink: SmtpSink;
  let secureServer: TestServer;

  beforeAll(async () => {
    secureSink = await startSmtpSink({ auth: { user: 'relay', pass: 'p@ss word' }, closeTimeout: 50, urlQuery: 'requireTLS=true&tls.rejectUnauthorized=false' });
    secureServer = await startTestServer({ SMTP_URL: secureSink.url.replace('p@ss word', encodeURIComponent('p@ss word')), DISPATCH_POLL_MS: '20' });
  });
  afterAll(async () => {
    await secureServer.stop();
    await secureSink.close();
  });

  it('gets the mail over an encrypted, authenticated session', async () => {
    const teamKey = (await secureServer.team()).apiKey;
    const domain = await verifiedDomain(secureServer, teamKey, 'secure.test');
    const res = await secureServer.call('POST', '/v1/emails', { key: teamKey, body: { from: `a@${domain.name}`, to: 'x@example.org', subject: 'TLS', text: 'Hi' } });
    const email = await waitForEmail(secureServer, teamKey, res.body.emailId, settled);
    expect(email.latestStatus).toBe('DELIVERED');
    expect(secureSink.forEmail(res.body.emailId)).toMatchObject([{ secure: true, user: 'relay' }]);
  });
});
