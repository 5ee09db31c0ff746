import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { apiRoutes } from '../src/api/index.js';
import type { Database } from '../src/db/schema.js';
import type { ErrorCode } from '../src/errors.js';
import type { RouteDef } from '../src/http/route.js';
import { createApiKey, revokeApiKey } from '../src/services/api-keys.js';
import {
  ERROR_STATUS,
  errorFields,
  expectApiError,
  expectLegacyApiError,
  expectRequestError,
  expectRouteError,
  LEGACY_ERROR_ROUTES,
  pythonGet,
  requestHasLegacyErrors,
  routeHasLegacyErrors,
} from './helpers/api-error.js';
import {
  absentId,
  bodyRoutes,
  callRoute,
  fillPath,
  pathParams,
  routeName,
  snapshot,
  teamFixture,
  type TeamFixture,
} from './helpers/fixtures.js';
import { sendWire, startTestServer, type CallResult, type TestServer, type WireRequest } from './helpers/server.js';

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

/** A body the route refuses: each field it knows wrongly typed (and which), or, for a body that is not an object, a wrong value. */
function wrongBody(route: RouteDef): { body: unknown; fields?: string[] } {
  if (!(route.body instanceof z.ZodObject)) return { body: refusedValue(route.body!, WRONG_BODY_VALUES) };
  const body = Object.fromEntries(
    Object.entries(route.body.shape as Record<string, z.ZodType>)
      .map(([field, schema]) => [field, refusedValue(schema, WRONG_BODY_VALUES)] as const)
      .filter(([, value]) => value !== undefined),
  );
  return { body, fields: Object.keys(body) };
}

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
      expectRouteError(route, await callRoute(team, route, { prefix, key: undefined }), 401, 'UNAUTHORIZED', what);
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
        expectRouteError(route, res, 401, 'UNAUTHORIZED', `${what} with "${authorization.slice(0, 40)}"`);
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
        expectRouteError(route, res, 401, 'UNAUTHORIZED', what);
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
      expectRouteError(route, await callRoute(team, route, { prefix, key }), 403, 'FORBIDDEN', what);
    });
  });

  it('malformed JSON is refused with 400 on every endpoint that takes a body', async () => {
    await refusedWithoutChange(bodyRoutes, async (route) => {
      for (const rawBody of ['{"name": "x",', '{name: 1}', '[1, 2', '"unterminated']) {
        const res = await callRoute(team, route, { rawBody, headers: { 'content-type': 'application/json' } });
        expectRouteError(route, res, 400, 'BAD_REQUEST', `${routeName(route)} with ${rawBody}`);
      }
    });
  });

  it('wrongly typed fields are refused with 400 VALIDATION_ERROR naming every one', async () => {
    await refusedWithoutChange(apiRoutes.filter((r) => r.body || r.query), async (route) => {
      if (route.body) {
        const wrong = wrongBody(route);
        const res = await callRoute(team, route, { body: wrong.body });
        expectRouteError(route, res, 400, 'VALIDATION_ERROR', routeName(route));
        if (wrong.fields) expectNamed(res, wrong.fields, routeName(route));
        else expect(errorFields(res).details?.length, routeName(route)).toBeGreaterThan(0);
      }
      if (route.query) {
        const wrong = Object.entries(route.query.shape as Record<string, z.ZodType>)
          .map(([field, schema]) => [field, refusedValue(schema, WRONG_QUERY_VALUES)] as const)
          .filter((entry): entry is readonly [string, string] => entry[1] !== undefined);
        if (wrong.length === 0) return;
        const path = `${await team.path(route)}?${new URLSearchParams(wrong.map(([f, v]) => [f, v]))}`;
        const res = await team.call(route.method.toUpperCase(), path, { body: await team.body(route) });
        expectRouteError(route, res, 400, 'VALIDATION_ERROR', `${routeName(route)} query`);
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
        expectRouteError(route, res, 400, 'VALIDATION_ERROR', `${routeName(route)} ${name}`);
        expectNamed(res, [name], routeName(route));
      }
      for (const field of Object.keys(route.query?.shape ?? {})) {
        const res = await team.call(method, `${fillPath(route, params)}?${field}=1%00`, body);
        expectRouteError(route, res, 400, 'VALIDATION_ERROR', `${routeName(route)} ?${field}`);
        expectNamed(res, [field], routeName(route));
      }
      const strings = stringPaths(sample);
      if (strings.length === 0) return;
      for (const poison of ['\0', '\ud800']) {
        const res = await callRoute(team, route, { body: mapStrings(sample, (value) => `${value}${poison}`) });
        expectRouteError(route, res, 400, 'VALIDATION_ERROR', `${routeName(route)} body with ${JSON.stringify(poison)}`);
        expectNamed(res, strings, routeName(route));
      }
    });
  });

  it('no input makes the server fail: hostile values are answered with a 4xx, never a 500', async () => {
    const strings = ['%', '../x', "x'; DROP TABLE contacts; --", '9'.repeat(40), '-1'];
    const values = [...strings, 1e308, 2 ** 53 + 2, 1.5, null, 'x'.repeat(1500)];
    // The shape is read from the request actually sent: a hostile id may make it miss the route.
    const expectNoFault = (method: string, path: string, res: CallResult, what: string) => {
      expect(res.status, `${what} → ${JSON.stringify(res.body)}`).toBeLessThan(500);
      if (res.status < 400) return;
      const { code } = errorFields(res);
      expect(ERROR_STATUS[code as ErrorCode], `${what}: code ${code} with status ${res.status}`).toBe(res.status);
      expectRequestError(method, path, res, res.status, code as ErrorCode, what);
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
            const path = fillPath(route, { ...params, [name]: value });
            expectNoFault(method, path, await fuzzed.call(method, path, body), `${routeName(route)} ${name}=${value}`);
          }
          for (const field of Object.keys(route.query?.shape ?? {})) {
            const path = `${fillPath(route, params)}?${new URLSearchParams({ [field]: value })}`;
            expectNoFault(method, path, await fuzzed.call(method, path, body), `${routeName(route)} ?${field}=${value}`);
          }
        }
        if (!route.body) return;
        const fields = route.body instanceof z.ZodObject ? Object.keys(route.body.shape) : [];
        const path = fillPath(route, params);
        for (const value of values) {
          const what = `${routeName(route)} with ${JSON.stringify(value).slice(0, 40)}`;
          if (fields.length === 0) expectNoFault(method, path, await callRoute(fuzzed, route, { body: value }), what);
          for (const field of fields) {
            const res = await callRoute(fuzzed, route, { body: { ...(sample as object), [field]: value } });
            expectNoFault(method, path, res, `${what} as ${field}`);
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
        expectRouteError(route, res, 415, 'UNSUPPORTED_MEDIA_TYPE', `${routeName(route)} as ${type}`);
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
      expectRouteError(route, declared, 413, 'PAYLOAD_TOO_LARGE', `${routeName(route)} with Content-Length`);
      const chunked = await sendChunked(route.method.toUpperCase(), path, team.apiKey, oversized);
      expectRouteError(route, chunked, 413, 'PAYLOAD_TOO_LARGE', `${routeName(route)} chunked`);
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
      expect(res.status, `${routeName(route)}: ${JSON.stringify(res.body)}`).toBe(route.accepted ? 202 : 200);
    }
  });
});

/** Where the strings are in a JSON value, as validation details name them. */
/** Where each string of the value is, named as errors name it: `attachments[0].filename`. */
function stringPaths(value: unknown, path = ''): string[] {
  if (typeof value === 'string') return [path || '(body)'];
  if (typeof value !== 'object' || value === null) return [];
  if (Array.isArray(value)) return value.flatMap((item, index) => stringPaths(item, `${path}[${index}]`));
  return Object.entries(value).flatMap(([key, item]) => stringPaths(item, path ? `${path}.${key}` : key));
}

function mapStrings(value: unknown, map: (value: string) => string): unknown {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mapStrings(item, map)]));
}

function expectNamed(res: CallResult, fields: string[], what: string) {
  const paths: string[] = (errorFields(res).details ?? []).map((detail) => detail.path);
  for (const field of fields) {
    expect(paths.some((path) => path === field || path.startsWith(`${field}.`) || path.startsWith(`${field}[`)), `${what}: details ${paths} must name ${field}`).toBe(true);
  }
}

// ---------------------------------------------------------------------------------------------
// The error shape, route by route and class by class: what the official clients read.

/** A request as sent on the wire, so it can be sent again, by Python too. */
/** One way a route refuses a call: the request, and the answer it must get. */
type Refusal = { route: RouteDef; prefix: string; kind: string; status: number; code: ErrorCode; legacy: boolean; request: WireRequest };
type Refused = Refusal & { res: CallResult };

/** The classes of error every route is sent, where it can produce them (a GET reads no body). */
const ERROR_KINDS = [
  'missing key', 'invalid key', 'sending-only key', 'absent id', 'invalid path id', 'invalid query', 'invalid body',
  'malformed JSON', 'non-JSON body', 'oversized body', 'wrong method',
] as const;

/** Every way this route can be refused, under this prefix, each with the answer it must get. */
async function refusalsOf(route: RouteDef, prefix: string, sendingKey: string): Promise<Refusal[]> {
  const method = route.method.toUpperCase();
  const params = await team.params(route);
  const path = fillPath(route, params, prefix);
  const sample = await team.body(route);
  const refusals: Refusal[] = [];
  const add = (
    kind: (typeof ERROR_KINDS)[number],
    status: number,
    code: ErrorCode,
    change: { key?: string | null; method?: string; path?: string; body?: string | null; type?: string } = {},
  ) => {
    const key = change.key === undefined ? team.apiKey : change.key;
    const body = change.body === undefined ? (sample === undefined ? undefined : JSON.stringify(sample)) : (change.body ?? undefined);
    const headers: Record<string, string> = {};
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = change.type ?? 'application/json';
    // A wrong method is answered for the path, not for the route: never in the legacy shape.
    const legacy = routeHasLegacyErrors(route) && kind !== 'wrong method';
    const request = { method: change.method ?? method, path: change.path ?? path, headers, ...(body === undefined ? {} : { body }) };
    refusals.push({ route, prefix, kind, status, code, legacy, request });
  };

  add('missing key', 401, 'UNAUTHORIZED', { key: null });
  add('invalid key', 401, 'UNAUTHORIZED', { key: `mr_${randomBytes(32).toString('base64url')}` });
  if ((route.permission ?? 'full') === 'full') add('sending-only key', 403, 'FORBIDDEN', { key: sendingKey });
  const names = pathParams(route);
  if (names.length > 0) {
    add('absent id', 404, 'NOT_FOUND', { path: fillPath(route, Object.fromEntries(names.map((name) => [name, absentId(route, name)])), prefix) });
    add('invalid path id', 400, 'VALIDATION_ERROR', { path: fillPath(route, { ...params, [names[0]!]: `${params[names[0]!]}\0` }, prefix) });
  }
  if (route.query) {
    const wrong = Object.entries(route.query.shape as Record<string, z.ZodType>)
      .map(([field, schema]) => [field, refusedValue(schema, WRONG_QUERY_VALUES)] as const)
      .filter((entry): entry is readonly [string, string] => entry[1] !== undefined);
    if (wrong.length > 0) add('invalid query', 400, 'VALIDATION_ERROR', { path: `${path}?${new URLSearchParams(wrong.map(([f, v]) => [f, v]))}` });
  }
  if (route.body) add('invalid body', 400, 'VALIDATION_ERROR', { body: JSON.stringify(wrongBody(route).body) });
  if (method !== 'GET') {
    add('malformed JSON', 400, 'BAD_REQUEST', { body: '{"name": "x",' });
    add('non-JSON body', 415, 'UNSUPPORTED_MEDIA_TYPE', { body: 'name=x&email=a%40example.com', type: 'application/x-www-form-urlencoded' });
    add('oversized body', 413, 'PAYLOAD_TOO_LARGE', { body: JSON.stringify({ name: 'Too big', pad: 'x'.repeat(MAX_BODY_BYTES) }) });
  }
  const concrete = fillPath(route, params, '');
  const served = new Set(apiRoutes.filter((r) => new RegExp(`^${r.path.replace(/\{\w+\}/g, '[^/]+')}$`).test(concrete)).map((r) => r.method.toUpperCase()));
  const unserved = [...METHODS, 'OPTIONS'].find((m) => !served.has(m) && m !== 'GET')!;
  add('wrong method', 405, 'METHOD_NOT_ALLOWED', { method: unserved, body: null });
  return refusals;
}

let refusedOnce: Promise<Refused[]> | undefined;
/** Every refusal of every route under both prefixes, sent once (the tests below share the answers); nothing changes. */
function everyRefusal(): Promise<Refused[]> {
  refusedOnce ??= (async () => {
    const sendingKey = await server.key(team.teamId, 'sending');
    const refused: Refused[] = [];
    await refusedWithoutChange(
      apiRoutes.flatMap((route) => PREFIXES.map((prefix) => ({ route, prefix }))),
      async ({ route, prefix }) => {
        for (const refusal of await refusalsOf(route, prefix, sendingKey)) refused.push({ ...refusal, res: await sendWire(server.port, refusal.request) });
      },
    );
    return refused;
  })();
  return refusedOnce;
}

const describeRefusal = (r: Refusal) => `${routeName(r.route)} under ${r.prefix}, ${r.kind}: ${r.request.method} ${r.request.path.slice(0, 120)}`;

/** Whether python3 runs here; only the replay through it is skipped when it does not. */
const PYTHON = spawnSync('python3', ['-c', 'import json, urllib.request'], { stdio: 'ignore' }).status === 0;

/** The official Python client's reading of an error body, in Python, for each request. */
const PYTHON_READER = `
import json, sys, urllib.request, urllib.error
base = sys.argv[1]
out = []
for spec in json.load(sys.stdin):
    data = spec.get("body")
    request = urllib.request.Request(base + spec["path"], data=None if data is None else data.encode("utf-8"), method=spec["method"], headers=spec["headers"])
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            out.append({"status": response.status, "unexpected": "success"})
            continue
    except urllib.error.HTTPError as error:
        status = error.code
        body = json.loads(error.read().decode("utf-8"))
    try:
        code = body.get("error").get("code")
        message = body.get("error").get("message")
        out.append({"status": status, "code": code, "codeType": type(code).__name__, "messageType": type(message).__name__})
    except AttributeError as error:
        out.append({"status": status, "attributeError": str(error)})
print(json.dumps(out))
`;

/** Runs PYTHON_READER over the requests against the server; asynchronous, so the server in this process answers meanwhile. */
function pythonReads(requests: WireRequest[]): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const child = execFile('python3', ['-c', PYTHON_READER, server.url], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`python3 failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    });
    // urllib percent-encodes nothing itself: the paths go as sent by Node.
    child.stdin!.end(JSON.stringify(requests));
  });
}

describe('the error shape', () => {
  it('every route answers each class of error it can produce in the standard shape { error: { code, message } }, except contact-book PATCH and DELETE, which answer every one in the legacy shape { error: "<message>", code }', async () => {
    const refused = await everyRefusal();
    for (const r of refused) {
      (r.legacy ? expectLegacyApiError : expectApiError)(r.res, r.status, r.code, describeRefusal(r));
      // The request alone says which shape it gets, as the server reads it.
      expect(requestHasLegacyErrors(r.request.method, r.request.path), describeRefusal(r)).toBe(r.legacy);
    }

    // Which classes were reached where: every route gets the key classes and a wrong method, every
    // write the body classes, every route with an id the id classes.
    const reached = (route: RouteDef) => [...new Set(refused.filter((r) => r.route === route).map((r) => r.kind))];
    for (const route of apiRoutes) {
      const kinds = reached(route);
      expect(kinds, routeName(route)).toEqual(expect.arrayContaining(['missing key', 'invalid key', 'wrong method']));
      if ((route.permission ?? 'full') === 'full') expect(kinds, routeName(route)).toContain('sending-only key');
      if (pathParams(route).length > 0) expect(kinds, routeName(route)).toEqual(expect.arrayContaining(['absent id', 'invalid path id']));
      if (route.body) expect(kinds, routeName(route)).toContain('invalid body');
      if (route.method !== 'get') expect(kinds, routeName(route)).toEqual(expect.arrayContaining(['malformed JSON', 'non-JSON body', 'oversized body']));
      expect(refused.filter((r) => r.route === route).map((r) => r.prefix), routeName(route)).toEqual(expect.arrayContaining(PREFIXES));
    }
    // The exception is exactly the two calls, each with every class a write of one book can produce.
    const legacy = Object.fromEntries(
      LEGACY_ERROR_ROUTES.map((name) => [name, [...new Set(refused.filter((r) => r.legacy && routeName(r.route) === name).map((r) => r.kind))].sort()]),
    );
    expect(legacy).toEqual({
      'PATCH /contactBooks/{contactBookId}': ['absent id', 'invalid body', 'invalid key', 'invalid path id', 'malformed JSON', 'missing key', 'non-JSON body', 'oversized body', 'sending-only key'],
      'DELETE /contactBooks/{contactBookId}': ['absent id', 'invalid key', 'invalid path id', 'malformed JSON', 'missing key', 'non-JSON body', 'oversized body', 'sending-only key'],
    });
    expect(new Set(refused.filter((r) => r.legacy).map((r) => routeName(r.route)))).toEqual(new Set(LEGACY_ERROR_ROUTES));
    // The routes agree with the interface description on which calls keep the older shape.
    expect(apiRoutes.filter((route) => route.legacyErrors).map(routeName).sort()).toEqual([...LEGACY_ERROR_ROUTES].sort());
  });

  it('near the two legacy calls, every other error is in the standard shape: a wrong method, another path, a near-miss path', async () => {
    const bookId = await team.id('contactBookId');
    await refusedWithoutChange(PREFIXES, async (prefix) => {
      const standard: [string, string, number, ErrorCode][] = [
        ['POST', `${prefix}/contactBooks/${bookId}`, 405, 'METHOD_NOT_ALLOWED'],
        ['PUT', `${prefix}/contactBooks/${bookId}`, 405, 'METHOD_NOT_ALLOWED'],
        ['PATCH', `${prefix}/contactBooks`, 405, 'METHOD_NOT_ALLOWED'],
        ['DELETE', `${prefix}/contactBooks`, 405, 'METHOD_NOT_ALLOWED'],
        ['PATCH', `${prefix}/contactBooks/`, 404, 'NOT_FOUND'],
        ['DELETE', `${prefix}/contactBooks/${bookId}/nothing`, 404, 'NOT_FOUND'],
        ['PATCH', `${prefix}/contactbooks/${bookId}`, 404, 'NOT_FOUND'],
        ['GET', `${prefix}/contactBooks/absent_00000000000000000000`, 404, 'NOT_FOUND'],
        ['PATCH', `${prefix}/contactBooks/${bookId}/contacts/absent_00000000000000000000`, 404, 'NOT_FOUND'],
        ['DELETE', `${prefix}/contactBooks/${bookId}/contacts/absent_00000000000000000000`, 404, 'NOT_FOUND'],
      ];
      for (const [method, path, status, code] of standard) {
        const res = await team.call(method, path, method === 'PATCH' ? { body: { name: 'Not renamed' } } : {});
        expectApiError(res, status, code, `${method} ${path}`);
      }
      // The same book, PATCHed and DELETEd with errors: the legacy shape, whatever the prefix.
      expectLegacyApiError(await team.call('PATCH', `${prefix}/contactBooks/${bookId}`, { body: { name: 12345 } }), 400, 'VALIDATION_ERROR', `PATCH ${prefix}`);
      expectLegacyApiError(await team.call('DELETE', `${prefix}/contactBooks/absent_00000000000000000000`), 404, 'NOT_FOUND', `DELETE ${prefix}`);
    });
  });

  it('what the official Python client does with an error body, body.get("error").get("code"), gives a string code and message on every route but the two legacy ones', async () => {
    const refused = await everyRefusal();
    for (const r of refused) {
      const what = `${describeRefusal(r)} → ${JSON.stringify(r.res.body)}`;
      const get = (field: string) => pythonGet(pythonGet(r.res.body, 'error'), field);
      if (r.legacy) {
        // The interface description's older shape: `error` is the message, and Python's str has no .get.
        expect(() => get('code'), what).toThrow("AttributeError: 'str' object has no attribute 'get'");
        continue;
      }
      expect(get('code'), what).toBe(r.code);
      expect(get('message'), what).toEqual(expect.stringMatching(/\S/));
    }
    expect(refused.filter((r) => !r.legacy).length).toBeGreaterThan(refused.length / 2);
  });

  it.skipIf(!PYTHON)('python3 itself, over real HTTP, reads body.get("error").get("code") and .get("message") as strings from every route but the two legacy ones', async () => {
    const refused = await everyRefusal();
    const before = await snapshot(team);
    const answers = await pythonReads(refused.map((r) => r.request));
    expect(await snapshot(team), 'a refused request changed the data').toEqual(before);
    expect(answers).toHaveLength(refused.length);
    refused.forEach((r, i) => {
      const expected = r.legacy
        ? { status: r.status, attributeError: "'str' object has no attribute 'get'" }
        : { status: r.status, code: r.code, codeType: 'str', messageType: 'str' };
      expect(answers[i], describeRefusal(r)).toEqual(expected);
    });
  }, 180_000);
});

describe('routing', () => {
  it('an unknown route answers 404 JSON, under /v1, /api/v1 and elsewhere', async () => {
    const unknown = ['', '/', '/nothing-here', '/contactBooks/a/b/c/d/e', '/contactBooks/', '/CONTACTBOOKS'];
    await refusedWithoutChange(PREFIXES.flatMap((prefix) => unknown.map((path) => prefix + path)), async (path) => {
      for (const method of METHODS) expectApiError(await team.call(method, path), 404, 'NOT_FOUND', `${method} ${path}`);
    });
    // `/` is the dashboard's; any other path outside the API that nothing serves is the same 404.
    for (const path of ['/nothing-here', '/v2/contactBooks', '/v1contactBooks', '/api/contactBooks', '/assets/nothing.js']) {
      expectApiError(await server.call('GET', path), 404, 'NOT_FOUND', path);
    }
  });

  it('an unknown route under /v1 answers 404 before any key is asked for, and charges no rate limit', async () => {
    for (const prefix of PREFIXES) {
      const res = await server.call('POST', `${prefix}/nothing-here`, { body: { a: 1 } });
      expectApiError(res, 404, 'NOT_FOUND', prefix);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
      expectApiError(await server.call('GET', `${prefix}/contactBooks/a/b/c`, { key: 'not-a-key' }), 404, 'NOT_FOUND', prefix);
    }
    // A known path still wants its key.
    expectApiError(await server.call('GET', '/v1/contactBooks'), 401, 'UNAUTHORIZED', 'known path');
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
          // Never the legacy shape: that is PATCH and DELETE of a contact book, which are served there.
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
        expectRouteError(route, res, 500, 'INTERNAL_SERVER_ERROR', routeName(route));
        expect(errorFields(res).message, routeName(route)).toContain('fault-1');
        // What the official Python client reads of it (the legacy calls excepted, whose `error` is a string).
        if (!routeHasLegacyErrors(route)) expect(pythonGet(pythonGet(res.body, 'error'), 'code'), routeName(route)).toBe('INTERNAL_SERVER_ERROR');
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
