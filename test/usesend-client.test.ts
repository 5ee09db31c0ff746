import { UseSend } from 'usesend-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedDomain } from './helpers/domains.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let apiKey: string;
let client: UseSend;

beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey } = await server.team());
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

  it('an error comes back as { data: null, error: <the whole error body> }, the standard body { error: { code, message, details? } }', async () => {
    // The client's isUseSendErrorResponse finds body.error.code and hands back the body itself.
    const missing = await client.contacts.get('no-such-book', 'someone@example.com');
    expect(missing).toEqual({ data: null, error: { error: { code: 'NOT_FOUND', message: 'Contact book not found' } } });

    const bookId = (await client.contactBooks.create({ name: 'Errors' })).data!.id;
    const invalid = await client.contacts.create(bookId, { email: 'not-an-address' });
    expect(invalid).toEqual({
      data: null,
      error: {
        error: {
          code: 'VALIDATION_ERROR',
          message: 'Invalid request: email must be a valid email address',
          details: [{ path: 'email', message: 'must be a valid email address' }],
        },
      },
    });

    await client.contacts.upsert(bookId, 'taken-1', { email: 'taken@example.com' });
    await client.contacts.upsert(bookId, 'other-1', { email: 'other@example.com' });
    const conflict = await client.contacts.upsert(bookId, 'other-1', { email: 'taken@example.com' });
    expect(conflict).toEqual({
      data: null,
      error: { error: { code: 'CONFLICT', message: 'Another contact in this contact book already has the email address taken@example.com' } },
    });

    // The standard shape on the same book's other calls, read and listed alike.
    expect(await client.contactBooks.get('no-such-book')).toEqual({ data: null, error: { error: { code: 'NOT_FOUND', message: 'Contact book not found' } } });
  });

  it('contact-book update and delete keep the legacy shape { error: "<message>", code }, so their error still comes back as the message string', async () => {
    // No body.error.code on a string: the client hands back body.error, the message.
    expect(await client.contactBooks.update('no-such-book', { name: 'Renamed' })).toEqual({ data: null, error: 'Contact book not found' });
    expect(await client.contactBooks.delete('no-such-book')).toEqual({ data: null, error: 'Contact book not found' });

    const bookId = (await client.contactBooks.create({ name: 'Legacy errors' })).data!.id;
    const invalid = await client.contactBooks.update(bookId, { variables: ['with space'] });
    expect(invalid.data).toBeNull();
    expect(invalid.error).toEqual(expect.stringMatching(/^Invalid request: variables\[0\] /));

    // A book a scheduled campaign uses cannot be deleted: 409, still the message string.
    const sender = await verifiedDomain(server, apiKey, 'client-errors.example.com');
    const campaign = await client.campaigns.create({
      name: 'Holds the book', from: `news@${sender.name}`, subject: 'Hi', contactBookId: bookId,
      html: '<p>Hi</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>', scheduledAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect(campaign.error).toBeNull();
    const refused = await client.contactBooks.delete(bookId);
    expect(refused.data).toBeNull();
    expect(refused.error).toEqual(expect.stringContaining(campaign.data!.id));
    expect((await client.contactBooks.get(bookId)).data).toMatchObject({ id: bookId, name: 'Legacy errors' });
  });
});
