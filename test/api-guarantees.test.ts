import { randomBytes } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { apiRoutes } from '../src/api/index.js';
import type { Database } from '../src/db/schema.js';
import type { RouteDef } from '../src/http/route.js';
import { createApiKey, revokeApiKey } from '../src/services/api-keys.js';
import { expectApiError } from './helpers/api-error.js';
import {
  bodyRoutes,
  callRoute,
  fillPath,
  pathParams,
  routeName,
  snapshot,
  teamFixture,
  type TeamFixture,
} from './helpers/fixtures.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';

const PREFIXES = ['/v1', '/api/v1'];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const MAX_BODY_BYTES = 2048;

let server: TestServer;
let team: TeamFixture;

beforeAll(async () => {
  server = await startTestServer({ MAX_BODY_BYTES: String(MAX_BODY_BYTES) });
  team = await teamFixture(server);
  await team.ready();
});
afterAll(() => server.stop());

/**
 * Sends requests that must all be refused, the batches of all routes at once, then proves the
 * team's data is as it was: a refused request does nothing.
 */
async function refusedWithoutChange<T>(batches: T[], send: (batch: T) => Promise<void>) {
  const before = await snapshot(team);
  await Promise.all(batches.map(send));
  expect(await snapshot(team), 'a refused request changed the data').toEqual(before);
}

const forEachRouteAndPrefix = (check: (route: RouteDef, prefix: string, what: string) => Promise<void>) =>
  refusedWithoutChange(
    apiRoutes.flatMap((route) => PREFIXES.map((prefix) => ({ route, prefix }))),
    ({ route, prefix }) => check(route, prefix, `${route.method.toUpperCase()} ${prefix}${route.path}`),
  );

/** The first value the schema refuses, to put where it expects something else. */
function refusedValue(schema: z.ZodType, candidates: unknown[]) {
  return candidates.find((value) => !schema.safeParse(value).success);
}
const WRONG_BODY_VALUES: unknown[] = [12345, 'not-valid', true, { not: 'valid' }, ['not-valid'], null];
const WRONG_QUERY_VALUES = ['not-valid', '-1', '0', 'x'.repeat(2000)];

/** Sends a body as a chunked stream, with no Content-Length for the server to trust. */
async function sendChunked(method: string, path: string, key: string, text: string): Promise<CallResult> {
  const bytes = Buffer.from(text);
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 512) controller.enqueue(bytes.subarray(i, i + 512));
      controller.close();
    },
  });
  const init = { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body, duplex: 'half' };
  const response = await fetch(server.url + path, init as RequestInit);
  return { status: response.status, headers: response.headers, body: await response.json() };
}

describe('every endpoint', () => {
  it('is reached by these tests with real ids and a request its schemas accept', async () => {
    for (const route of apiRoutes) {
      const params = await team.params(route);
      if (route.params) expect(route.params.safeParse(params).success, routeName(route)).toBe(true);
      if (route.body) {
        const parsed = route.body.safeParse(await team.body(route));
        expect(parsed.error?.issues ?? [], `${routeName(route)}: add a sample body in test/helpers/fixtures.ts`).toEqual([]);
      }
      if (route.method === 'get') expect((await callRoute(team, route)).status, routeName(route)).toBe(200);
    }
  });

  it('a missing key is refused on every endpoint', async () => {
    await forEachRouteAndPrefix(async (route, prefix, what) => {
      expectApiError(await callRoute(team, route, { prefix, key: undefined }), 401, 'UNAUTHORIZED', what);
    });
  });

  it('a malformed Authorization header is refused on every endpoint', async () => {
    const malformed = [
      '',
      'Bearer',
      `Basic ${Buffer.from(`user:${team.apiKey}`).toString('base64')}`,
      `Token ${team.apiKey}`,
      team.apiKey,
      `Bearer ${team.apiKey} ${team.apiKey}`,
      `Bearer ${'x'.repeat(600)}`,
    ];
    await forEachRouteAndPrefix(async (route, prefix, what) => {
      for (const authorization of malformed) {
        const res = await callRoute(team, route, { prefix, key: undefined, headers: { authorization } });
        expectApiError(res, 401, 'UNAUTHORIZED', `${what} with "${authorization.slice(0, 40)}"`);
      }
    });
  });

  it('an unknown or revoked key is refused on every endpoint with the same answer', async () => {
    const revoked = await createApiKey(server.deps, { teamId: team.teamId });
    await revokeApiKey(server.deps, { id: revoked.id });
    const unknown = [`mr_${randomBytes(32).toString('base64url')}`, `sk_${randomBytes(32).toString('hex')}`];
    await forEachRouteAndPrefix(async (route, prefix, what) => {
      const answers = [];
      for (const key of [revoked.apiKey, ...unknown]) {
        const res = await callRoute(team, route, { prefix, key });
        expectApiError(res, 401, 'UNAUTHORIZED', what);
        answers.push(res.body);
      }
      expect(answers[0], `${what}: a revoked key must answer like an unknown one`).toEqual(answers[1]);
      expect(answers[2], what).toEqual(answers[1]);
    });
  });

  it('the Bearer scheme is accepted in any letter case and spacing', async () => {
    for (const scheme of ['bearer', 'BEARER', 'Bearer ']) {
      const res = await team.call('GET', '/v1/contactBooks', { key: undefined, headers: { authorization: `${scheme} ${team.apiKey}` } });
      expect(res.status, scheme).toBe(200);
    }
  });

  it('a sending-only key is refused on every endpoint that needs full permission', async () => {
    const key = await server.key(team.teamId, 'sending');
    await forEachRouteAndPrefix(async (route, prefix, what) => {
      if ((route.permission ?? 'full') !== 'full') return;
      expectApiError(await callRoute(team, route, { prefix, key }), 403, 'FORBIDDEN', what);
    });
  });

  it('malformed JSON is refused with 400 on every endpoint that takes a body', async () => {
    await refusedWithoutChange(bodyRoutes, async (route) => {
      for (const rawBody of ['{"name": "x",', '{name: 1}', '[1, 2', '"unterminated']) {
        const res = await callRoute(team, route, { rawBody, headers: { 'content-type': 'application/json' } });
        expectApiError(res, 400, 'BAD_REQUEST', `${routeName(route)} with ${rawBody}`);
      }
    });
  });

  it('wrongly typed fields are refused with 400 VALIDATION_ERROR naming every one', async () => {
    await refusedWithoutChange(apiRoutes.filter((r) => r.body || r.query), async (route) => {
      if (route.body instanceof z.ZodObject) {
        const wrong = Object.fromEntries(
          Object.entries(route.body.shape as Record<string, z.ZodType>)
            .map(([field, schema]) => [field, refusedValue(schema, WRONG_BODY_VALUES)] as const)
            .filter(([, value]) => value !== undefined),
        );
        const res = await callRoute(team, route, { body: wrong });
        expectApiError(res, 400, 'VALIDATION_ERROR', routeName(route));
        expectNamed(res, Object.keys(wrong), routeName(route));
      } else if (route.body) {
        const res = await callRoute(team, route, { body: refusedValue(route.body, WRONG_BODY_VALUES) });
        expectApiError(res, 400, 'VALIDATION_ERROR', routeName(route));
        expect(res.body.details.length, routeName(route)).toBeGreaterThan(0);
      }
      if (route.query) {
        const wrong = Object.entries(route.query.shape as Record<string, z.ZodType>)
          .map(([field, schema]) => [field, refusedValue(schema, WRONG_QUERY_VALUES)] as const)
          .filter((entry): entry is readonly [string, string] => entry[1] !== undefined);
        if (wrong.length === 0) return;
        const path = `${await team.path(route)}?${new URLSearchParams(wrong.map(([f, v]) => [f, v]))}`;
        const res = await team.call(route.method.toUpperCase(), path, { body: await team.body(route) });
        expectApiError(res, 400, 'VALIDATION_ERROR', `${routeName(route)} query`);
        expectNamed(res, wrong.map(([field]) => field), `${routeName(route)} query`);
      }
    });
  });

  it('text the database cannot store (NUL, unpaired surrogates) is refused anywhere in the input with 400 naming where', async () => {
    await refusedWithoutChange(apiRoutes, async (route) => {
      const method = route.method.toUpperCase();
      const params = await team.params(route);
      const sample = await team.body(route);
      const body = sample === undefined ? {} : { body: sample };
      for (const name of pathParams(route)) {
        const res = await team.call(method, fillPath(route, { ...params, [name]: `${params[name]}\0` }), body);
        expectApiError(res, 400, 'VALIDATION_ERROR', `${routeName(route)} ${name}`);
        expectNamed(res, [name], routeName(route));
      }
      for (const field of Object.keys(route.query?.shape ?? {})) {
        const res = await team.call(method, `${fillPath(route, params)}?${field}=1%00`, body);
        expectApiError(res, 400, 'VALIDATION_ERROR', `${routeName(route)} ?${field}`);
        expectNamed(res, [field], routeName(route));
      }
      const strings = stringPaths(sample);
      if (strings.length === 0) return;
      for (const poison of ['\0', '\ud800']) {
        const res = await callRoute(team, route, { body: mapStrings(sample, (value) => `${value}${poison}`) });
        expectApiError(res, 400, 'VALIDATION_ERROR', `${routeName(route)} body with ${JSON.stringify(poison)}`);
        expectNamed(res, strings, routeName(route));
      }
    });
  });

  it('no input makes the server fail: hostile values are answered with a 4xx, never a 500', async () => {
    const strings = ['%', '../x', "x'; DROP TABLE contacts; --", '9'.repeat(40), '-1'];
    const values = [...strings, 1e308, 2 ** 53 + 2, 1.5, null, 'x'.repeat(1500)];
    const expectNoFault = (res: CallResult, what: string) => {
      expect(res.status, `${what} → ${JSON.stringify(res.body)}`).toBeLessThan(500);
      if (res.status >= 400) expectApiError(res, res.status, res.body.code, what);
    };
    // A team per endpoint, so endpoints fuzzed at once cannot race on the same rows.
    await Promise.all(
      apiRoutes.map(async (route) => {
        const fuzzed = await teamFixture(server);
        const method = route.method.toUpperCase();
        const params = await fuzzed.params(route);
        const sample = await fuzzed.body(route);
        const body = sample === undefined ? {} : { body: sample };
        for (const value of strings) {
          for (const name of pathParams(route)) {
            const res = await fuzzed.call(method, fillPath(route, { ...params, [name]: value }), body);
            expectNoFault(res, `${routeName(route)} ${name}=${value}`);
          }
          for (const field of Object.keys(route.query?.shape ?? {})) {
            const path = `${fillPath(route, params)}?${new URLSearchParams({ [field]: value })}`;
            expectNoFault(await fuzzed.call(method, path, body), `${routeName(route)} ?${field}=${value}`);
          }
        }
        if (!route.body) return;
        const fields = route.body instanceof z.ZodObject ? Object.keys(route.body.shape) : [];
        for (const value of values) {
          const what = `${routeName(route)} with ${JSON.stringify(value).slice(0, 40)}`;
          if (fields.length === 0) expectNoFault(await callRoute(fuzzed, route, { body: value }), what);
          for (const field of fields) {
            const res = await callRoute(fuzzed, route, { body: { ...(sample as object), [field]: value } });
            expectNoFault(res, `${what} as ${field}`);
          }
        }
      }),
    );
  });

  it('a body that is not JSON is refused with 415 on every endpoint that takes one', async () => {
    const bodies = [
      { type: 'application/x-www-form-urlencoded', rawBody: 'name=x&email=a%40example.com' },
      { type: 'text/plain', rawBody: '{"name":"x"}' },
      { type: 'multipart/form-data; boundary=b', rawBody: '--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--b--' },
    ];
    await refusedWithoutChange(bodyRoutes, async (route) => {
      for (const { type, rawBody } of bodies) {
        const res = await callRoute(team, route, { rawBody, headers: { 'content-type': type } });
        expectApiError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', `${routeName(route)} as ${type}`);
      }
    });
  });

  it('a body over MAX_BODY_BYTES is refused with 413, whether its length is declared or chunked', async () => {
    const oversized = JSON.stringify({ name: 'Too big', pad: 'x'.repeat(MAX_BODY_BYTES) });
    await refusedWithoutChange(bodyRoutes, async (route) => {
      const path = await team.path(route);
      const declared = await team.call(route.method.toUpperCase(), path, {
        rawBody: oversized,
        headers: { 'content-type': 'application/json' },
      });
      expectApiError(declared, 413, 'PAYLOAD_TOO_LARGE', `${routeName(route)} with Content-Length`);
      const chunked = await sendChunked(route.method.toUpperCase(), path, team.apiKey, oversized);
      expectApiError(chunked, 413, 'PAYLOAD_TOO_LARGE', `${routeName(route)} chunked`);
      // Read only once the key is known, so the team is charged for it like for any request.
      for (const res of [declared, chunked]) expect(res.headers.get('x-ratelimit-remaining'), routeName(route)).toMatch(/^\d+$/);
    });
  });

  it('a body of exactly MAX_BODY_BYTES is accepted', async () => {
    for (const route of bodyRoutes) {
      const fresh = await teamFixture(server);
      const sample = await fresh.body(route);
      if (!sample || typeof sample !== 'object' || Array.isArray(sample)) continue;
      const unpadded = Buffer.byteLength(JSON.stringify({ ...sample, pad: '' }));
      const rawBody = JSON.stringify({ ...sample, pad: 'x'.repeat(MAX_BODY_BYTES - unpadded) });
      expect(Buffer.byteLength(rawBody)).toBe(MAX_BODY_BYTES);
      const res = await callRoute(fresh, route, { rawBody, headers: { 'content-type': 'application/json' } });
      expect(res.status, `${routeName(route)}: ${JSON.stringify(res.body)}`).toBe(200);
    }
  });
});

/** Where the strings are in a JSON value, as validation details name them. */
function stringPaths(value: unknown, path: string[] = []): string[] {
  if (typeof value === 'string') return [path.join('.') || '(body)'];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) => stringPaths(item, [...path, key]));
}

function mapStrings(value: unknown, map: (value: string) => string): unknown {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapStrings(item, map)]));
}

function expectNamed(res: CallResult, fields: string[], what: string) {
  const paths: string[] = res.body.details.map((detail: { path: string }) => detail.path);
  for (const field of fields) {
    expect(paths.some((path) => path === field || path.startsWith(`${field}.`)), `${what}: details ${paths} must name ${field}`).toBe(true);
  }
}

describe('routing', () => {
  it('an unknown route answers 404 JSON, under /v1, /api/v1 and elsewhere', async () => {
    const unknown = ['', '/', '/nothing-here', '/contactBooks/a/b/c/d/e', '/contactBooks/', '/CONTACTBOOKS'];
    await refusedWithoutChange(PREFIXES.flatMap((prefix) => unknown.map((path) => prefix + path)), async (path) => {
      for (const method of METHODS) expectApiError(await team.call(method, path), 404, 'NOT_FOUND', `${method} ${path}`);
    });
    for (const path of ['/', '/nothing-here', '/v2/contactBooks', '/v1contactBooks', '/api/contactBooks']) {
      expectApiError(await server.call('GET', path), 404, 'NOT_FOUND', path);
    }
  });

  it('a wrong method on a known path answers 405 JSON with an Allow header, under /v1 and /api/v1', async () => {
    const byPath = new Map(apiRoutes.map((route) => [route.path, route]));
    await refusedWithoutChange([...byPath.values()], async (route) => {
      const concrete = fillPath(route, await team.params(route), '');
      // A parameter route may serve the same concrete path (`/contacts/{contactId}` serves `/contacts/bulk`).
      const served = new Set(
        apiRoutes
          .filter((r) => new RegExp(`^${r.path.replace(/\{\w+\}/g, '[^/]+')}$`).test(concrete))
          .map((r) => r.method.toUpperCase()),
      );
      if (served.has('GET')) served.add('HEAD');
      for (const prefix of PREFIXES) {
        for (const method of [...METHODS, 'OPTIONS'].filter((m) => !served.has(m))) {
          const res = await team.call(method, prefix + concrete);
          expectApiError(res, 405, 'METHOD_NOT_ALLOWED', `${method} ${prefix}${route.path}`);
          expect(new Set(res.headers.get('allow')?.split(/,\s*/)), `${method} ${prefix}${route.path}`).toEqual(served);
        }
      }
    });
  });

  it('/api/v1 serves exactly what /v1 serves', async () => {
    for (const route of apiRoutes.filter((r) => r.method === 'get')) {
      const [v1, api] = await Promise.all(PREFIXES.map((prefix) => callRoute(team, route, { prefix })));
      expect({ status: api!.status, body: api!.body }, routeName(route)).toEqual({ status: v1!.status, body: v1!.body });
    }
    const created = await Promise.all(PREFIXES.map((prefix) => team.call('POST', `${prefix}/contactBooks`, { body: { name: prefix } })));
    for (const res of created) expect(res.status).toBe(200);
    const [fromV1, fromApi] = created.map((res) => res.body);
    expect((await team.call('GET', `/api/v1/contactBooks/${fromV1.id}`)).body).toEqual(fromV1);
    expect((await team.call('GET', `/v1/contactBooks/${fromApi.id}`)).body).toEqual(fromApi);
    for (const { id } of [fromV1, fromApi]) expect((await team.call('DELETE', `/v1/contactBooks/${id}`)).status).toBe(200);
  });

  it('HEAD on every GET endpoint answers like GET, without a body', async () => {
    for (const route of apiRoutes.filter((r) => r.method === 'get')) {
      const path = await team.path(route);
      const [get, head] = await Promise.all([team.call('GET', path), team.call('HEAD', path)]);
      expect(head.status, routeName(route)).toBe(get.status);
      expect(head.headers.get('content-type'), routeName(route)).toBe(get.headers.get('content-type'));
      expect(head.body, routeName(route)).toBe('');
    }
  });
});

describe('request ids and faults', () => {
  it('every response carries an X-Request-Id, echoing a sane incoming one', async () => {
    const responses = await Promise.all([
      server.call('GET', '/health'),
      server.call('GET', '/docs'),
      server.call('GET', '/v1/openapi.json'),
      server.call('GET', '/nothing'),
      server.call('GET', '/v1/contactBooks'),
      team.call('GET', '/v1/contactBooks'),
      team.call('GET', '/v1/contactBooks/absent'),
      team.call('PUT', '/v1/contactBooks'),
      team.call('POST', '/v1/contactBooks', { rawBody: '{', headers: { 'content-type': 'application/json' } }),
      team.call('HEAD', '/v1/contactBooks'),
    ]);
    const ids = responses.map((res) => res.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(/^[\w.:-]{8,128}$/);
    expect(new Set(ids).size).toBe(ids.length);

    for (const sane of ['req-123', 'a1b2c3d4.e5:f6_g7', 'x'.repeat(128)]) {
      const res = await team.call('GET', '/v1/contactBooks', { headers: { 'x-request-id': sane } });
      expect(res.headers.get('x-request-id')).toBe(sane);
    }
    for (const insane of ['has space', '<script>', 'x'.repeat(129), 'line\\nbreak']) {
      const res = await team.call('GET', '/v1/nothing', { headers: { 'x-request-id': insane } });
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('a server fault answers 500 without leaking its cause', async () => {
    const secret = `s3cret-${randomBytes(6).toString('hex')}`;
    const unreachable = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: `postgres://mailroom:${secret}@127.0.0.1:1/nowhere` }) }),
    });
    const { db } = server.deps;
    server.deps.db = unreachable;
    try {
      for (const route of apiRoutes) {
        const res = await callRoute(team, route, { headers: { 'x-request-id': 'fault-1' } });
        expectApiError(res, 500, 'INTERNAL_SERVER_ERROR', routeName(route));
        expect(res.body.error, routeName(route)).toContain('fault-1');
        for (const leak of [secret, 'ECONNREFUSED', '127.0.0.1', ' at ', '.ts:', 'node_modules', 'Error:']) {
          expect(JSON.stringify(res.body), `${routeName(route)} leaks ${leak}`).not.toContain(leak);
        }
      }
    } finally {
      server.deps.db = db;
      await unreachable.destroy();
    }
  });
});
