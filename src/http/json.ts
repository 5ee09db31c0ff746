import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from '../errors.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(c: Context, body: unknown, status: ContentfulStatusCode = 200) {
  return c.body(JSON.stringify(body), status, { 'Content-Type': JSON_TYPE });
}

export function sendError(c: Context, error: ApiError) {
  return sendJson(c, error.toBody(), error.status as ContentfulStatusCode);
}

const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

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
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError('BAD_REQUEST', `Malformed JSON body: ${(error as Error).message}`);
  }
}
