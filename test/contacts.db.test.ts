import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContactBody, plainContact } from '../src/api/contacts.js';
import { expectApiError } from './helpers/api-error.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

let server: TestServer;
let key: string;
let teamId: number;

beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey: key, teamId } = await server.team());
});
afterAll(() => server.stop());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function newBook(name = 'Book', apiKey = key): Promise<string> {
  const res = await server.call('POST', '/v1/contactBooks', { key: apiKey, body: { name } });
  expect(res.status).toBe(200);
  return res.body.id;
}

const contactsPath = (bookId: string, rest = '') => `/v1/contactBooks/${bookId}/contacts${rest}`;

/** Every contact of the book as the API shows it, to prove a rejected request changed nothing. */
async function snapshot(bookId: string, apiKey = key) {
  const res = await server.call('GET', contactsPath(bookId, '?limit=1000'), { key: apiKey });
  expect(res.status).toBe(200);
  return res.body;
}

async function put(bookId: string, contactId: string, body: unknown) {
  return server.call('PUT', contactsPath(bookId, `/${encodeURIComponent(contactId)}`), { key, body });
}

async function get(bookId: string, contactId: string) {
  return server.call('GET', contactsPath(bookId, `/${encodeURIComponent(contactId)}`), { key });
}

function expectValidationError(res: CallResult, path: string) {
  expectApiError(res, 400, 'VALIDATION_ERROR', path);
  expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
}

async function pending(bookId: string, contactId: string) {
  const row = await server.deps.db
    .selectFrom('contacts')
    .select(['pending_confirmation', 'confirmation_sent_at'])
    .where('contact_book_id', '=', bookId)
    .where('id', '=', contactId)
    .executeTakeFirstOrThrow();
  return row;
}

describe('PUT upsert', () => {
  it("PUT creates a contact under the caller's own id and returns it whole", async () => {
    const bookId = await newBook();
    const res = await put(bookId, 'user-42', {
      email: '  Ann.Lee@Example.COM ',
      firstName: 'Ann',
      lastName: 'Lee',
      properties: { plan: 'pro' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ contactId: 'user-42' });
    const contact = await get(bookId, 'user-42');
    expect(contact.body).toEqual({
      id: 'user-42',
      firstName: 'Ann',
      lastName: 'Lee',
      email: 'Ann.Lee@example.com',
      subscribed: true,
      unsubscribeReason: null,
      properties: { plan: 'pro' },
      contactBookId: bookId,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
  });

  it('repeating the same PUT changes nothing, not even updatedAt', async () => {
    const bookId = await newBook();
    const body = { email: 'repeat@example.com', firstName: 'Re', properties: { a: '1', b: '2' }, subscribed: false };
    expect((await put(bookId, 'crm-7', body)).body).toEqual({ contactId: 'crm-7' });
    const first = await snapshot(bookId);
    // Only once the clock has moved on would a rewrite show in updatedAt.
    await waitFor('the clock past updatedAt', async () => Date.now(), (now) => now > Date.parse(first[0].updatedAt));
    expect((await put(bookId, 'crm-7', { ...body, properties: { b: '2', a: '1' } })).body).toEqual({ contactId: 'crm-7' });
    expect((await put(bookId, 'repeat@example.com', body)).body).toEqual({ contactId: 'crm-7' });
    expect(await snapshot(bookId)).toEqual(first);
  });

  it('PUT by email address updates the contact with that address, whatever its case', async () => {
    const bookId = await newBook();
    const created = await server.call('POST', contactsPath(bookId), { key, body: { email: 'Jo@example.com' } });
    const res = await put(bookId, 'JO@EXAMPLE.COM', { firstName: 'Jo' });
    expect(res.body).toEqual({ contactId: created.body.contactId });
    const contact = await get(bookId, 'jo@Example.com');
    expect(contact.body).toMatchObject({ id: created.body.contactId, email: 'Jo@example.com', firstName: 'Jo' });
    expect(await snapshot(bookId)).toHaveLength(1);
  });

  it('PUT by id updates that contact, including its address', async () => {
    const bookId = await newBook();
    await put(bookId, 'member-1', { email: 'old@example.com' });
    expect((await put(bookId, 'member-1', { email: 'new@example.com', lastName: 'N' })).body).toEqual({ contactId: 'member-1' });
    expect((await get(bookId, 'member-1')).body).toMatchObject({ email: 'new@example.com', lastName: 'N' });
    expect((await get(bookId, 'old@example.com')).status).toBe(404);
  });

  it('PUT keyed by an unknown address creates the contact with a generated id and that address', async () => {
    const bookId = await newBook();
    const res = await put(bookId, 'Fresh@Example.com', { firstName: 'F' });
    expect(res.status).toBe(200);
    expect(res.body.contactId).toMatch(/^[a-z0-9]{24}$/);
    expect((await get(bookId, res.body.contactId)).body).toMatchObject({ email: 'Fresh@example.com', firstName: 'F' });
  });

  it('a PUT keyed by an address cannot move the contact to another address', async () => {
    const bookId = await newBook();
    await put(bookId, 'stay@example.com', {});
    const before = await snapshot(bookId);
    expectValidationError(await put(bookId, 'stay@example.com', { email: 'elsewhere@example.com' }), 'email');
    expectValidationError(await put(bookId, 'unknown@example.com', { email: 'other@example.com' }), 'email');
    expect(await snapshot(bookId)).toEqual(before);
  });

  it('PUT needs an email to create a contact, and rejects bad ids and bodies without storing anything', async () => {
    const bookId = await newBook();
    expectValidationError(await put(bookId, 'user-1', { firstName: 'No email' }), 'email');
    expectValidationError(await put(bookId, 'ab', { email: 'short@example.com' }), 'contactId');
    expectValidationError(await put(bookId, 'bulk', { email: 'bulk@example.com' }), 'contactId');
    expectValidationError(await put(bookId, 'user-1', { email: 'not-an-address' }), 'email');
    const badTypes = await put(bookId, 'user-1', { email: 'x@example.com', subscribed: 'yes', properties: { n: 1 } });
    expectValidationError(badTypes, 'subscribed');
    expectValidationError(badTypes, 'properties.n');
    expect(await snapshot(bookId)).toEqual([]);
  });

  it("moving a contact onto another contact's address is a 409 and changes nothing", async () => {
    const bookId = await newBook();
    await put(bookId, 'first', { email: 'one@example.com' });
    await put(bookId, 'second', { email: 'two@example.com' });
    const before = await snapshot(bookId);
    for (const res of [
      await put(bookId, 'second', { email: 'ONE@example.com' }),
      await server.call('PATCH', contactsPath(bookId, '/second'), { key, body: { email: 'one@example.com', firstName: 'X' } }),
      await put(bookId, 'third', { email: 'One@Example.com' }),
    ]) {
      expectApiError(res, 409, 'CONFLICT');
      expect(res.body.error.message).toContain('already has the email address');
    }
    expect(await snapshot(bookId)).toEqual(before);
  });
});

describe('POST, GET, PATCH and DELETE of one contact', () => {
  it('POST creates by address and updates the contact that already has it', async () => {
    const bookId = await newBook();
    const created = await server.call('POST', contactsPath(bookId), { key, body: { email: 'post@example.com', firstName: 'P' } });
    expect(created.body.contactId).toMatch(/^[a-z0-9]{24}$/);
    const again = await server.call('POST', contactsPath(bookId), { key, body: { email: 'POST@example.com', lastName: 'Q' } });
    expect(again.body).toEqual(created.body);
    expect(await snapshot(bookId)).toMatchObject([{ email: 'POST@example.com', firstName: 'P', lastName: 'Q' }]);
    expectValidationError(await server.call('POST', contactsPath(bookId), { key, body: { firstName: 'x' } }), 'email');
  });

  it('PATCH changes only the given fields, by id or by address', async () => {
    const bookId = await newBook();
    await put(bookId, 'patch-me', { email: 'patch@example.com', firstName: 'A', lastName: 'B', properties: { k: 'v' } });
    const res = await server.call('PATCH', contactsPath(bookId, '/Patch@Example.com'), { key, body: { lastName: null } });
    expect(res.body).toEqual({ contactId: 'patch-me' });
    expect((await get(bookId, 'patch-me')).body).toMatchObject({ firstName: 'A', lastName: null, properties: { k: 'v' } });
    const missing = await server.call('PATCH', contactsPath(bookId, '/nobody'), { key, body: { firstName: 'x' } });
    expectApiError(missing, 404, 'NOT_FOUND');
    expect(missing.body.error.message).toBe('Contact not found');
  });

  it('DELETE removes one contact by id or address; a second DELETE is a 404', async () => {
    const bookId = await newBook();
    await put(bookId, 'del-1', { email: 'del1@example.com' });
    await put(bookId, 'del-2', { email: 'del2@example.com' });
    expect((await server.call('DELETE', contactsPath(bookId, '/del-1'), { key })).body).toEqual({ success: true });
    expect((await server.call('DELETE', contactsPath(bookId, '/DEL2@example.com'), { key })).body).toEqual({ success: true });
    expect((await server.call('DELETE', contactsPath(bookId, '/del-1'), { key })).status).toBe(404);
    expect(await snapshot(bookId)).toEqual([]);
  });
});

describe('listing', () => {
  let bookId: string;
  beforeAll(async () => {
    bookId = await newBook('Listed');
    for (let i = 0; i < 5; i++) await put(bookId, `list-${i}`, { email: `l${i}@example.com`, subscribed: i % 2 === 0 });
  });

  it('pages in creation order and reports the total in X-Total-Count', async () => {
    const all = await server.call('GET', contactsPath(bookId), { key });
    expect(all.body.map((c: { id: string }) => c.id)).toEqual(['list-0', 'list-1', 'list-2', 'list-3', 'list-4']);
    expect(all.headers.get('x-total-count')).toBe('5');
    const page2 = await server.call('GET', contactsPath(bookId, '?page=2&limit=2'), { key });
    expect(page2.body.map((c: { id: string }) => c.id)).toEqual(['list-2', 'list-3']);
    expect(page2.headers.get('x-total-count')).toBe('5');
    const beyond = await server.call('GET', contactsPath(bookId, '?page=4&limit=2'), { key });
    expect(beyond.body).toEqual([]);
    expect((await server.call('GET', `/api/v1/contactBooks/${bookId}/contacts?limit=1000`, { key })).body).toHaveLength(5);
  });

  it('page and limit out of bounds are a 400 naming the parameter', async () => {
    for (const [query, path] of [
      ['page=0', 'page'],
      ['page=-1', 'page'],
      ['page=1.5', 'page'],
      ['page=abc', 'page'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=', 'limit'],
      ['subscribed=yes', 'subscribed'],
    ] as const) {
      expectValidationError(await server.call('GET', contactsPath(bookId, `?${query}`), { key }), path);
    }
  });

  it('filters by emails, ids and subscribed, combined', async () => {
    const ids = async (query: string) => {
      const res = await server.call('GET', contactsPath(bookId, `?${query}`), { key });
      expect(res.status).toBe(200);
      return { ids: res.body.map((c: { id: string }) => c.id), total: res.headers.get('x-total-count') };
    };
    expect(await ids('emails=L1@example.com,%20l3@EXAMPLE.com')).toEqual({ ids: ['list-1', 'list-3'], total: '2' });
    expect(await ids('ids=list-4,list-0,nope')).toEqual({ ids: ['list-0', 'list-4'], total: '2' });
    expect(await ids('subscribed=false')).toEqual({ ids: ['list-1', 'list-3'], total: '2' });
    expect(await ids('subscribed=true&ids=list-0,list-1&limit=1')).toEqual({ ids: ['list-0'], total: '1' });
  });
});

describe('bulk', () => {
  it('bulk upsert keeps valid rows, lists invalid ones by index and counts exactly', async () => {
    const bookId = await newBook();
    await put(bookId, 'existing', { email: 'exists@example.com', firstName: 'Old', properties: { keep: 'me' } });
    const res = await server.call('POST', contactsPath(bookId, '/bulk'), {
      key,
      body: [
        { email: 'a@example.com', firstName: 'A' },
        { email: 'not an address' },
        { email: 'EXISTS@example.com', firstName: 'New' },
        { email: 'b@example.com', subscribed: false, properties: { plan: 'free' } },
        { firstName: 'no email' },
        { email: 'A@Example.com', lastName: 'dup' },
        'not an object',
        { email: 'c@example.com', subscribed: 'no' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ count: 3, created: 2, updated: 1 });
    expect(res.body.message).toEqual(expect.any(String));
    expect(res.body.errors).toEqual([
      { index: 1, email: 'not an address', message: 'email: must be a valid email address' },
      { index: 4, email: null, message: 'email: is required' },
      { index: 5, email: 'A@example.com', message: 'email: repeats the address of row 0' },
      { index: 6, email: null, message: 'must be an object' },
      { index: 7, email: 'c@example.com', message: 'subscribed: must be a boolean' },
    ]);
    const stored = await snapshot(bookId);
    expect(stored.map((c: { email: string }) => c.email).sort()).toEqual(['EXISTS@example.com', 'a@example.com', 'b@example.com']);
    expect(stored.find((c: { id: string }) => c.id === 'existing')).toMatchObject({
      email: 'EXISTS@example.com',
      firstName: 'New',
      properties: { keep: 'me' },
    });
    expect(stored.find((c: { email: string }) => c.email === 'b@example.com')).toMatchObject({
      subscribed: false,
      unsubscribeReason: 'UNSUBSCRIBED',
      properties: { plan: 'free' },
    });
  });

  it('repeating a bulk upsert creates nothing and leaves updatedAt alone', async () => {
    const bookId = await newBook();
    const rows = Array.from({ length: 50 }, (_, i) => ({ email: `r${i}@example.com`, firstName: `R${i}` }));
    expect((await server.call('POST', contactsPath(bookId, '/bulk'), { key, body: rows })).body).toMatchObject({ created: 50, updated: 0 });
    const before = await snapshot(bookId);
    expect((await server.call('POST', contactsPath(bookId, '/bulk'), { key, body: rows })).body).toMatchObject({
      count: 50,
      created: 0,
      updated: 50,
      errors: [],
    });
    expect(await snapshot(bookId)).toEqual(before);
  });

  it('a bulk row is read exactly as the request schema reads it', () => {
    const rows: unknown[] = [
      { email: ' Ann@Example.COM ', firstName: '  Ann ', lastName: null, properties: { plan: 'pro' }, subscribed: false },
      { email: 'ann@example.com', firstName: 'Ann', lastName: 'Lee', properties: { plan: 'pro' }, subscribed: true, extra: 1 },
      { email: 'Ünïcode@Bücher.example', properties: {} },
      { email: 'a@b.co', firstName: `${' '.repeat(40)}${'x'.repeat(255)} ` },
      { email: 'a@b.co', firstName: 'x'.repeat(256) },
      { email: 'a@b.co', lastName: 42 },
      { email: 'a@b.co', properties: { ['k'.repeat(256)]: 'v'.repeat(10_000) } },
      { email: 'a@b.co', properties: { ['k'.repeat(257)]: 'v' } },
      { email: 'a@b.co', properties: { k: 'v'.repeat(10_001) } },
      { email: 'a@b.co', properties: { '': 'v' } },
      { email: 'a@b.co', properties: { k: 1 } },
      { email: 'a@b.co', properties: ['v'] },
      { email: 'a@b.co', properties: null },
      JSON.parse('{ "email": "a@b.co", "properties": { "__proto__": "x", "k": "v" } }'),
      { email: 'a@b.co', subscribed: 'true' },
      { email: 'not an address' },
      { email: 7 },
      { firstName: 'no email' },
      null,
      ['a@b.co'],
      'a@b.co',
    ];
    for (const row of rows) {
      const schema = createContactBody.safeParse(row);
      const fast = plainContact(row);
      if (fast === undefined) continue;
      expect(schema.success, JSON.stringify(row)).toBe(true);
      expect(fast, JSON.stringify(row)).toEqual(schema.data);
    }
    // The fast path is taken for ordinary rows, else this test would prove nothing.
    expect(rows.filter((row) => plainContact(row) !== undefined).length).toBeGreaterThanOrEqual(4);
  });

  it('the contacts of one bulk request list in the order they were sent', async () => {
    const bookId = await newBook();
    // Addresses in no alphabetical order, so only the ids can keep them in the order sent.
    const emails = Array.from({ length: 300 }, (_, i) => `o${(i * 7919) % 300}@example.com`);
    const res = await server.call('POST', contactsPath(bookId, '/bulk'), { key, body: emails.map((email) => ({ email })) });
    expect(res.body).toMatchObject({ created: 300 });
    expect((await snapshot(bookId)).map((c: { email: string }) => c.email)).toEqual(emails);
  });

  it('a request of exactly 10,000 contacts is stored whole', async () => {
    const bookId = await newBook();
    const rows = Array.from({ length: 10_000 }, (_, i) => ({ email: `full${i}@example.com`, properties: { n: String(i) } }));
    const res = await server.call('POST', contactsPath(bookId, '/bulk'), { key, body: rows });
    expect(res.body).toMatchObject({ count: 10_000, created: 10_000, updated: 0, errors: [] });
    const last = await server.call('GET', contactsPath(bookId, '?emails=full9999@example.com'), { key });
    expect(last.body).toMatchObject([{ properties: { n: '9999' } }]);
    expect((await server.call('GET', contactsPath(bookId, '?limit=1'), { key })).headers.get('x-total-count')).toBe('10000');
  });

  it('more than 10,000 contacts in one bulk request is a 400 and stores nothing', async () => {
    const bookId = await newBook();
    const rows = Array.from({ length: 10_001 }, (_, i) => ({ email: `big${i}@example.com` }));
    const res = await server.call('POST', contactsPath(bookId, '/bulk'), { key, body: rows });
    expectApiError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.error.message).toContain('at most 10000 contacts');
    expect(await snapshot(bookId)).toEqual([]);
    expectValidationError(await server.call('POST', contactsPath(bookId, '/bulk'), { key, body: { contacts: [] } }), '(body)');
  });

  it('a bulk upsert that fails partway stores nothing', async () => {
    const bookId = await newBook();
    const { db } = server.deps;
    await sql`CREATE FUNCTION fail_on_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.email = 'poison@example.com' THEN RAISE EXCEPTION 'simulated fault'; END IF;
        RETURN NEW;
      END $$`.execute(db);
    await sql`CREATE TRIGGER poison BEFORE INSERT ON contacts FOR EACH ROW EXECUTE FUNCTION fail_on_poison()`.execute(db);
    try {
      // The poisoned row sits in the last statement, after whole chunks were already written.
      const rows = Array.from({ length: 6_000 }, (_, i) => ({ email: `p${i}@example.com` }));
      rows.push({ email: 'poison@example.com' });
      const res = await server.call('POST', contactsPath(bookId, '/bulk'), { key, body: rows });
      expectApiError(res, 500, 'INTERNAL_SERVER_ERROR');
      expect(JSON.stringify(res.body)).not.toContain('simulated');
      expect(await snapshot(bookId)).toEqual([]);
    } finally {
      await sql`DROP TRIGGER poison ON contacts`.execute(db);
      await sql`DROP FUNCTION fail_on_poison()`.execute(db);
    }
  });

  it('bulk delete is not shadowed by single delete, and removes by id or address', async () => {
    const bookId = await newBook();
    await put(bookId, 'gone-1', { email: 'g1@example.com' });
    await put(bookId, 'gone-2', { email: 'g2@example.com' });
    await put(bookId, 'stays', { email: 'stays@example.com' });
    const res = await server.call('DELETE', contactsPath(bookId, '/bulk'), {
      key,
      body: { contactIds: ['gone-1', 'G2@example.com', 'missing-id'] },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, count: 2 });
    expect((await snapshot(bookId)).map((c: { id: string }) => c.id)).toEqual(['stays']);
    // The single-contact route still answers for every other method on that path.
    const single = await server.call('GET', contactsPath(bookId, '/bulk'), { key });
    expectApiError(single, 404, 'NOT_FOUND', 'GET …/contacts/bulk');
    expect(single.body.error.message).toBe('Contact not found');
    const before = await snapshot(bookId);
    expectValidationError(await server.call('DELETE', contactsPath(bookId, '/bulk'), { key, body: { contactIds: [] } }), 'contactIds');
    expectValidationError(await server.call('DELETE', contactsPath(bookId, '/bulk'), { key }), 'contactIds');
    const tooMany = Array.from({ length: 10_001 }, (_, i) => `id-${i}`);
    expectValidationError(await server.call('DELETE', contactsPath(bookId, '/bulk'), { key, body: { contactIds: tooMany } }), 'contactIds');
    expect(await snapshot(bookId)).toEqual(before);
  });
});

describe('subscription', () => {
  it('unsubscribing sets UNSUBSCRIBED, keeps a bounce or complaint, and resubscribing clears the reason', async () => {
    const bookId = await newBook();
    await put(bookId, 'sub-1', { email: 'sub1@example.com' });
    await put(bookId, 'sub-2', { email: 'sub2@example.com' });
    const state = async (id: string) => {
      const { subscribed, unsubscribeReason } = (await get(bookId, id)).body;
      return { subscribed, unsubscribeReason };
    };
    expect(await state('sub-1')).toEqual({ subscribed: true, unsubscribeReason: null });
    await put(bookId, 'sub-1', { subscribed: false });
    expect(await state('sub-1')).toEqual({ subscribed: false, unsubscribeReason: 'UNSUBSCRIBED' });
    await put(bookId, 'sub-1', { firstName: 'Left alone' });
    expect(await state('sub-1')).toEqual({ subscribed: false, unsubscribeReason: 'UNSUBSCRIBED' });

    await server.deps.db
      .updateTable('contacts')
      .set({ subscribed: false, unsubscribe_reason: 'BOUNCED' })
      .where('contact_book_id', '=', bookId)
      .where('id', '=', 'sub-2')
      .execute();
    await server.call('PATCH', contactsPath(bookId, '/sub-2'), { key, body: { subscribed: false } });
    expect(await state('sub-2')).toEqual({ subscribed: false, unsubscribeReason: 'BOUNCED' });
    await server.call('POST', contactsPath(bookId, '/bulk'), { key, body: [{ email: 'sub2@example.com', subscribed: false }] });
    expect(await state('sub-2')).toEqual({ subscribed: false, unsubscribeReason: 'BOUNCED' });
    await server.call('PATCH', contactsPath(bookId, '/sub-2'), { key, body: { subscribed: true } });
    expect(await state('sub-2')).toEqual({ subscribed: true, unsubscribeReason: null });
  });

  it('double opt-in: new contacts start pending whatever the body says, and the API cannot confirm them', async () => {
    const bookId = await newBook('Double opt-in');
    await put(bookId, 'before-doi', { email: 'before@example.com' });
    await server.deps.db
      .insertInto('domains')
      .values({
        team_id: teamId,
        name: 'example.com',
        region: 'us-east-1',
        status: 'SUCCESS',
        dkim_selector: 'test',
        dkim_private_key: 'unused',
        dkim_public_key: 'unused',
      })
      .execute();
    const enabled = await server.call('PATCH', `/v1/contactBooks/${bookId}`, {
      key,
      body: { doubleOptInEnabled: true, doubleOptInFrom: 'news@example.com' },
    });
    expect(enabled.status).toBe(200);

    await put(bookId, 'doi-1', { email: 'doi1@example.com', subscribed: true });
    await server.call('POST', contactsPath(bookId), { key, body: { email: 'doi2@example.com' } });
    await server.call('POST', contactsPath(bookId, '/bulk'), { key, body: [{ email: 'doi3@example.com', subscribed: true }] });
    const listed = await snapshot(bookId);
    for (const email of ['doi1@example.com', 'doi2@example.com', 'doi3@example.com']) {
      const contact = listed.find((c: { email: string }) => c.email === email);
      expect(contact).toMatchObject({ subscribed: false, unsubscribeReason: null });
      expect(await pending(bookId, contact.id)).toEqual({ pending_confirmation: true, confirmation_sent_at: expect.any(Date) });
    }

    const before = await snapshot(bookId);
    await put(bookId, 'doi-1', { email: 'doi1@example.com', subscribed: true });
    await server.call('PATCH', contactsPath(bookId, '/doi-1'), { key, body: { subscribed: true } });
    await server.call('PATCH', contactsPath(bookId, '/doi-1'), { key, body: { subscribed: false } });
    expect(await snapshot(bookId)).toEqual(before);
    expect(await pending(bookId, 'doi-1')).toMatchObject({ pending_confirmation: true });

    // A contact from before double opt-in was enabled is no pending one: the API still manages it.
    await put(bookId, 'before-doi', { subscribed: false });
    expect((await get(bookId, 'before-doi')).body).toMatchObject({ subscribed: false, unsubscribeReason: 'UNSUBSCRIBED' });
    expect(await pending(bookId, 'before-doi')).toMatchObject({ pending_confirmation: false });
  });
});

describe('team isolation', () => {
  it("another team's book and contacts answer 404 like missing ones and stay unchanged", async () => {
    const bookId = await newBook('Private');
    await put(bookId, 'private-1', { email: 'private@example.com', firstName: 'Secret' });
    const before = await snapshot(bookId);
    const { apiKey: other } = await server.team('Other');
    const otherBook = await newBook('Theirs', other);

    const attempts = [
      server.call('GET', contactsPath(bookId), { key: other }),
      server.call('POST', contactsPath(bookId), { key: other, body: { email: 'intruder@example.com' } }),
      server.call('POST', contactsPath(bookId, '/bulk'), { key: other, body: [{ email: 'intruder@example.com' }] }),
      server.call('DELETE', contactsPath(bookId, '/bulk'), { key: other, body: { contactIds: ['private-1'] } }),
      server.call('GET', contactsPath(bookId, '/private-1'), { key: other }),
      server.call('PUT', contactsPath(bookId, '/private-1'), { key: other, body: { firstName: 'Pwned' } }),
      server.call('PATCH', contactsPath(bookId, '/private-1'), { key: other, body: { firstName: 'Pwned' } }),
      server.call('DELETE', contactsPath(bookId, '/private-1'), { key: other }),
      server.call('GET', contactsPath('no-such-book'), { key }),
    ];
    for (const res of await Promise.all(attempts)) {
      expectApiError(res, 404, 'NOT_FOUND');
      expect(res.body).toEqual({ error: { code: 'NOT_FOUND', message: 'Contact book not found' } });
    }
    // The other team's own book does not see the contact either.
    expect((await server.call('GET', contactsPath(otherBook, '/private-1'), { key: other })).status).toBe(404);
    expect((await server.call('GET', contactsPath(otherBook, '/private@example.com'), { key: other })).status).toBe(404);
    expect(await snapshot(bookId)).toEqual(before);
  });

  it('contacts need a key with full permission', async () => {
    const bookId = await newBook();
    const sending = await server.key(teamId, 'sending');
    const res = await server.call('GET', contactsPath(bookId), { key: sending });
    expectApiError(res, 403, 'FORBIDDEN');
  });
});
