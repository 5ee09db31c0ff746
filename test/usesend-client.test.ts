import { UseSend } from 'usesend-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let client: UseSend;

beforeAll(async () => {
  server = await startTestServer();
  const { apiKey } = await server.team();
  // The client appends /api/v1 to the origin it is given.
  client = new UseSend(apiKey, server.url);
});
afterAll(() => server.stop());

describe('the official usesend-js client', () => {
  it('drives every contactBooks method and gets each result in the shape it expects', async () => {
    const created = await client.contactBooks.create({ name: 'Client book', emoji: '📬' });
    expect(created.error).toBeNull();
    const bookId = created.data!.id;
    expect(created.data).toMatchObject({ name: 'Client book', emoji: '📬', doubleOptInEnabled: false, _count: { contacts: 0 } });

    const listed = await client.contactBooks.list();
    expect(listed.error).toBeNull();
    expect(listed.data!.map((book) => book.id)).toContain(bookId);

    const fetched = await client.contactBooks.get(bookId);
    expect(fetched).toEqual({ data: created.data, error: null });

    const updated = await client.contactBooks.update(bookId, { name: 'Renamed by client', variables: ['plan'] });
    expect(updated.error).toBeNull();
    expect(updated.data).toMatchObject({ id: bookId, name: 'Renamed by client', variables: ['plan'] });

    const deleted = await client.contactBooks.delete(bookId);
    expect(deleted.error).toBeNull();
    expect(deleted.data).toMatchObject({ id: bookId, success: true, message: expect.any(String) });
    expect((await client.contactBooks.get(bookId)).data).toBeNull();
  });

  it('drives every contacts method and gets each result in the shape it expects', async () => {
    const bookId = (await client.contactBooks.create({ name: 'Contacts via client' })).data!.id;

    const created = await client.contacts.create(bookId, { email: 'ada@example.com', firstName: 'Ada', properties: { plan: 'pro' } });
    expect(created.error).toBeNull();
    const contactId = created.data!.contactId!;
    expect(contactId).toMatch(/^[a-z0-9]{24}$/);

    const fetched = await client.contacts.get(bookId, contactId);
    expect(fetched.error).toBeNull();
    expect(fetched.data).toMatchObject({
      id: contactId,
      email: 'ada@example.com',
      firstName: 'Ada',
      lastName: null,
      subscribed: true,
      properties: { plan: 'pro' },
      contactBookId: bookId,
    });

    const updated = await client.contacts.update(bookId, contactId, { lastName: 'Lovelace', subscribed: false });
    expect(updated).toEqual({ data: { contactId }, error: null });
    expect((await client.contacts.get(bookId, 'ADA@example.com')).data).toMatchObject({
      lastName: 'Lovelace',
      subscribed: false,
      unsubscribeReason: 'UNSUBSCRIBED',
    });

    const upserted = await client.contacts.upsert(bookId, 'user-1815', { email: 'grace@example.com', firstName: 'Grace' });
    expect(upserted).toEqual({ data: { contactId: 'user-1815' }, error: null });
    expect(await client.contacts.upsert(bookId, 'user-1815', { email: 'grace@example.com', firstName: 'Grace' })).toEqual(upserted);

    const bulk = await client.contacts.bulkCreate(bookId, [
      { email: 'b1@example.com' },
      { email: 'b2@example.com', firstName: 'Bee' },
      { email: 'grace@example.com', lastName: 'Hopper' },
    ]);
    expect(bulk.error).toBeNull();
    expect(bulk.data).toMatchObject({ count: 3, created: 2, updated: 1, errors: [], message: expect.any(String) });

    const bulkDeleted = await client.contacts.bulkDelete(bookId, { contactIds: ['b1@example.com', 'B2@example.com'] });
    expect(bulkDeleted).toEqual({ data: { success: true, count: 2 }, error: null });

    const deleted = await client.contacts.delete(bookId, contactId);
    expect(deleted).toEqual({ data: { success: true }, error: null });

    const book = await client.contactBooks.get(bookId);
    expect(book.data).toMatchObject({ _count: { contacts: 1 } });
    expect((await client.contacts.get(bookId, 'user-1815')).data).toMatchObject({ firstName: 'Grace', lastName: 'Hopper' });
  });

  it('an error comes back as { data: null, error: <our error message string> }', async () => {
    // Our body is { error, code, details? }; the client's isUseSendErrorResponse looks for
    // body.error.code, finds none on a string, and so hands back body.error itself.
    const missing = await client.contacts.get('no-such-book', 'someone@example.com');
    expect(missing).toEqual({ data: null, error: 'Contact book not found' });

    const bookId = (await client.contactBooks.create({ name: 'Errors' })).data!.id;
    const invalid = await client.contacts.create(bookId, { email: 'not-an-address' });
    expect(invalid).toEqual({ data: null, error: 'Invalid request: email must be a valid email address' });

    await client.contacts.upsert(bookId, 'taken-1', { email: 'taken@example.com' });
    await client.contacts.upsert(bookId, 'other-1', { email: 'other@example.com' });
    const conflict = await client.contacts.upsert(bookId, 'other-1', { email: 'taken@example.com' });
    expect(conflict).toEqual({
      data: null,
      error: 'Another contact in this contact book already has the email address taken@example.com',
    });
  });
});
