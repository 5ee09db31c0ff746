import { expect } from 'vitest';
import type { ErrorCode } from '../../src/errors.js';
import type { CallResult } from './server.js';

/** The one error shape of SPEC §3: `{ error, code, details? }` as JSON, with a request id. */
export function expectApiError(res: CallResult, status: number, code: ErrorCode, context = '') {
  const what = `${context} → ${res.status} ${JSON.stringify(res.body)}`;
  expect(res.status, what).toBe(status);
  expect(res.headers.get('content-type'), what).toBe('application/json; charset=utf-8');
  expect(res.headers.get('x-request-id'), what).toBeTruthy();
  expect(res.body, what).toEqual({
    error: expect.stringMatching(/\S/),
    code,
    ...(res.body && typeof res.body === 'object' && 'details' in res.body
      ? { details: expect.arrayContaining([]) }
      : {}),
  });
  for (const detail of res.body.details ?? []) {
    expect(detail, what).toEqual({ path: expect.any(String), message: expect.stringMatching(/\S/) });
  }
}
