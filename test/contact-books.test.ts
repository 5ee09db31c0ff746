import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError, expectLegacyApiError } from './helpers/api-error.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let key: string;

beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey: key } = await server.team());
});
afterAll(() => server.stop());

describe('contact books', () => {
  it('a created book is returned whole, with defaults and an exact contact count', async () => {
    const created = await server.call('POST', '/v1/contactBooks', { key, body: { name: 'Newsletter' } });
    expect(created.status).toBe(200);
    expect(created.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(created.body).toMatchObject({
      name: 'Newsletter',
      emoji: '📙',
      doubleOptInEnabled: false,
      variables: [],
      properties: {},
      _count: { contacts: 0 },
    });
    expect(created.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const fetched = await server.call('GET', `/api/v1/contactBooks/${created.body.id}`, { key });
    expect(fetched.body).toEqual(created.body);
  });

  it('variables are validated and a PATCH replaces the list', async () => {
    const { body: book } = await server.call('POST', '/v1/contactBooks', { key, body: { name: 'Vars', variables: ['plan'] } });
    const patched = await server.call('PATCH', `/v1/contactBooks/${book.id}`, { key, body: { variables: ['company', 'city'] } });
    expect(patched.body.variables).toEqual(['company', 'city']);
    for (const bad of [['1abc'], ['email'], ['Plan', 'plan'], ['with space']]) {
      const res = await server.call('PATCH', `/v1/contactBooks/${book.id}`, { key, body: { variables: bad } });
      // PATCH of a contact book keeps the interface description's older error shape.
      expectLegacyApiError(res, 400, 'VALIDATION_ERROR', JSON.stringify(bad));
      expect(res.body.details[0].path).toMatch(/^variables\[\d\]$/);
    }
    expect((await server.call('GET', `/v1/contactBooks/${book.id}`, { key })).body.variables).toEqual(['company', 'city']);
  });

  it('double opt-in cannot be enabled without a verified sending domain', async () => {
    const { body: book } = await server.call('POST', '/v1/contactBooks', { key, body: { name: 'DOI' } });
    const noFrom = await server.call('PATCH', `/v1/contactBooks/${book.id}`, { key, body: { doubleOptInEnabled: true } });
    expectLegacyApiError(noFrom, 400, 'VALIDATION_ERROR', 'no doubleOptInFrom');
    expect(noFrom.body.details[0].path).toBe('doubleOptInFrom');
    const unknown = await server.call('PATCH', `/v1/contactBooks/${book.id}`, {
      key,
      body: { doubleOptInEnabled: true, doubleOptInFrom: 'News <news@example.com>' },
    });
    expectLegacyApiError(unknown, 400, 'VALIDATION_ERROR', 'an unverified doubleOptInFrom');
    expect(unknown.body.error).toContain('example.com');
    const noPlaceholder = await server.call('PATCH', `/v1/contactBooks/${book.id}`, {
      key,
      body: { doubleOptInContent: '<p>Confirm please</p>' },
    });
    expectLegacyApiError(noPlaceholder, 400, 'VALIDATION_ERROR', 'content without {{doubleOptInUrl}}');
    expect(noPlaceholder.body.error).toContain('{{doubleOptInUrl}}');
    const after = await server.call('GET', `/v1/contactBooks/${book.id}`, { key });
    expect(after.body).toEqual(book);
  });

  it('a deleted book is gone with its contacts', async () => {
    const { body: book } = await server.call('POST', '/v1/contactBooks', { key, body: { name: 'Gone' } });
    const { body: kept } = await server.call('POST', '/v1/contactBooks', { key, body: { name: 'Kept' } });
    for (const target of [book, kept]) {
      const bulk = [{ email: 'a@example.com' }, { email: 'b@example.com' }];
      expect((await server.call('POST', `/v1/contactBooks/${target.id}/contacts/bulk`, { key, body: bulk })).body.count).toBe(2);
    }
    const res = await server.call('DELETE', `/v1/contactBooks/${book.id}`, { key });
    expect(res.body).toMatchObject({ id: book.id, success: true, message: 'Contact book deleted with its 2 contacts' });
    const left = await server.deps.db.selectFrom('contacts').select(['contact_book_id']).execute();
    expect(left.map((row) => row.contact_book_id)).toEqual([kept.id, kept.id]);
    // The same missing book: GET answers in the standard shape, DELETE in the legacy one.
    const fetched = await server.call('GET', `/v1/contactBooks/${book.id}`, { key });
    expectApiError(fetched, 404, 'NOT_FOUND', 'GET a deleted book');
    expect(fetched.body.error.message).toBe('Contact book not found');
    const again = await server.call('DELETE', `/v1/contactBooks/${book.id}`, { key });
    expectLegacyApiError(again, 404, 'NOT_FOUND', 'DELETE a deleted book');
    expect(again.body.error).toBe('Contact book not found');
  });
});
