import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectRequestError } from './helpers/api-error.js';
import { verifiedDomain } from './helpers/domains.js';
import { expectOk, startTestServer, type CallOptions, type TestServer } from './helpers/server.js';

/**
 * A key scoped to one domain of its team (`key create --domain`), tried as an attacker holding it
 * would: against everything of the team's other domain that sends, reads or changes mail.
 */
let server: TestServer;
let full: string;
let scoped: string;
let own: { id: number; name: string };
let other: { id: number; name: string };
let teamId: number;

const FUTURE = () => new Date(Date.now() + 7 * 86_400_000).toISOString();
const UNSUBSCRIBE = '<p>Hi</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>';

const ok = (key: string, method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);

/** Calls as the scoped key and expects 403 FORBIDDEN, in the error shape of the call (the legacy one for contact-book PATCH and DELETE). */
async function expectForbidden(method: string, path: string, options: CallOptions, what: string) {
  expectRequestError(method, path, await server.call(method, path, options), 403, 'FORBIDDEN', what);
}

/** Rows of the team's tables, to show a refused call stored nothing. */
async function counts() {
  const count = async (table: 'campaigns' | 'contact_books' | 'contacts' | 'emails') =>
    Number((await server.deps.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where('team_id', '=', teamId).executeTakeFirstOrThrow()).n);
  return { campaigns: await count('campaigns'), books: await count('contact_books'), contacts: await count('contacts'), emails: await count('emails') };
}

beforeAll(async () => {
  server = await startTestServer();
  ({ teamId, apiKey: full } = await server.team('Scoped'));
  own = await verifiedDomain(server, full, 'own-domain.test');
  other = await verifiedDomain(server, full, 'other-domain.test');
  scoped = await server.key(teamId, 'full', own.id);
});
afterAll(() => server.stop());

describe('a key scoped to a domain reaches nothing of another domain', () => {
  it('campaigns: it cannot create one from the other domain, nor list, read, schedule, pause, resume or delete one there', async () => {
    const book = await ok(full, 'POST', '/v1/contactBooks', { name: 'Readers' });
    await ok(full, 'POST', `/v1/contactBooks/${book.id}/contacts`, { email: 'reader@example.org' });
    const campaign = (from: string, extra: object = {}) => ({ name: 'News', from, subject: 'News', contactBookId: book.id, html: UNSUBSCRIBE, ...extra });
    const theirs = await ok(full, 'POST', '/v1/campaigns', campaign(`news@${other.name}`, { scheduledAt: FUTURE() }));
    const mine = await ok(scoped, 'POST', '/v1/campaigns', campaign(`news@${own.name}`));

    const before = await counts();
    await expectForbidden('POST', '/v1/campaigns', { key: scoped, body: campaign(`news@${other.name}`, { sendNow: true }) }, 'create from the other domain');
    expect(await counts()).toEqual(before);

    const listed = await ok(scoped, 'GET', '/v1/campaigns');
    expect(listed.campaigns.map((c: { id: string }) => c.id)).toEqual([mine.id]);
    for (const [method, path, body] of [
      ['GET', `/v1/campaigns/${theirs.id}`, undefined],
      ['POST', `/v1/campaigns/${theirs.id}/pause`, undefined],
      ['POST', `/v1/campaigns/${theirs.id}/resume`, undefined],
      ['POST', `/v1/campaigns/${theirs.id}/schedule`, { scheduledAt: FUTURE() }],
      ['DELETE', `/v1/campaigns/${theirs.id}`, undefined],
    ] as const) {
      await expectForbidden(method, path, { key: scoped, body }, `${method} ${path}`);
    }
    const after = await ok(full, 'GET', `/v1/campaigns/${theirs.id}`);
    expect(after).toEqual(await ok(full, 'GET', `/v1/campaigns/${theirs.id}`));
    expect(after).toMatchObject({ status: 'SCHEDULED', scheduledAt: theirs.scheduledAt });
    // Its own domain's campaign is its to run.
    expect((await server.call('POST', `/v1/campaigns/${mine.id}/schedule`, { key: scoped, body: { scheduledAt: FUTURE() } })).status).toBe(200);
  });

  it('double opt-in: it cannot make or change a book whose confirmations come from the other domain, nor add contacts to one', async () => {
    const doubleOptIn = (domain: string) => ({ doubleOptInEnabled: true, doubleOptInFrom: `join@${domain}` });
    const theirs = await ok(full, 'POST', '/v1/contactBooks', { name: 'Theirs', ...doubleOptIn(other.name) });
    const plain = await ok(scoped, 'POST', '/v1/contactBooks', { name: 'Plain' });

    const before = await counts();
    await expectForbidden('POST', '/v1/contactBooks', { key: scoped, body: { name: 'Sneaky', ...doubleOptIn(other.name) } }, 'create');
    await expectForbidden('PATCH', `/v1/contactBooks/${plain.id}`, { key: scoped, body: doubleOptIn(other.name) }, 'switch a book over');
    await expectForbidden('PATCH', `/v1/contactBooks/${theirs.id}`, { key: scoped, body: { doubleOptInContent: '<a href="{{doubleOptInUrl}}">Yes</a>' } }, 'rewrite theirs');
    await expectForbidden('POST', `/v1/contactBooks/${theirs.id}/contacts`, { key: scoped, body: { email: 'victim@example.org' } }, 'add a contact');
    await expectForbidden('PUT', `/v1/contactBooks/${theirs.id}/contacts/victim-2`, { key: scoped, body: { email: 'victim2@example.org' } }, 'put a contact');
    await expectForbidden('POST', `/v1/contactBooks/${theirs.id}/contacts/bulk`, { key: scoped, body: [{ email: 'victim3@example.org' }] }, 'bulk add');
    // Nothing stored, and no confirmation queued from the other domain.
    expect(await counts()).toEqual(before);
    expect(await ok(full, 'GET', `/v1/contactBooks/${plain.id}`)).toMatchObject({ doubleOptInEnabled: false, doubleOptInFrom: null });

    // Its own domain's double opt-in is its to use.
    const mine = await ok(scoped, 'POST', '/v1/contactBooks', { name: 'Mine', ...doubleOptIn(own.name) });
    await ok(scoped, 'POST', `/v1/contactBooks/${mine.id}/contacts`, { email: 'joiner@example.org' });
  });

  it('double opt-in: every write to a book confirming from the other domain, to the book or to its contacts, is 403 and changes nothing', async () => {
    const theirs = await ok(full, 'POST', '/v1/contactBooks', { name: 'Theirs too', doubleOptInEnabled: true, doubleOptInFrom: `join@${other.name}` });
    const contacts = `/v1/contactBooks/${theirs.id}/contacts`;
    const { contactId } = await ok(full, 'POST', contacts, { email: 'member@example.org', firstName: 'Mem' });
    await ok(full, 'PUT', `${contacts}/member-2`, { email: 'member2@example.org' });
    const state = async () => ({ book: await ok(full, 'GET', `/v1/contactBooks/${theirs.id}`), contacts: await ok(full, 'GET', contacts), counts: await counts() });
    const before = await state();

    await expectForbidden('PATCH', `/v1/contactBooks/${theirs.id}`, { key: scoped, body: { name: 'Renamed' } }, 'rename the book');
    await expectForbidden('PATCH', `/v1/contactBooks/${theirs.id}`, { key: scoped, body: { doubleOptInEnabled: false } }, 'turn its double opt-in off');
    await expectForbidden('PATCH', `/v1/contactBooks/${theirs.id}`, { key: scoped, body: { doubleOptInFrom: `join@${own.name}` } }, 'move its confirmations to its own domain');
    await expectForbidden('DELETE', `/v1/contactBooks/${theirs.id}`, { key: scoped }, 'delete the book');
    await expectForbidden('PATCH', `${contacts}/${contactId}`, { key: scoped, body: { firstName: 'Changed' } }, 'patch a contact');
    await expectForbidden('PATCH', `${contacts}/member2@example.org`, { key: scoped, body: { subscribed: false } }, 'patch a contact by address');
    await expectForbidden('PUT', `${contacts}/member-2`, { key: scoped, body: { email: 'member2@example.org', lastName: 'Changed' } }, 'put over a contact');
    await expectForbidden('POST', contacts, { key: scoped, body: { email: 'member@example.org', lastName: 'Changed' } }, 'post over a contact');
    await expectForbidden('DELETE', `${contacts}/${contactId}`, { key: scoped }, 'delete a contact');
    await expectForbidden('DELETE', `${contacts}/bulk`, { key: scoped, body: { contactIds: [contactId, 'member-2'] } }, 'bulk delete');
    await expectForbidden('POST', `${contacts}/bulk`, { key: scoped, body: [{ email: 'member@example.org', lastName: 'Changed' }] }, 'bulk update');
    expect(await state()).toEqual(before);

    // Reading it stays allowed: the scope bounds what a key changes and sends.
    expect(await ok(scoped, 'GET', contacts)).toEqual(before.contacts);
  });

  it("double opt-in: the segments of a book confirming from the other domain are read-only to it", async () => {
    const theirs = await ok(full, 'POST', '/v1/contactBooks', { name: 'Theirs, segmented', doubleOptInEnabled: true, doubleOptInFrom: `join@${other.name}` });
    const segments = `/v1/contactBooks/${theirs.id}/segments`;
    const filter = { all: [{ field: 'email', op: 'exists' }] };
    const segment = await ok(full, 'POST', segments, { name: 'Everyone', filter });
    await expectForbidden('POST', segments, { key: scoped, body: { name: 'Mine', filter } }, 'create a segment');
    await expectForbidden('PATCH', `${segments}/${segment.id}`, { key: scoped, body: { name: 'Renamed' } }, 'rename a segment');
    await expectForbidden('DELETE', `${segments}/${segment.id}`, { key: scoped }, 'delete a segment');
    expect(await ok(scoped, 'GET', segments)).toEqual({ data: [segment] });
  });

  it("automations: they are the whole team's, so it can neither read nor change one, and its events start runs only in books it may write", async () => {
    const book = await ok(full, 'POST', '/v1/contactBooks', { name: 'Automated' });
    const theirs = await ok(full, 'POST', '/v1/contactBooks', { name: 'Theirs, automated', doubleOptInEnabled: true, doubleOptInFrom: `join@${other.name}` });
    const automation = await ok(full, 'POST', '/v1/automations', { name: 'Team-wide', status: 'ACTIVE', trigger: { type: 'event', name: 'signed.up', contactBookId: book.id }, steps: [{ type: 'exit' }] });
    await expectForbidden('POST', '/v1/automations', { key: scoped, body: { name: 'Mine', trigger: { type: 'event', name: 'x', contactBookId: book.id }, steps: [{ type: 'exit' }] } }, 'create an automation');
    await expectForbidden('GET', '/v1/automations', { key: scoped }, 'list automations');
    await expectForbidden('GET', `/v1/automations/${automation.id}`, { key: scoped }, 'read an automation');
    await expectForbidden('GET', `/v1/automations/${automation.id}/runs`, { key: scoped }, 'read its runs');
    await expectForbidden('PATCH', `/v1/automations/${automation.id}`, { key: scoped, body: { status: 'PAUSED' } }, 'pause an automation');
    await expectForbidden('DELETE', `/v1/automations/${automation.id}`, { key: scoped }, 'delete an automation');
    await expectForbidden('POST', '/v1/events', { key: scoped, body: { name: 'signed.up', contactBookId: theirs.id, email: 'joiner@example.org' } }, 'an event in a book confirming from the other domain');
    const event = await server.call('POST', '/v1/events', { key: scoped, body: { name: 'signed.up', contactBookId: book.id, email: 'joiner@example.org' } });
    expect(event.status, JSON.stringify(event.body)).toBe(202);
    expect(event.body.runsStarted).toBe(1);
    expect((await ok(full, 'GET', `/v1/automations/${automation.id}`)).status).toBe('ACTIVE');
  });

  it('emails: it cannot send from, read, list, cancel or reschedule mail of the other domain', async () => {
    const email = (domain: string) => ({ from: `hello@${domain}`, to: 'reader@example.org', subject: 'Hi', html: '<p>Hi</p>', scheduledAt: FUTURE() });
    const theirs = await ok(full, 'POST', '/v1/emails', email(other.name));
    const mine = await ok(scoped, 'POST', '/v1/emails', email(own.name));

    const before = await counts();
    await expectForbidden('POST', '/v1/emails', { key: scoped, body: email(other.name) }, 'send');
    await expectForbidden('POST', '/v1/emails/batch', { key: scoped, body: [email(own.name), email(other.name)] }, 'send in a batch');
    expect(await counts()).toEqual(before);
    await expectForbidden('GET', `/v1/emails/${theirs.emailId}`, { key: scoped }, 'read');
    await expectForbidden('POST', `/v1/emails/${theirs.emailId}/cancel`, { key: scoped }, 'cancel');
    await expectForbidden('PATCH', `/v1/emails/${theirs.emailId}`, { key: scoped, body: { scheduledAt: FUTURE() } }, 'reschedule');
    await expectForbidden('GET', `/v1/emails?domainId=${other.id}`, { key: scoped }, 'list by domain');
    const listed: { id: string; domainId: number }[] = (await ok(scoped, 'GET', '/v1/emails')).data;
    expect(listed.map((e) => e.id)).toContain(mine.emailId);
    expect(listed.filter((e) => e.domainId !== own.id)).toEqual([]);
    expect((await ok(full, 'GET', `/v1/emails/${theirs.emailId}`)).latestStatus).toBe('SCHEDULED');
  });

  it('analytics and domains: it sees only its own domain', async () => {
    await expectForbidden('GET', `/v1/analytics/reputation-metrics?domainId=${other.id}`, { key: scoped }, 'metrics');
    await expectForbidden('GET', `/v1/analytics/email-time-series?domainId=${other.id}`, { key: scoped }, 'time series');
    await expectForbidden('GET', `/v1/domains/${other.id}`, { key: scoped }, 'domain');
    expect((await ok(scoped, 'GET', '/v1/domains')).map((d: { id: number }) => d.id)).toEqual([own.id]);
    await ok(scoped, 'GET', `/v1/analytics/reputation-metrics?domainId=${own.id}`);
  });
});
