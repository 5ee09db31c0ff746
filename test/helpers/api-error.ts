import { expect } from 'vitest';
import type { ErrorCode } from '../../src/errors.js';
import type { CallResult } from './server.js';

/**
 * The two calls whose errors keep the interface description's older shape, as `METHOD /path`.
 * Written out here, not read from the routes' own `legacyErrors` flag: a route that gained or
 * lost the older shape is then a failing test, not a silently different expectation.
 */
export const LEGACY_ERROR_ROUTES: readonly string[] = ['PATCH /contactBooks/{contactBookId}', 'DELETE /contactBooks/{contactBookId}'];

/** A request the router serves with one of LEGACY_ERROR_ROUTES, after /v1 or /api/v1. */
const LEGACY_REQUEST = /^\/(?:api\/)?v1\/contactBooks\/[^/]+$/;

/** Whether a route (`{ method, path }` as in src/api, path without the /v1 prefix) answers its errors in the older shape. */
export function routeHasLegacyErrors(route: { method: string; path: string }): boolean {
  return LEGACY_ERROR_ROUTES.includes(`${route.method.toUpperCase()} ${route.path}`);
}

/**
 * The path of a request target as the server routes it: read by a WHATWG URL parser, as
 * @hono/node-server does, so without the query and with `.` and `..` segments resolved (`%2e` is
 * a dot there: `/contactBooks/%2e%2e` is `/`).
 */
const routedPath = (target: string) => new URL(target, 'http://mailroom.invalid').pathname;

/**
 * Whether an error of this request comes in the older shape: PATCH or DELETE of one contact book,
 * under /v1 or /api/v1, with the path read as the server routes it. Everything else, a 404 or 405
 * next to those routes included, has the standard shape.
 */
export function requestHasLegacyErrors(method: string, path: string): boolean {
  return ['PATCH', 'DELETE'].includes(method.toUpperCase()) && LEGACY_REQUEST.test(routedPath(path));
}

function expectErrorResponse(res: CallResult, status: number, what: string) {
  expect(res.status, what).toBe(status);
  expect(res.headers.get('content-type'), what).toBe('application/json; charset=utf-8');
  expect(res.headers.get('x-request-id'), what).toBeTruthy();
}

function expectDetails(details: unknown, what: string) {
  expect(Array.isArray(details), `${what}: details must be an array`).toBe(true);
  for (const detail of details as unknown[]) {
    expect(detail, what).toEqual({ path: expect.any(String), message: expect.stringMatching(/\S/) });
  }
}

/**
 * The error shape of every endpoint (upstream useSend's, which its official clients read):
 * exactly `{ "error": { "code", "message", "details"? } }` as JSON, with a request id.
 */
export function expectApiError(res: CallResult, status: number, code: ErrorCode, context = '') {
  const what = `${context} → ${res.status} ${JSON.stringify(res.body)}`;
  expectErrorResponse(res, status, what);
  const error = res.body && typeof res.body === 'object' ? res.body.error : undefined;
  const hasDetails = error !== null && typeof error === 'object' && 'details' in error;
  expect(res.body, what).toStrictEqual({
    error: { code, message: expect.stringMatching(/\S/), ...(hasDetails ? { details: expect.any(Array) } : {}) },
  });
  if (hasDetails) expectDetails(error.details, what);
}

/**
 * The older shape the interface description fixes for contact-book PATCH and DELETE, for every
 * error they answer: exactly `{ "error": "<message>", "code", "details"? }`, with a request id.
 */
export function expectLegacyApiError(res: CallResult, status: number, code: ErrorCode, context = '') {
  const what = `${context} → ${res.status} ${JSON.stringify(res.body)} (the legacy shape)`;
  expectErrorResponse(res, status, what);
  const hasDetails = res.body !== null && typeof res.body === 'object' && 'details' in res.body;
  expect(res.body, what).toStrictEqual({
    error: expect.stringMatching(/\S/),
    code,
    ...(hasDetails ? { details: expect.any(Array) } : {}),
  });
  if (hasDetails) expectDetails(res.body.details, what);
}

/** The error in the shape this route answers with: the legacy one for LEGACY_ERROR_ROUTES, the standard one otherwise. */
export function expectRouteError(route: { method: string; path: string }, res: CallResult, status: number, code: ErrorCode, context = '') {
  (routeHasLegacyErrors(route) ? expectLegacyApiError : expectApiError)(res, status, code, context);
}

/** The error in the shape this concrete request (method, and path with its /v1 or /api/v1 prefix) is answered with. */
export function expectRequestError(method: string, path: string, res: CallResult, status: number, code: ErrorCode, context = '') {
  (requestHasLegacyErrors(method, path) ? expectLegacyApiError : expectApiError)(res, status, code, context || `${method} ${path}`);
}

/** The status each error code goes with. */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  BAD_REQUEST: 400, VALIDATION_ERROR: 400, UNAUTHORIZED: 401, FORBIDDEN: 403, NOT_FOUND: 404, METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409, PAYLOAD_TOO_LARGE: 413, UNSUPPORTED_MEDIA_TYPE: 415, RATE_LIMITED: 429, INTERNAL_SERVER_ERROR: 500,
};

/** The code, message and details of an error in either shape, for tests that read them after checking the shape. */
export function errorFields(res: CallResult): { code: string; message: string; details?: { path: string; message: string }[] } {
  const body = res.body;
  if (body && typeof body === 'object' && body.error && typeof body.error === 'object') return body.error;
  return { code: body?.code, message: body?.error, ...(body && 'details' in body ? { details: body.details } : {}) };
}

/** The name Python gives a JSON value's type once `json.loads` has read it. */
function pythonType(value: unknown): string {
  if (value === null || value === undefined) return 'NoneType';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'string') return 'str';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  return 'dict';
}

/**
 * Python's `value.get(key)` on a value `json.loads` made: a dict's value under the key, or None
 * (null) when it has none; anything else has no `.get` and raises AttributeError (thrown here with
 * Python's message). What the official Python client does with an error body is
 * `pythonGet(pythonGet(body, 'error'), 'code')`.
 */
export function pythonGet(value: unknown, key: string): unknown {
  const type = pythonType(value);
  if (type !== 'dict') throw new Error(`AttributeError: '${type}' object has no attribute 'get'`);
  return Object.hasOwn(value as object, key) ? (value as Record<string, unknown>)[key] : null;
}
