import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from '../errors.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(c: Context, body: unknown, status: ContentfulStatusCode = 200) {
  return c.body(JSON.stringify(body), status, { 'Content-Type': JSON_TYPE });
}

/**
 * Bytes as they are (a raw message, an attachment): always a download, never rendered, and under
 * a policy that runs and loads nothing should a browser open it anyway, for their type and
 * content are whatever a stranger's message said.
 */
export function sendDownload(c: Context, download: { bytes: Buffer; contentType: string; filename: string | null }) {
  const name = (download.filename ?? 'download').replace(/[^\w.-]+/g, '_');
  return c.body(new Uint8Array(download.bytes), 200, {
    'Content-Type': /^[\w.+-]+\/[\w.+-]+$/.test(download.contentType) ? download.contentType : 'application/octet-stream',
    'Content-Disposition': `attachment; filename="${name}"; filename*=UTF-8''${encodeURIComponent(download.filename ?? name)}`,
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; sandbox",
  });
}

export function sendError(c: Context, error: ApiError, shape: 'standard' | 'legacy' = 'standard') {
  return sendJson(c, shape === 'legacy' ? error.toLegacyBody() : error.toBody(), error.status as ContentfulStatusCode);
}

const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
// No request of this API nests deeper than a few levels; a bound keeps every walk over the body
// (ours and the schemas') far from the stack's limit.
export const MAX_JSON_DEPTH = 32;
// The largest body the API takes, 10,000 contacts with a dozen properties each, holds some 180,000
// items. Bounding them bounds what JSON.parse builds and how long it takes before any schema can
// refuse the body: an empty object costs fifty bytes of heap for its three of text.
export const MAX_JSON_ITEMS = 200_000;

/** Whether the text holds more than `limit` of the characters, in strings or not: a native indexOf per character, no walk. */
function holdsMoreThan(text: string, chars: string[], limit: number): boolean {
  let count = 0;
  for (const char of chars) {
    for (let i = text.indexOf(char); i !== -1; i = text.indexOf(char, i + 1)) if (++count > limit) return true;
  }
  return false;
}

/** The index of the quote that closes the string opening at `start`, found natively (the text's length when none does). */
function stringEnd(text: string, start: number): number {
  for (let i = text.indexOf('"', start + 1); i !== -1; i = text.indexOf('"', i + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(i - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return i;
  }
  return text.length;
}

/**
 * Refuses JSON text that nests deeper than MAX_JSON_DEPTH or whose arrays and objects hold more
 * than MAX_JSON_ITEMS items and members together, before it is parsed; one pass, strings skipped.
 * Most bodies hold too few brackets and commas to break either bound, and are passed without the walk.
 */
function assertWithinBounds(text: string): void {
  if (!holdsMoreThan(text, ['{', '['], MAX_JSON_DEPTH) && !holdsMoreThan(text, [',', '{', '['], MAX_JSON_ITEMS)) return;
  let depth = 0;
  let items = 0;
  let opened = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === 0x20 || char === 0x0a || char === 0x0d || char === 0x09) continue;
    // An array's or object's first item; each further one follows a comma.
    if (opened && char !== 0x5d && char !== 0x7d) items++;
    opened = false;
    if (char === 0x22) i = stringEnd(text, i);
    else if (char === 0x7b || char === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) throw new ApiError('BAD_REQUEST', `Malformed JSON body: nested deeper than ${MAX_JSON_DEPTH} levels`);
      opened = true;
    } else if (char === 0x7d || char === 0x5d) depth--;
    else if (char === 0x2c) items++;
    if (items > MAX_JSON_ITEMS) {
      throw new ApiError('PAYLOAD_TOO_LARGE', `Request body holds more than ${MAX_JSON_ITEMS} array items and object members; split it into smaller requests`);
    }
  }
}

/**
 * Reads a JSON request body. An empty body reads as `{}` (clients send no body for calls whose
 * fields are all optional); a non-empty one must say it is JSON, be well-formed and within the bounds above.
 */
export async function readJsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  if (!JSON_CONTENT_TYPE.test(c.req.header('content-type') ?? '')) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be JSON (Content-Type: application/json)');
  }
  assertWithinBounds(text);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError('BAD_REQUEST', `Malformed JSON body: ${(error as Error).message}`);
  }
}
