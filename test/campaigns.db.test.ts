import PostalMime from 'postal-mime';
import { UseSend } from 'usesend-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReleaser } from '../src/campaigns/releaser.js';
import { expectApiError, expectLegacyApiError } from './helpers/api-error.js';
import { verifyDkim } from './helpers/dkim.js';
import type { TestDnsServer } from './helpers/dns-server.js';
import { startServerWithDns, verifiedDomain } from './helpers/domains.js';
import { dispatcherDone } from './helpers/emails.js';
import { expectOk, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { waitFor } from './helpers/wait.js';

let dns: TestDnsServer;
let server: TestServer;
let sink: SmtpSink;
let key: string;
let from: string;
let stop: () => Promise<void>;

beforeAll(async () => {
  sink = await startSmtpSink();
  ({ dns, server, key, stop } = await startServerWithDns({ SMTP_URL: sink.url, DISPATCH_POLL_MS: '20', CAMPAIGN_POLL_MS: '20', SEND_RETRY_BASE_MS: '200' }));
  const domain = await verifiedDomain(server, key, 'campaigns.test');
  dns.serve(domain);
  from = `News <news@${domain.name}>`;
}, 30_000);
afterAll(async () => {
  await stop();
  await sink.close();
});

const UNSUBSCRIBE = '<a href="{{unsubscribeUrl}}">Unsubscribe</a>';

const ok = (method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);

/** A book of `count` contacts named person<i>, with a `plan` variable. */
async function bookOf(count: number, variables: string[] = ['plan']) {
  const book = await ok('POST', '/v1/contactBooks', { name: `Book of ${count}`, variables });
  for (let start = 0; start < count; start += 5000) {
    const rows = Array.from({ length: Math.min(5000, count - start) }, (_, j) => {
      const i = start + j;
      return { email: `person${i}@example.org`, firstName: i % 10 === 0 ? '' : `P<${i}>&`, properties: { plan: `plan-${i}` } };
    });
    await ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, rows);
  }
  return book.id as string;
}

const campaignBody = (contactBookId: string, extra: Record<string, unknown> = {}) => ({
  name: 'Launch', from, subject: 'Hi {{firstName,fallback=friend}}', contactBookId,
  html: `<p>Hello {{firstName,fallback=friend}}, you are on {{plan}}.</p>${UNSUBSCRIBE}`, ...extra,
});

const campaign = (id: string) => ok('GET', `/v1/campaigns/${id}`);

const PROBE_SUBJECT = 'Probe';
const isProbe = (message: SmtpSink['received'][number]) => message.raw.toString('latin1').includes(`\r\nSubject: ${PROBE_SUBJECT}\r\n`);

/**
 * Waits until the workers have gone round since the call: a campaign started now has been released
 * and sent (its message has the subject PROBE_SUBJECT), and no email is left due or claimed. Mail
 * that has not left by then was held, not late.
 */
async function workersWentRound() {
  const probe = await ok('POST', '/v1/campaigns', { ...campaignBody(await bookOf(1)), subject: PROBE_SUBJECT, sendNow: true });
  await waitFor('the probe campaign SENT', () => campaign(probe.id), (c) => c.status === 'SENT');
  await dispatcherDone(server);
}
const receivedFor = (bookTag: RegExp) => sink.received.filter((m) => m.rcptTo.some((to) => bookTag.test(to)));

describe('campaigns', () => {
  it('usesend-js drives every campaigns method and gets each result in the shape it expects', async () => {
    const client = new UseSend(key, server.url);
    const contactBookId = await bookOf(0);
    const created = await client.campaigns.create({ ...campaignBody(contactBookId), replyTo: 'a@example.org, b@example.org', cc: ['c@example.org'] });
    expect(created.error).toBeNull();
    const id = created.data!.id;
    expect(created.data).toMatchObject({
      status: 'DRAFT', batchSize: 500, batchWindowMinutes: 0, total: 0, sent: 0, replyTo: ['a@example.org', 'b@example.org'],
      cc: ['c@example.org'], bcc: [], scheduledAt: null, contactBookId, previewText: null,
    });
    expect((await client.campaigns.get(id)).data).toEqual(created.data);
    const listed = await client.campaigns.getAll({ search: 'Laun', status: 'DRAFT' });
    expect(listed.error).toBeNull();
    expect(listed.data!.campaigns.map((c) => c.id)).toContain(id);
    expect(listed.data!.totalPage).toBeGreaterThanOrEqual(1);

    const later = new Date(Date.now() + 86_400_000).toISOString();
    expect(await client.campaigns.schedule(id, { scheduledAt: later, batchSize: 50 })).toEqual({ data: { success: true }, error: null });
    expect((await client.campaigns.get(id)).data).toMatchObject({ status: 'SCHEDULED', scheduledAt: later, batchSize: 50 });
    expect(await client.campaigns.pause(id)).toEqual({ data: { success: true }, error: null });
    expect((await client.campaigns.get(id)).data!.status).toBe('PAUSED');
    expect(await client.campaigns.resume(id)).toEqual({ data: { success: true }, error: null });
    expect((await client.campaigns.get(id)).data!.status).toBe('SCHEDULED');
    const deleted = await client.campaigns.delete(id);
    expect(deleted.data).toMatchObject({ id, status: 'SCHEDULED' });
    const gone = await client.campaigns.get(id);
    // The client hands back the whole standard error body.
    expect(gone).toEqual({ data: null, error: { error: { code: 'NOT_FOUND', message: 'Campaign not found' } } });
  });

  it('a campaign to 1,000 contacts in batches of 100 reaches the sink as exactly 1,000 personalised, DKIM-signed messages whose one-click unsubscribe works', async () => {
    const contactBookId = await bookOf(1000);
    const created = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), batchSize: 100, sendNow: true, previewText: 'Big news' });
    const done = await waitFor('campaign SENT', () => campaign(created.id), (c) => c.status === 'SENT');
    expect(done).toMatchObject({ total: 1000, sent: 1000 });

    const messages = receivedFor(/^person\d+@example\.org$/);
    expect(messages).toHaveLength(1000);
    expect(new Set(messages.map((m) => m.rcptTo[0])).size).toBe(1000);
    const sample = messages.find((m) => m.rcptTo[0] === 'person7@example.org')!;
    const parsed = await PostalMime.parse(sample.raw);
    expect(parsed.subject).toBe('Hi P<7>&');
    expect(parsed.html).toContain('Hello P&lt;7&gt;&amp;, you are on plan-7.');
    expect(parsed.html).toContain('Big news');
    expect(parsed.text).toContain('Hello P<7>&, you are on plan-7.');
    const fallback = await PostalMime.parse(messages.find((m) => m.rcptTo[0] === 'person10@example.org')!.raw);
    expect(fallback.subject).toBe('Hi friend');
    const header = (name: string) => parsed.headers.find((h) => h.key === name)?.value;
    expect(header('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    expect(header('precedence')).toBe('bulk');
    const [, url, mailto] = /^<([^>]+)>, <(mailto:[^>]+)>$/.exec(header('list-unsubscribe')!)!;
    expect(mailto).toMatch(/^mailto:unsubscribe\+/);
    expect(url!.startsWith(`${server.deps.config.publicUrl}/unsubscribe/`)).toBe(true);
    expect(parsed.html).toContain(url);

    for (const message of [sample, messages[500]!]) {
      const [dkim] = await verifyDkim(dns, message.raw);
      expect(dkim?.status.result).toBe('pass');
      expect(JSON.stringify(dkim)).toMatch(/List-Unsubscribe: List-Unsubscribe-Post/);
    }

    // RFC 8058: a POST of List-Unsubscribe=One-Click, without cookies or a page.
    const path = new URL(url!).pathname;
    for (let i = 0; i < 2; i++) {
      const res = await fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });
      expect(res.status).toBe(200);
    }
    const contacts = await ok('GET', `/v1/contactBooks/${contactBookId}/contacts?emails=person7@example.org`);
    expect(contacts[0]).toMatchObject({ subscribed: false, unsubscribeReason: 'UNSUBSCRIBED' });
    const counted = await campaign(created.id);
    expect(counted.unsubscribed).toBe(1);
    // The counters agree with a recount of the emails' events.
    const events = await server.deps.db
      .selectFrom('email_events')
      .innerJoin('emails', (join) => join.onRef('emails.team_id', '=', 'email_events.team_id').onRef('emails.id', '=', 'email_events.email_id'))
      .select(['email_events.status', (eb) => eb.fn.count<number>('email_events.email_id').distinct().as('n')])
      .where('emails.campaign_id', '=', created.id)
      .groupBy('email_events.status')
      .execute();
    const recount = Object.fromEntries(events.map((row) => [row.status, Number(row.n)]));
    expect({ sent: counted.sent, delivered: counted.delivered, bounced: counted.bounced, complained: counted.complained })
      .toEqual({ sent: recount.SENT ?? 0, delivered: recount.DELIVERED ?? 0, bounced: recount.BOUNCED ?? 0, complained: recount.COMPLAINED ?? 0 });
  }, 120_000);

  it('the unsubscribe page shows a button on GET (changing nothing) and unsubscribes on POST; bad tokens get a plain 400 page', async () => {
    const contactBookId = await bookOf(1);
    const created = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), sendNow: true });
    await waitFor('campaign SENT', () => campaign(created.id), (c) => c.status === 'SENT');
    const message = receivedFor(/^person0@example\.org$/).at(-1)!;
    const parsed = await PostalMime.parse(message.raw);
    const url = /href="([^"]*\/unsubscribe\/[^"]+)"/.exec(parsed.html!)![1]!;
    const path = new URL(url).pathname;

    const page = await fetch(server.url + path);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<form method="post">/);
    const before = await ok('GET', `/v1/contactBooks/${contactBookId}/contacts`);
    expect(before[0].subscribed).toBe(true);
    expect((await fetch(server.url + path, { method: 'POST' })).status).toBe(200);
    expect((await ok('GET', `/v1/contactBooks/${contactBookId}/contacts`))[0].subscribed).toBe(false);

    const token = path.split('/').pop()!;
    const tampered = `${token.slice(0, 5)}${token[5] === 'A' ? 'B' : 'A'}${token.slice(6)}`;
    for (const bad of [tampered, 'garbage', `${token}.x`, '']) {
      for (const method of ['GET', 'POST']) {
        const res = await fetch(`${server.url}/unsubscribe/${bad}`, { method });
        expect([400, 404], `${method} ${bad}`).toContain(res.status);
        expect(res.headers.get('content-type')).toMatch(/text\/html|application\/json/);
      }
    }
  }, 30_000);

  it('batchWindowMinutes: the next batch is released only once the window has passed on the releaser clock', async () => {
    const contactBookId = await bookOf(25);
    const created = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), batchSize: 10, batchWindowMinutes: 60, sendNow: true });
    const released = async () => Number((await server.deps.db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('n')).where('campaign_id', '=', created.id).executeTakeFirstOrThrow()).n);
    await waitFor('first batch', released, (n) => n === 10);
    const start = Date.now();
    let offset = 0;
    const releaser = startReleaser(server.deps, { now: () => new Date(start + offset), autostart: false });
    // A tick skips a campaign whose row a dispatcher is bumping counters on (SKIP LOCKED), so
    // a release that is due is waited for over a few ticks.
    const tickUntil = (n: number) => waitFor(`${n} released`, async () => (await releaser.tick(), released()), (count) => count === n);
    try {
      offset = 59 * 60_000;
      await releaser.tick();
      expect(await released()).toBe(10);
      offset = 61 * 60_000;
      await tickUntil(20);
      await releaser.tick();
      expect(await released()).toBe(20);
      offset = 122 * 60_000;
      await tickUntil(25);
    } finally {
      await releaser.stop();
    }
    expect(await waitFor('SENT', () => campaign(created.id), (c) => c.status === 'SENT')).toMatchObject({ total: 25, sent: 25 });
  }, 30_000);

  it('pause holds mail: none leaves after pause returns; resume finishes with no contact missed or doubled', async () => {
    const CONTACTS = 3000;
    // Enough mail that the pause lands while most of it still waits.
    const contactBookId = await bookOf(CONTACTS);
    const created = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), batchSize: 50, sendNow: true });
    const before = sink.received.length;
    await waitFor('some mail out', async () => sink.received.length - before, (n) => n >= 50);
    await ok('POST', `/v1/campaigns/${created.id}/pause`);
    const launched = () => sink.received.slice(before).filter((message) => !isProbe(message));
    const atPause = launched().length;
    expect((await campaign(created.id)).status).toBe('PAUSED');
    expect((await server.call('POST', `/v1/campaigns/${created.id}/pause`, { key })).status).toBe(200);
    await workersWentRound();
    expect(launched().length, 'mail left after pause returned').toBe(atPause);
    expect(atPause).toBeLessThan(CONTACTS);

    await ok('POST', `/v1/campaigns/${created.id}/resume`);
    const done = await waitFor('SENT', () => campaign(created.id), (c) => c.status === 'SENT');
    expect(done).toMatchObject({ total: CONTACTS, sent: CONTACTS });
    const got = launched().map((m) => m.rcptTo[0]);
    expect(got).toHaveLength(CONTACTS);
    expect(new Set(got).size).toBe(CONTACTS);
  }, 60_000);

  it('delete while running: nothing more is sent, unsent mail is CANCELLED, and the answer is the deleted campaign', async () => {
    const contactBookId = await bookOf(400);
    // Mail to person1xx is refused for now, so it waits for a retry when the campaign is deleted.
    sink.rule = { rcpt: (address) => (/^person1\d\d@/.test(address) ? { code: 451, message: '4.3.0 try later' } : null) };
    const before = sink.received.length;
    const created = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), batchSize: 20, sendNow: true });
    const pending = async () => (await server.deps.db.selectFrom('emails').select('status').where('campaign_id', '=', created.id).execute())
      .filter((row) => row.status === 'DELIVERY_DELAYED').length;
    await waitFor('some mail delayed', pending, (n) => n >= 20);
    const deleted = await ok('DELETE', `/v1/campaigns/${created.id}`);
    sink.rule = {};
    expect(deleted).toMatchObject({ id: created.id, name: 'Launch' });
    const atDelete = sink.received.length;
    expect((await server.call('GET', `/v1/campaigns/${created.id}`, { key })).status).toBe(404);
    // Mail a dispatcher held at the delete comes back for its retry and is cancelled then.
    const statuses = async () => (await server.deps.db.selectFrom('emails').select('status').where('campaign_id', '=', created.id).execute()).map((row) => row.status);
    const settledStatuses = await waitFor('every email DELIVERED or CANCELLED', statuses, (all) => all.every((s) => s === 'DELIVERED' || s === 'CANCELLED'));
    expect(sink.received.length, 'mail left after the delete returned').toBe(atDelete);
    expect(settledStatuses.filter((s) => s === 'CANCELLED').length).toBeGreaterThanOrEqual(20);
    expect(settledStatuses.filter((s) => s === 'DELIVERED').length).toBe(atDelete - before);
  }, 60_000);

  it('contacts unsubscribed, suppressed or added during a run are handled: the first two never become emails, the last waits for the next campaign', async () => {
    const contactBookId = await bookOf(30);
    await ok('POST', '/v1/suppressions', { email: 'person3@example.org' });
    await ok('PATCH', `/v1/contactBooks/${contactBookId}/contacts/person4@example.org`, { subscribed: false });
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const created = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), batchSize: 10, batchWindowMinutes: 60, scheduledAt: later });
    const releaser = startReleaser(server.deps, { now: () => new Date(Date.parse(later) + offset), autostart: false });
    let offset = 0;
    let leaver = '';
    const before = sink.received.length;
    try {
      await releaser.tick();
      expect((await campaign(created.id)).total).toBe(28);
      await ok('POST', `/v1/contactBooks/${contactBookId}/contacts`, { email: 'newcomer@example.org' });
      const released = new Set((await server.deps.db.selectFrom('emails').select('contact_id').where('campaign_id', '=', created.id).execute()).map((row) => row.contact_id));
      const contacts: Array<{ id: string; email: string; subscribed: boolean }> = await ok('GET', `/v1/contactBooks/${contactBookId}/contacts`);
      leaver = contacts.find((contact) => contact.subscribed && !released.has(contact.id) && contact.email !== 'person3@example.org')!.email;
      await ok('PATCH', `/v1/contactBooks/${contactBookId}/contacts/${leaver}`, { subscribed: false });
      // Each tick a window later, until every batch is out and sent.
      const advance = async () => {
        offset += 61 * 60_000;
        await releaser.tick();
        return campaign(created.id);
      };
      await waitFor('SENT', advance, (c) => c.status === 'SENT');
    } finally {
      await releaser.stop();
    }
    const done = await campaign(created.id);
    expect(done).toMatchObject({ total: 28, sent: 27 });
    // Skipped at release, not only refused at send: no email exists for them at all.
    const addressed = (await server.deps.db.selectFrom('emails').select('to_addresses').where('campaign_id', '=', created.id).execute())
      .map((row) => row.to_addresses[0]);
    expect(addressed).toHaveLength(27);
    for (const skipped of ['person3@example.org', 'person4@example.org', leaver]) expect(addressed).not.toContain(skipped);
    const got = sink.received.slice(before).map((m) => m.rcptTo[0]);
    for (const skipped of ['person3@example.org', 'person4@example.org', leaver, 'newcomer@example.org']) expect(got).not.toContain(skipped);
    expect(new Set(got).size).toBe(27);
    await ok('DELETE', '/v1/suppressions/person3@example.org');
  }, 30_000);

  it('counters count each email once per kind: a hard bounce is bounced and hardBounced (and unsubscribes the contact as BOUNCED), the rest sent', async () => {
    const contactBookId = await bookOf(5);
    sink.rule = { rcpt: (address) => (address === 'person1@example.org' ? { code: 550, message: '5.1.1 no such user' } : null) };
    try {
      const created = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), sendNow: true });
      const done = await waitFor('SENT', () => campaign(created.id), (c) => c.status === 'SENT');
      expect(done).toMatchObject({ total: 5, sent: 4, bounced: 1, hardBounced: 1, complained: 0, delivered: 4 });
      const [bounced] = await ok('GET', `/v1/contactBooks/${contactBookId}/contacts?emails=person1@example.org`);
      expect(bounced).toMatchObject({ subscribed: false, unsubscribeReason: 'BOUNCED' });
    } finally {
      sink.rule = {};
      await ok('DELETE', '/v1/suppressions/person1@example.org');
    }
  });

  it('a campaign email shows its QUEUED event first, at its creation, like any email, though the release stores only the row', async () => {
    const contactBookId = await bookOf(3);
    const created = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), sendNow: true });
    await waitFor('SENT', () => campaign(created.id), (c) => c.status === 'SENT');
    const rows = await server.deps.db.selectFrom('emails').select('id').where('campaign_id', '=', created.id).execute();
    expect(rows).toHaveLength(3);
    const stored = await server.deps.db.selectFrom('email_events').select('status')
      .where('email_id', 'in', rows.map((row) => row.id)).where('status', '=', 'QUEUED').execute();
    expect(stored).toEqual([]);
    for (const { id } of rows) {
      const email = await ok('GET', `/v1/emails/${id}`);
      expect(email.emailEvents[0]).toEqual({ emailId: id, status: 'QUEUED', createdAt: email.createdAt, data: null });
      expect(email.emailEvents.map((event: { status: string }) => event.status)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    }
    // An email sent through the API stores its QUEUED event; both read alike.
    const { emailId } = await ok('POST', '/v1/emails', { from, to: 'plain@example.org', subject: 'Plain', text: 'plain' });
    const plain = await ok('GET', `/v1/emails/${emailId}`);
    expect(plain.emailEvents[0]).toEqual({ emailId, status: 'QUEUED', createdAt: plain.createdAt, data: null });
  });

  it('every illegal state move is a 409 naming the state', async () => {
    const contactBookId = await bookOf(0);
    const draft = await ok('POST', '/v1/campaigns', campaignBody(contactBookId));
    for (const action of ['pause', 'resume']) {
      const res = await server.call('POST', `/v1/campaigns/${draft.id}/${action}`, { key });
      expectApiError(res, 409, 'CONFLICT', `${action} a DRAFT`);
      expect(res.body.error.message).toContain('DRAFT');
    }
    const sent = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), sendNow: true });
    await waitFor('SENT', () => campaign(sent.id), (c) => c.status === 'SENT');
    for (const action of ['pause', 'resume', 'schedule']) {
      const res = await server.call('POST', `/v1/campaigns/${sent.id}/${action}`, { key, body: {} });
      expectApiError(res, 409, 'CONFLICT', `${action} a SENT campaign`);
      expect(res.body.error.message).toContain('SENT');
    }
    const scheduled = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), scheduledAt: 'tomorrow 9am' });
    expect(scheduled.status).toBe('SCHEDULED');
    expectApiError(await server.call('POST', `/v1/campaigns/${scheduled.id}/resume`, { key }), 409, 'CONFLICT', 'resume a SCHEDULED campaign');
    const deleteBook = await server.call('DELETE', `/v1/contactBooks/${contactBookId}`, { key });
    // Contact-book DELETE keeps the interface description's older error shape: `error` is the message.
    expectLegacyApiError(deleteBook, 409, 'CONFLICT', 'delete a book a scheduled campaign uses');
    expect(deleteBook.body.error).toContain(scheduled.id);
  }, 30_000);

  it('every bad field is a 400 naming it, and a failed create leaves no campaign', async () => {
    const contactBookId = await bookOf(0);
    const count = async () => (await ok('GET', '/v1/campaigns')).campaigns.length;
    const before = await count();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: '' }, 'name'],
      [{ from: 'news@unverified.example' }, 'from'],
      [{ subject: undefined }, 'subject'],
      [{ contactBookId: 'absent_book' }, 'contactBookId'],
      [{ html: undefined }, 'html'],
      [{ html: '<p>No way out</p>' }, 'html'],
      [{ replyTo: 'not an address' }, 'replyTo'],
      [{ cc: ['ok@example.org', 'bad'] }, 'cc'],
      [{ bcc: 'x@' }, 'bcc'],
      [{ batchSize: 0 }, 'batchSize'],
      [{ batchSize: 100_001 }, 'batchSize'],
      [{ batchWindowMinutes: 1441 }, 'batchWindowMinutes'],
      [{ batchWindowMinutes: -1 }, 'batchWindowMinutes'],
      [{ sendNow: true, scheduledAt: 'tomorrow' }, 'scheduledAt'],
      [{ scheduledAt: 'whenever you like' }, 'scheduledAt'],
      [{ scheduledAt: '2001-01-01T00:00:00Z' }, 'scheduledAt'],
      [{ html: undefined, content: '{"type":"doc","content":[{"type":"marquee"}]}' }, 'content'],
    ];
    for (const [change, field] of cases) {
      const res = await server.call('POST', '/v1/campaigns', { key, body: { ...campaignBody(contactBookId), ...change } });
      expectApiError(res, 400, 'VALIDATION_ERROR', JSON.stringify(change));
      expect(res.body.error.details.map((d: { path: string }) => d.path), JSON.stringify(change)).toContain(field);
    }
    const unknownNode = await server.call('POST', '/v1/campaigns', { key, body: { ...campaignBody(contactBookId), html: undefined, content: '{"type":"doc","content":[{"type":"marquee"}]}' } });
    expectApiError(unknownNode, 400, 'VALIDATION_ERROR', 'an unknown node');
    expect(unknownNode.body.error.message).toContain('marquee');
    const quoted = await server.call('POST', '/v1/campaigns', { key, body: { ...campaignBody(contactBookId), scheduledAt: 'whenever you like' } });
    expectApiError(quoted, 400, 'VALIDATION_ERROR', 'an unreadable schedule');
    expect(quoted.body.error.message).toContain('whenever you like');
    expect(await count()).toBe(before);
  });

  it('editor JSON content is rendered to email-safe HTML with its variables and unsubscribe footer', async () => {
    const contactBookId = await bookOf(0);
    const content = JSON.stringify({
      type: 'doc',
      content: [
        { type: 'heading', attrs: { level: 2 }, content: [{ type: 'text', text: 'News & more' }] },
        { type: 'paragraph', content: [{ type: 'text', text: 'Hi ' }, { type: 'variable', attrs: { id: 'firstName', fallback: 'there' } }, { type: 'text', text: 'bold', marks: [{ type: 'bold' }, { type: 'link', attrs: { href: 'https://example.org/a' } }] }] },
        { type: 'button', attrs: { text: 'Go', url: 'https://example.org/go' } },
        { type: 'image', attrs: { src: 'https://example.org/i.png', alt: 'pic' } },
        { type: 'bulletList', content: [{ type: 'listItem', content: [{ type: 'paragraph', content: [{ type: 'text', text: 'one' }] }] }] },
        { type: 'horizontalRule' },
        { type: 'unsubscribeFooter' },
      ],
    });
    const created = await ok('POST', '/v1/campaigns', { ...campaignBody(contactBookId), html: undefined, content });
    expect(created.content).toBe(content);
    for (const part of ['<h2', 'News &amp; more', '{{firstName,fallback=there}}', '<strong>', 'href="https://example.org/a"', 'href="https://example.org/go"', '<img src="https://example.org/i.png" alt="pic"', '<li>one</li>', '<hr', 'href="{{unsubscribeUrl}}"']) {
      expect(created.html).toContain(part);
    }
  });
});
