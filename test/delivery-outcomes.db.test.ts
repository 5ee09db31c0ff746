import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError } from './helpers/api-error.js';
import { hoursEnv, verifiedDomain } from './helpers/domains.js';
import { dispatcherDone, settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { sleep } from './helpers/wait.js';

/** A server sending to its own SMTP sink, with a team and a verified sender. */
async function startMailServer(env: Record<string, string>) {
  const sink = await startSmtpSink({ closeTimeout: 50 });
  const server = await startTestServer({ SMTP_URL: sink.url, DISPATCH_POLL_MS: '20', ...env });
  const key = (await server.team()).apiKey;
  const from = `news@${(await verifiedDomain(server, key, 'outcomes.test')).name}`;
  return {
    sink,
    server,
    key,
    from,
    async send(to: string | string[], extra: Record<string, unknown> = {}): Promise<string> {
      const res = await server.call('POST', '/v1/emails', { key, body: { from, to, subject: 'Outcome', text: 'Hello', ...extra } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.emailId;
    },
    email: async (id: string) => (await server.call('GET', `/v1/emails/${id}`, { key })).body,
    stop: async () => {
      await server.stop();
      await sink.close();
    },
  };
}

const isFor = (address: string) => (message: { rcptTo: string[] }) => message.rcptTo.includes(address);

/**
 * Retried until the retry window, counted from when the email was due, had passed, and FAILED only
 * then: no retry was planned past the window's end, and the failure is not older than that end.
 */
function expectFailedOnceTheWindowPassed(email: any, windowMs: number) {
  const windowEnd = Date.parse(email.scheduledAt ?? email.createdAt) + windowMs;
  const delays = email.emailEvents.filter((event: { status: string }) => event.status === 'DELIVERY_DELAYED');
  expect(delays.length).toBeGreaterThan(0);
  for (const delay of delays) expect(Date.parse(delay.data.nextAttemptAt)).toBeLessThanOrEqual(windowEnd);
  const failed = email.emailEvents.at(-1);
  expect(failed).toMatchObject({ status: 'FAILED', data: { reason: 'not delivered within the retry window', code: 421, attempts: delays.length + 1 } });
  expect(Date.parse(failed.createdAt), `FAILED at ${failed.createdAt}, before the window ended at ${new Date(windowEnd).toISOString()}`).toBeGreaterThanOrEqual(windowEnd);
}

describe('delivery outcomes over SMTP', () => {
  const RETRY_WINDOW_MS = 3000;
  const RETRY_BASE_MS = 50;
  let mail: Awaited<ReturnType<typeof startMailServer>>;

  beforeAll(async () => {
    mail = await startMailServer({ SEND_RETRY_BASE_MS: String(RETRY_BASE_MS), SEND_RETRY_WINDOW_HOURS: hoursEnv(RETRY_WINDOW_MS) });
  });
  afterAll(() => mail.stop());

  /**
   * A hundred emails due in a moment, and `act` on each, spread over the moment they fall due while
   * the dispatcher polls every 20 ms: some calls come before the claim and some after, as chance
   * has it. Answers each email with what its call got, once the dispatcher is done with all of them.
   */
  async function atTheMomentOfClaim(prefix: string, act: (id: string, due: number) => Promise<CallResult>) {
    const { server, key, from, sink } = mail;
    sink.rule = {};
    const due = Date.now() + 1500;
    const res = await server.call('POST', '/v1/emails/batch', {
      key,
      body: Array.from({ length: 100 }, (_, i) => ({ from, to: `${prefix}${i}@example.org`, subject: 'Race', text: 'Hi', scheduledAt: new Date(due).toISOString() })),
    });
    expect(res.status).toBe(200);
    const ids: string[] = res.body.data.map((d: { emailId: string }) => d.emailId);
    await sleep(Math.max(0, due - Date.now() - 60));
    const answers = await Promise.all(
      ids.map(async (id, i) => {
        await sleep(i * 2);
        return act(id, due);
      }),
    );
    for (const id of ids) await waitForEmail(server, key, id, settled, 15_000);
    await dispatcherDone(server, ids);
    const won = answers.filter((answer) => answer.status === 200).length;
    console.info(`${prefix} at the moment of claim: ${won} answered 200, ${ids.length - won} refused`);
    return ids.map((id, i) => ({ id, answer: answers[i]!, email: mail.email(id) }));
  }

  it('a 4xx answer is retried with backoff: delivered once, with DELIVERY_DELAYED then SENT and DELIVERED events', async () => {
    const { sink, server, key } = mail;
    // When each attempt reached the server: the event is written later, with others of its batch.
    const attempts: number[] = [];
    sink.rule = {
      data: (message) => {
        if (!isFor('busy@example.org')(message)) return null;
        attempts.push(Date.now());
        return attempts.length <= 2 ? { code: 451, message: '4.3.0 try again later' } : null;
      },
    };
    const id = await mail.send('busy@example.org');
    const email = await waitForEmail(server, key, id, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', 'DELIVERY_DELAYED', 'DELIVERY_DELAYED', 'SENT', 'DELIVERED']);
    expect(email.emailEvents[1].data).toMatchObject({ code: 451, attempt: 1, response: expect.stringContaining('451 4.3.0 try again later') });
    expect(attempts).toHaveLength(3);
    // Each retry is announced for a backoff after the refusal (half the base or more, doubling
    // with each attempt), and not made before the time it announced.
    for (const [index, event] of [email.emailEvents[1], email.emailEvents[2]].entries()) {
      const announced = Date.parse(event.data.nextAttemptAt);
      expect(announced - attempts[index]!).toBeGreaterThanOrEqual(0.5 * RETRY_BASE_MS * 2 ** index);
      expect(attempts[index + 1]!).toBeGreaterThanOrEqual(announced);
    }
    expect(sink.forEmail(id)).toHaveLength(1);
  });

  it('a 5xx answer to a recipient bounces the email (SMTP reply in data) and suppresses the address; later mail to it is SUPPRESSED and not sent', async () => {
    const { sink, server, key } = mail;
    sink.rule = { rcpt: (address) => (address === 'gone@example.org' ? { code: 550, message: '5.1.1 no such user' } : null) };
    const id = await mail.send('gone@example.org');
    const bounced = await waitForEmail(server, key, id, settled);
    expect(bounced.latestStatus).toBe('BOUNCED');
    expect(statusesOf(bounced)).toEqual(['QUEUED', 'BOUNCED']);
    expect(bounced.emailEvents[1].data).toMatchObject({ bounceType: 'Permanent', recipients: ['gone@example.org'] });
    expect(JSON.stringify(bounced.emailEvents[1].data)).toContain('550 5.1.1 no such user');

    const list = await server.call('GET', '/v1/suppressions', { key });
    expect(list.body.data).toContainEqual({ email: 'gone@example.org', reason: 'HARD_BOUNCE', sourceEmailId: id, createdAt: expect.any(String) });

    const refusedBefore = sink.refusals.length;
    const again = await mail.send('Gone Again <GONE@example.org>');
    const suppressed = await waitForEmail(server, key, again, settled);
    expect(statusesOf(suppressed)).toEqual(['QUEUED', 'SUPPRESSED']);
    expect(sink.refusals.length, 'the suppressed address was not even tried').toBe(refusedBefore);
    expect(sink.forEmail(again)).toEqual([]);
  });

  it('a 5xx answer to the message itself (at DATA, recipient accepted) bounces the email with the reply and suppresses the address', async () => {
    const { sink, server, key } = mail;
    sink.rule = { data: (message) => (isFor('refused-content@example.org')(message) ? { code: 554, message: '5.7.1 message content rejected' } : null) };
    const id = await mail.send('refused-content@example.org');
    const bounced = await waitForEmail(server, key, id, settled);
    expect(statusesOf(bounced)).toEqual(['QUEUED', 'BOUNCED']);
    expect(bounced.emailEvents[1].data).toMatchObject({
      bounceType: 'Permanent', code: 554, recipients: ['refused-content@example.org'], response: expect.stringContaining('554 5.7.1 message content rejected'),
    });
    expect(sink.refusals).toContain('554 5.7.1 message content rejected');
    const list = await server.call('GET', '/v1/suppressions', { key });
    expect(list.body.data).toContainEqual({ email: 'refused-content@example.org', reason: 'HARD_BOUNCE', sourceEmailId: id, createdAt: expect.any(String) });
    expect(sink.forEmail(id)).toEqual([]);
  });

  it('mail to several recipients goes to those not suppressed, and a 5xx for one of them suppresses only that one', async () => {
    const { sink, server, key } = mail;
    await server.call('POST', '/v1/suppressions', { key, body: { email: 'blocked@example.org' } });
    sink.rule = { rcpt: (address) => (address === 'unknown@example.org' ? { code: 550, message: '5.1.1 unknown' } : null) };
    const id = await mail.send(['ok@example.org', 'unknown@example.org'], { bcc: 'blocked@example.org' });
    const email = await waitForEmail(server, key, id, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    expect(email.emailEvents[1].data).toMatchObject({ suppressed: ['blocked@example.org'], rejected: [{ address: 'unknown@example.org', code: 550 }] });
    expect(sink.forEmail(id).map((m) => m.rcptTo)).toEqual([['ok@example.org']]);
    const { body } = await server.call('GET', '/v1/suppressions', { key });
    expect(body.data.map((s: { email: string }) => s.email)).toContain('unknown@example.org');
    expect((await server.call('DELETE', '/v1/suppressions/unknown@example.org', { key })).body).toEqual({ success: true });
  });

  it('with the SMTP server down mail is retried and nothing is lost; once it is back the mail is delivered once', async () => {
    const { sink, server, key } = mail;
    sink.rule = {};
    await sink.stop();
    // More than SMTP_POOL_SIZE (5), so failed connections must give their pool slots back.
    const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => mail.send(`down${i}@example.org`)));
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

  it('a connection lost after the final dot, before the reply, is retried: the email is never lost, and reaches the receiver at most twice', async () => {
    const { sink, server, key } = mail;
    // The receiver may have kept the message it never acknowledged; the sender cannot know, so it
    // sends again (RFC 5321 §4.1.1.4, RFC 1047): one duplicate, with the same Message-ID.
    let dropped = false;
    sink.rule = { data: (message) => (isFor('cut-off@example.org')(message) && !dropped ? ((dropped = true), 'drop') : null) };
    const id = await mail.send('cut-off@example.org');
    const email = await waitForEmail(server, key, id, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', 'DELIVERY_DELAYED', 'SENT', 'DELIVERED']);
    expect(email.emailEvents[1].data).toMatchObject({ attempt: 1, code: null });
    expect(sink.dropped).toBe(1);
    expect(sink.forEmail(id)).toHaveLength(2);
  });

  it('mail still refused when the retry window has passed is retried until then, FAILED only once it has, and never delivered', async () => {
    const { sink, server, key } = mail;
    sink.rule = { data: (message) => (isFor('never@example.org')(message) ? { code: 421, message: '4.7.0 go away' } : null) };
    const id = await mail.send('never@example.org');
    const email = await waitForEmail(server, key, id, settled, RETRY_WINDOW_MS + 10_000);
    expect(email.latestStatus).toBe('FAILED');
    expectFailedOnceTheWindowPassed(email, RETRY_WINDOW_MS);
    expect(email.emailEvents.filter((event: { status: string }) => event.status === 'DELIVERY_DELAYED').length).toBeGreaterThan(1);
    expect(sink.forEmail(id)).toEqual([]);
  });

  it('a cancelled email is never sent, even when cancelled as the dispatcher picks it up; a refused cancel leaves it sent once', async () => {
    const raced = await atTheMomentOfClaim('cancel', (id) => mail.server.call('POST', `/v1/emails/${id}/cancel`, { key: mail.key }));
    for (const { id, answer, email } of raced) {
      const final = await email;
      if (answer.status === 200) {
        expect(final.latestStatus, `cancelled email ${id}`).toBe('CANCELLED');
        expect(statusesOf(final)).not.toContain('SENT');
        expect(mail.sink.forEmail(id), `cancelled email ${id} was sent`).toEqual([]);
      } else {
        expectApiError(answer, 409, 'CONFLICT', `cancel of ${id}`);
        expect(final.latestStatus, `email ${id} whose cancel was refused`).toBe('DELIVERED');
        expect(statusesOf(final)).not.toContain('CANCELLED');
        expect(mail.sink.forEmail(id)).toHaveLength(1);
      }
    }
  });

  it('a reschedule as the dispatcher picks the email up either moves it (sent once, not before the new time) or is refused (sent once, as planned): never twice, never lost', async () => {
    const raced = await atTheMomentOfClaim('move', (id, due) =>
      mail.server.call('PATCH', `/v1/emails/${id}`, { key: mail.key, body: { scheduledAt: new Date(due + 1500).toISOString() } }),
    );
    for (const { id, answer, email } of raced) {
      const final = await email;
      expect(final.latestStatus, `email ${id}`).toBe('DELIVERED');
      expect(mail.sink.forEmail(id), `copies of email ${id} sent`).toHaveLength(1);
      const sent = final.emailEvents.find((event: { status: string }) => event.status === 'SENT');
      if (answer.status === 200) {
        expect(Date.parse(sent.createdAt), `rescheduled email ${id} sent before its new time ${final.scheduledAt}`).toBeGreaterThanOrEqual(Date.parse(final.scheduledAt));
        expect(final.emailEvents.filter((event: { status: string }) => event.status === 'SCHEDULED')).toHaveLength(2);
      } else {
        expectApiError(answer, 409, 'CONFLICT', `reschedule of ${id}`);
        expect(final.emailEvents.filter((event: { status: string }) => event.status === 'SCHEDULED')).toHaveLength(1);
      }
    }
  });
});

describe('the retry window', () => {
  // The backoff (SEND_RETRY_BASE_MS's default, a minute) is far longer than the window, so the first
  // retry would fall past the window's end: it is made at the end instead.
  const WINDOW_MS = 3600;
  let mail: Awaited<ReturnType<typeof startMailServer>>;

  beforeAll(async () => {
    mail = await startMailServer({ SEND_RETRY_WINDOW_HOURS: hoursEnv(WINDOW_MS) });
    mail.sink.rule = { data: () => ({ code: 421, message: '4.7.0 go away' }) };
  });
  afterAll(() => mail.stop());

  it('counted from when the email was due, its last retry is at the window\'s end and it is FAILED only once the window has passed', async () => {
    const ids = await Promise.all([mail.send('now@example.org'), mail.send('later@example.org', { scheduledAt: new Date(Date.now() + 1000).toISOString() })]);
    for (const id of ids) {
      const email = await waitForEmail(mail.server, mail.key, id, settled, WINDOW_MS + 10_000);
      const windowEnd = new Date(Date.parse(email.scheduledAt ?? email.createdAt) + WINDOW_MS).toISOString();
      expect(statusesOf(email).slice(1)).toEqual(['DELIVERY_DELAYED', 'FAILED']);
      expect(email.emailEvents[1].data.nextAttemptAt).toBe(windowEnd);
      expectFailedOnceTheWindowPassed(email, WINDOW_MS);
      expect(mail.sink.forEmail(id)).toEqual([]);
    }
  });
});

describe('a relay that takes the connection and never answers', () => {
  const TIMEOUT_MS = 500;
  let mail: Awaited<ReturnType<typeof startMailServer>>;

  beforeAll(async () => {
    // Its own server: pooled connections another test opened would never meet the hanging relay.
    mail = await startMailServer({ SMTP_TIMEOUT_MS: String(TIMEOUT_MS), SEND_RETRY_BASE_MS: '50' });
  });
  afterAll(() => mail.stop());

  it('holds an attempt for SMTP_TIMEOUT_MS, no longer: DELIVERY_DELAYED, retried, and delivered once when the relay answers again', async () => {
    const { sink, server, key } = mail;
    sink.rule = { connect: () => 'hang' };
    const id = await mail.send('patient@example.org');
    const delayed = await waitForEmail(server, key, id, (email) => email.latestStatus === 'DELIVERY_DELAYED');
    expect(sink.hung).toBeGreaterThan(0);
    const [queued, first] = delayed.emailEvents;
    expect(first.data).toMatchObject({ attempt: 1, code: null, response: expect.stringMatching(/timeout|greeting/i) });
    // It was the timeout that ended the attempt, not a refused connection.
    expect(Date.parse(first.createdAt) - Date.parse(queued.createdAt)).toBeGreaterThanOrEqual(TIMEOUT_MS);

    sink.rule = {};
    const email = await waitForEmail(server, key, id, settled);
    expect(statusesOf(email).slice(-2)).toEqual(['SENT', 'DELIVERED']);
    expect(statusesOf(email).slice(1, -2).every((status) => status === 'DELIVERY_DELAYED')).toBe(true);
    expect(sink.forEmail(id)).toHaveLength(1);
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
