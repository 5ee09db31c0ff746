import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from '../errors.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(c: Context, body: unknown, status: ContentfulStatusCode = 200) {
  return c.body(JSON.stringify(body), status, { 'Content-Type': JSON_TYPE });
}

export function sendError(c: Context, error: ApiError, shape: 'standard' | 'legacy' = 'standard') {
  return sendJson(c, shape === 'legacy' ? error.toLegacyBody() : error.toBody(), error.status as ContentfulStatusCode);
}

const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
// No request of this API nests deeper than a few levels; a bound keeps every walk over the body
// (ours and the schemas') far from the stack's limit.
export const MAX_JSON_DEPTH = 32;

/** Whether the text holds more than `limit` of `{` and `[`, in strings or not: a native indexOf per bracket, no walk. */
function opensMoreThan(text: string, limit: number): boolean {
  let count = 0;
  for (const bracket of ['{', '[']) {
    for (let i = text.indexOf(bracket); i !== -1; i = text.indexOf(bracket, i + 1)) if (++count > limit) return true;
  }
  return false;
}

/**
 * Whether JSON text nests objects and arrays deeper than `limit`; one pass, strings skipped. Most
 * bodies hold too few brackets to nest that deep at all, and are passed without the walk.
 */
function nestsDeeperThan(text: string, limit: number): boolean {
  if (!opensMoreThan(text, limit)) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === 0x5c) i++;
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x7b || char === 0x5b) {
      if (++depth > limit) return true;
    } else if (char === 0x7d || char === 0x5d) depth--;
  }
  return false;
}

/**
 * Reads a JSON request body. An empty body reads as `{}` (clients send no body for calls whose
 * fields are all optional); a non-empty one must say it is JSON and be well-formed.
 */
export async function readJsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  if (!JSON_CONTENT_TYPE.test(c.req.header('content-type') ?? '')) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be JSON (Content-Type: application/json)');
  }
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new ApiError('BAD_REQUEST', `Malformed JSON body: nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError('BAD_REQUEST', `Malformed JSON body: ${(error as Error).message}`);
  }
}
