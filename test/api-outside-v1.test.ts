import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE_PATHS } from '../src/mail/links.js';
import { expectApiError } from './helpers/api-error.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// The dashboard's pages are served at /, beside the API under /v1: a client that forgot the /v1
// must learn where the API is, not be sent to a sign-in page it cannot use.

let server: TestServer;
let key: string;

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

beforeAll(async () => {
  server = await startTestServer();
  key = (await server.team()).apiKey;
});
afterAll(() => server.stop());

/** The request as sent, redirects not followed. */
const raw = (path: string, init: RequestInit = {}) => fetch(server.url + path, { redirect: 'manual', ...init });

describe('an API call made outside /v1', () => {
  it('with a key, gets a JSON 404 naming the /v1 call it meant, for reads and writes alike', async () => {
    const list = await server.call('GET', '/emails', { key });
    expectApiError(list, 404, 'NOT_FOUND');
    expect(list.body.error.message).toBe('No route for GET /emails: the API is under /v1 (GET /v1/emails)');

    const send = await server.call('POST', '/emails', { key, body: { to: 'reader@example.org', from: 'hello@example.org', subject: 'Hi', text: 'Hi' } });
    expectApiError(send, 404, 'NOT_FOUND');
    expect(send.body.error.message).toBe('No route for POST /emails: the API is under /v1 (POST /v1/emails)');
    // It took nothing: the team has no email.
    expect((await server.call('GET', '/v1/emails', { key })).body.count).toBe(0);
  });

  it('asking for JSON (Accept: application/json) is an API call too, key or not', async () => {
    const res = await server.call('GET', '/domains/12', { headers: { accept: 'application/json' } });
    expectApiError(res, 404, 'NOT_FOUND');
    expect(res.body.error.message).toBe('No route for GET /domains/12: the API is under /v1 (GET /v1/domains/12)');
  });

  it('a path the API does not have either gets a JSON 404 pointing at /v1 and the reference', async () => {
    for (const path of ['/', '/sendEmail']) {
      const res = await server.call('GET', path, { key });
      expectApiError(res, 404, 'NOT_FOUND');
      expect(res.body.error.message).toBe(`No route for GET ${path}: the API is under /v1 (its reference is at /docs)`);
    }
  });

  it('a browser (no key, asking for pages) is still sent to the sign-in page', async () => {
    for (const accept of [BROWSER_ACCEPT, '*/*']) {
      const res = await raw('/emails', { headers: { accept } });
      expect(res.status, accept).toBe(303);
      expect(res.headers.get('location'), accept).toBe('/login?next=%2Femails');
    }
  });

  it('what answers API clients outside /v1 on purpose still does: /health, /docs and the recipients\' pages', async () => {
    const headers = { authorization: `Bearer ${key}`, accept: 'application/json' };
    expect((await server.call('GET', '/health', { headers })).body).toMatchObject({ status: 'ok' });
    expect((await raw('/docs', { headers })).status).toBe(200);
    // A link with a token that is not ours: the recipients' plain 400 page, whatever the client asked for.
    const unsubscribe = await raw(`${PAGE_PATHS.unsubscribe}/not-a-token`, { headers });
    expect(unsubscribe.status).toBe(400);
    expect(unsubscribe.headers.get('content-type')).toMatch(/^text\/html/);
  });
});
