import { sql } from 'kysely';
import PostalMime from 'postal-mime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedDomain } from './helpers/domains.js';
import { dispatcherDone } from './helpers/emails.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { waitFor } from './helpers/wait.js';

let server: TestServer;
let sink: SmtpSink;
let key: string;
let bookId: string;

beforeAll(async () => {
  sink = await startSmtpSink();
  server = await startTestServer({ SMTP_URL: sink.url, DISPATCH_POLL_MS: '20' });
  key = (await server.team()).apiKey;
  const domain = await verifiedDomain(server, key, 'optin.test');
  const book = await server.call('POST', '/v1/contactBooks', {
    key,
    body: { name: 'Double opt-in', doubleOptInEnabled: true, doubleOptInFrom: `Lists <lists@${domain.name}>`, doubleOptInSubject: 'Confirm, please' },
  });
  expect(book.status, JSON.stringify(book.body)).toBe(200);
  bookId = book.body.id;
});
afterAll(async () => {
  await server.stop();
  await sink.close();
});

const mailTo = (address: string, count = 1) =>
  waitFor(`${count} confirmation(s) at ${address}`, async () => sink.received.filter((m) => m.rcptTo.includes(address)), (found) => found.length >= count);

async function confirmPath(address: string) {
  const [message] = await mailTo(address);
  const parsed = await PostalMime.parse(message!.raw);
  expect(parsed.subject).toBe('Confirm, please');
  const url = /href="([^"]*\/confirm\/[^"]+)"/.exec(parsed.html!)![1]!;
  expect(parsed.text).toContain(url);
  expect(url.startsWith(server.deps.config.publicUrl)).toBe(true);
  return new URL(url).pathname;
}

const contact = async (email: string) => (await server.call('GET', `/v1/contactBooks/${bookId}/contacts/${email}`, { key })).body;

describe('double opt-in', () => {
  it('a new contact is pending, gets the confirmation at the sink, and the confirm POST (not the GET) subscribes it', async () => {
    const created = await server.call('POST', `/v1/contactBooks/${bookId}/contacts`, { key, body: { email: 'new@example.org', subscribed: true } });
    expect(created.status).toBe(200);
    expect(await contact('new@example.org')).toMatchObject({ subscribed: false });
    const path = await confirmPath('new@example.org');

    const page = await fetch(server.url + path);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post">');
    expect((await contact('new@example.org')).subscribed).toBe(false);

    const confirmed = await fetch(server.url + path, { method: 'POST' });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain('confirmed');
    expect(await contact('new@example.org')).toMatchObject({ subscribed: true, unsubscribeReason: null });
    expect((await fetch(server.url + path, { method: 'POST' })).status).toBe(200);
  });

  it('adding a pending contact again within 24 hours sends no second confirmation', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await server.call('PUT', `/v1/contactBooks/${bookId}/contacts/again@example.org`, { key, body: { firstName: `A${i}` } })).status).toBe(200);
    }
    await mailTo('again@example.org');
    // Confirmations are queued by the request itself: once none is left to send, any second one would have arrived.
    await dispatcherDone(server);
    expect(sink.received.filter((m) => m.rcptTo.includes('again@example.org'))).toHaveLength(1);
  });

  it('bulk-added contacts each get one confirmation', async () => {
    const res = await server.call('POST', `/v1/contactBooks/${bookId}/contacts/bulk`, { key, body: [{ email: 'b1@example.org' }, { email: 'b2@example.org' }] });
    expect(res.status).toBe(200);
    for (const address of ['b1@example.org', 'b2@example.org']) expect(await mailTo(address)).toHaveLength(1);
  });

  it('adding a pending contact again in bulk re-sends its confirmation once 24 hours have passed, never sooner', async () => {
    const bulk = async (rows: object[]) => {
      const res = await server.call('POST', `/v1/contactBooks/${bookId}/contacts/bulk`, { key, body: rows });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    };
    // Confirmations are queued by the request itself: once none is left to send, any second one would have arrived.
    const settled = () => dispatcherDone(server);
    const sent = () => sink.received.filter((m) => m.rcptTo.includes('rebulk@example.org'));

    await bulk([{ email: 'rebulk@example.org' }]);
    await mailTo('rebulk@example.org');
    await bulk([{ email: 'rebulk@example.org', firstName: 'Again' }]);
    await settled();
    expect(sent()).toHaveLength(1);

    await sql`UPDATE contacts SET confirmation_sent_at = now() - interval '25 hours'
      WHERE contact_book_id = ${bookId} AND email = 'rebulk@example.org'`.execute(server.deps.db);
    await bulk([{ email: 'rebulk@example.org' }, { email: 'rebulk-new@example.org' }]);
    expect(await mailTo('rebulk@example.org', 2)).toHaveLength(2);
    await bulk([{ email: 'rebulk@example.org' }]);
    await settled();
    expect(sent()).toHaveLength(2);
    expect(await contact('rebulk@example.org')).toMatchObject({ subscribed: false, firstName: 'Again' });
  });

  it('expired, tampered and unknown tokens get a plain page, never a 500', async () => {
    const { teamId } = await server.team();
    const expired = server.deps.tokens.sign('confirm', { teamId, bookId, contactId: 'whoever', expiresAt: Date.now() - 1 });
    const missing = server.deps.tokens.sign('confirm', { teamId, bookId, contactId: 'nobody', expiresAt: Date.now() + 60_000 });
    const path = await confirmPath('new@example.org');
    const token = path.split('/').pop()!;
    const tampered = `${token.slice(0, -3)}${token.at(-3) === 'A' ? 'B' : 'A'}${token.slice(-2)}`;
    const forged = `${Buffer.from(JSON.stringify({ k: 'c', t: teamId, b: bookId, c: 'x', x: Date.now() + 60_000 })).toString('base64url')}.${token.split('.')[1]}`;
    for (const [bad, status] of [[expired, 400], [tampered, 400], [forged, 400], ['nonsense', 400], [missing, 404]] as const) {
      const post = await fetch(`${server.url}/confirm/${bad}`, { method: 'POST' });
      expect(post.status, bad).toBe(status);
      expect(post.headers.get('content-type')).toMatch(/^text\/html/);
      if (status === 400) expect((await fetch(`${server.url}/confirm/${bad}`)).status).toBe(400);
    }
    // An unsubscribe token is no confirmation token.
    const unsubscribe = server.deps.tokens.sign('unsubscribe', { teamId, campaignId: 'm', emailId: 'e', bookId, contactId: 'c' });
    expect((await fetch(`${server.url}/confirm/${unsubscribe}`, { method: 'POST' })).status).toBe(400);
  });
});
