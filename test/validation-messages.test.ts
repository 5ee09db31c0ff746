import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { errorFields, expectApiError, expectRouteError } from './helpers/api-error.js';
import { verifiedDomain } from './helpers/domains.js';
import { bodyRoutes, routeName, teamFixture, type TeamFixture } from './helpers/fixtures.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';

// What a 400 says, read as a newcomer reads it: the field, then what is wrong with it in words.

let server: TestServer;
let team: TeamFixture;
let from: string;

beforeAll(async () => {
  server = await startTestServer({ REGIONS: 'us-east-1,eu-west-1' });
  team = await teamFixture(server, 'Messages');
  from = `hello@${(await verifiedDomain(server, team.apiKey, 'messages.test')).name}`;
});
afterAll(() => server.stop());

type Detail = { path: string; message: string };

/** The 400's summary and details, after checking it is the one error shape. */
function refusal(res: CallResult): { message: string; details: Detail[] } {
  expectApiError(res, 400, 'VALIDATION_ERROR');
  return { message: res.body.error.message, details: res.body.error.details };
}

const post = (path: string, body: unknown) => team.call('POST', path, { body });
const email = (fields: Record<string, unknown>) => ({ from, to: 'reader@example.org', subject: 'Hello', text: 'Hi', ...fields });

describe('a refused request says what is wrong in words', () => {
  it('a missing field is "<field> is required", also where it may be a string or a list (to)', async () => {
    const { to: _left, ...withoutTo } = email({});
    expect(refusal(await post('/v1/emails', withoutTo))).toEqual({ message: 'Invalid request: to is required', details: [{ path: 'to', message: 'is required' }] });
    expect(refusal(await post('/v1/emails/batch', [email({}), withoutTo])).details).toEqual([{ path: '[1].to', message: 'is required' }]);
    expect(refusal(await post('/v1/domains', {})).message).toBe('Invalid request: name is required');
  });

  it('an email with neither html nor text is one problem, on html, naming what else would do', async () => {
    const { text: _left, ...withoutBody } = email({});
    expect(refusal(await post('/v1/emails', withoutBody))).toEqual({
      message: 'Invalid request: html is required unless text or templateId is given',
      details: [{ path: 'html', message: 'is required unless text or templateId is given' }],
    });
    expect(refusal(await post('/v1/templates', { name: 'No body', subject: 'Hi' })).details).toEqual([{ path: 'html', message: 'is required unless text or content is given' }]);
    const book = await team.expectOk('POST', '/v1/contactBooks', { name: 'Readers' });
    const campaign = refusal(await post('/v1/campaigns', { name: 'No body', from, subject: 'Hi', contactBookId: book.id }));
    expect(campaign.details).toEqual([{ path: 'html', message: 'is required unless content is given' }]);
  });

  it('a value of the wrong type says the type it must be, a list naming the type of its items', async () => {
    const cases: [string, unknown, Detail[]][] = [
      ['/v1/emails', email({ to: 5 }), [{ path: 'to', message: 'must be a string or an array of strings' }]],
      ['/v1/emails', email({ to: ['reader@example.org', 5] }), [{ path: 'to[1]', message: 'must be a string' }]],
      ['/v1/emails', email({ attachments: 'report.pdf' }), [{ path: 'attachments', message: 'must be an array of objects' }]],
      ['/v1/emails', email({ subject: 42 }), [{ path: 'subject', message: 'must be a string' }]],
      ['/v1/contactBooks', { name: 'Book', variables: 'plan' }, [{ path: 'variables', message: 'must be an array of strings' }]],
      ['/v1/emails/batch', email({}), [{ path: '(body)', message: 'must be an array of objects' }]],
    ];
    for (const [path, body, details] of cases) expect(refusal(await post(path, body)).details, JSON.stringify(body)).toEqual(details);
    expect(refusal(await post('/v1/emails', 'hello')).message).toBe('Invalid request: the body must be an object');
  });

  it('a value outside a fixed set lists the choices; a bad key of a map says what keys may be', async () => {
    expect(refusal(await post('/v1/domains', { name: 'example.org', region: 'mars' })).message).toBe('Invalid request: region must be one of: us-east-1, eu-west-1');
    expect(refusal(await team.call('GET', '/v1/emails?status=SENDING')).details).toEqual([
      { path: 'status', message: 'must be one of: SCHEDULED, QUEUED, SENT, DELIVERY_DELAYED, DELIVERED, BOUNCED, COMPLAINED, OPENED, CLICKED, CANCELLED, FAILED, REJECTED, SUPPRESSED' },
    ]);
    expect(refusal(await post('/v1/emails', email({ headers: { 'X Bad': 'x' } }))).details).toEqual([
      { path: 'headers.X Bad', message: 'header names are 1 to 100 printable ASCII characters without spaces or colons' },
    ]);
  });

  it('no endpoint answers a wrong value of any field with a message in zod\'s words ("Invalid input", "expected string, received number")', async () => {
    const zodWords = /Invalid|expected .* received/;
    const seen: string[] = [];
    for (const route of bodyRoutes) {
      const schema = route.body as z.ZodType & { shape?: Record<string, unknown>; element?: { shape?: Record<string, unknown> } };
      const fields = Object.keys(schema.shape ?? schema.element?.shape ?? {});
      const path = await team.path(route);
      for (const wrong of [5, true, 'x', [5], {}, null]) {
        const object = Object.fromEntries(fields.map((field) => [field, wrong]));
        const res = await team.call(route.method.toUpperCase(), path, { body: schema.element ? [object] : object });
        if (res.status !== 400) continue;
        expectRouteError(route, res, 400, 'VALIDATION_ERROR');
        const { message, details = [] } = errorFields(res);
        for (const detail of details) seen.push(`${routeName(route)} ${JSON.stringify(wrong)}: ${detail.path} ${detail.message}`);
        expect(message.replace(/^Invalid request: /, ''), `${routeName(route)} with every field ${JSON.stringify(wrong)}`).not.toMatch(zodWords);
      }
    }
    expect(seen.filter((line) => zodWords.test(line.slice(line.indexOf(': ') + 2)))).toEqual([]);
    // The sweep reached the checks it is about: unions, lists and maps among them.
    expect(seen.some((line) => line.includes('to must be a string or an array of strings'))).toBe(true);
    expect(seen.some((line) => line.includes('must be an array of strings'))).toBe(true);
  });
});
