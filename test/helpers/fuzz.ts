/**
 * Reproducible hostile input for property-style tests: a seeded PRNG and generators of JSON
 * values, strings, query strings and path ids meant to break parsers, validators and databases.
 * The same seed always yields the same sequence, so a failure names the seed that reproduces it.
 */

/** mulberry32: small, fast, and the same sequence for the same seed on every platform. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }
}

/** A 32-bit seed from a base seed and labels (FNV-1a), so each route gets its own reproducible stream. */
export function seedOf(base: number, ...labels: string[]): number {
  let hash = (0x811c9dc5 ^ base) >>> 0;
  for (const char of labels.join('\u0000')) {
    hash ^= char.codePointAt(0)!;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** JSON text put into a document as it is: numbers JSON.stringify cannot write (1e309, -0, 30 digits). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** JSON text of a value that may contain RawJson pieces; strings keep lone surrogates as \u escapes. */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}:${jsonText(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Characters and pieces that have broken something somewhere: controls, surrogates, separators, markup. */
export const FRAGMENTS = [
  '\0', '\ud800', '\udfff', '\udc00\ud800', '\r\n', '\r', '\n', '\t', '\u0007', '\u007f', '\u0085', '\u2028', '\u2029',
  '\ufeff', '\u202e', '\u200b', '\ufffd', '\uffff', 'é', 'e\u0301', '😀', '𝕏', '中文', 'ß', 'İ', 'ﬃ', '%', '%00', '\\',
  '"', "'", '`', '<script>alert(1)</script>', '{{unsubscribeUrl}}', '{{firstName,fallback=x}}', '{{', '}}', '@', ',', ';',
  ' ', '..', '/', 'x', 'Name <a@example.com>', 'a@example.com', '=?utf-8?q?x?=', ':', "x'; DROP TABLE emails; --", '$1',
  '${x}', '__proto__', 'null', 'true',
] as const;

/** Dates of every sort a schedule or a filter may be given: out of range, impossible, relative. */
export const DATES = [
  '0000-01-01', '0000-01-01T00:00:00Z', '1969-12-31T23:59:59Z', '1970-01-01', '9999-12-31', '9999-12-31T23:59:59.999Z',
  '9999-12-31T23:59:59.999-01:00', '10000-01-01', '+275760-09-13T00:00:00.000Z', '275760-09-13T00:00:00Z', '275760-09-13',
  '-000001-01-01T00:00:00Z', '-271821-04-20', 'in 9999 years', 'in 10 years', 'in 11 years', 'in 275760 years', 'yesterday',
  'tomorrow 9am', 'in 2 hours', 'now', 'next monday 10:30', 'last year', '2024-02-30', '2024-13-01T00:00:00Z',
  '2024-01-01T25:00:00Z', '2100-01-01T00:00:00+99:99', '2100-01-01T00:00:00.1234567891Z', '1e12', '-1', '0',
  '9999999999999', '2030-01-01T00:00:00Z', '2030-01-01 09:00', 'Fri, 01 Jan 2100 00:00:00 GMT',
] as const;

/** Strings that look like numbers to some parser and not to another. */
export const NUMBERISH = [
  'NaN', 'Infinity', '-Infinity', '-0', '1e309', '-1e309', '0x10', '1_000', ' 1 ', '', ' ', '9'.repeat(40), '2147483647',
  '2147483648', '-2147483649', '9007199254740993', '1.5', '00', '+1', '1e-400', '0.0', '1,5', '١٢٣',
] as const;

/** Number tokens as JSON text, including those no JavaScript number can write back. */
export const NUMBERS = [
  '0', '-0', '1', '-1', '1.5', '1e309', '-1e309', '1e-400', '2147483647', '2147483648', '-2147483649', '9007199254740993',
  '123456789012345678901234567890', '1E2', '0.1', '100000', '100001', '1441', '10001', '365', '366', '4294967296', '-0.0',
] as const;

const EMAIL_DOMAINS = ['example.com', 'EXAMPLE.COM', 'xn--', '[127.0.0.1]', 'localhost', 'ex ample.com', `${'a'.repeat(70)}.com`, 'co.uk', 'münchen.de', ''];
const LONG_LENGTHS = [255, 256, 998, 999, 1000, 1001, 10_000, 100_000];
const EDITOR_TYPES = ['doc', 'paragraph', 'text', 'heading', 'bulletList', 'orderedList', 'listItem', 'image', 'button', 'variable', 'unsubscribeFooter', 'hardBreak', 'script', ''];

/**
 * A string meant to hurt: fragments, dates, number look-alikes, very long text, address look-alikes,
 * random code units, and (unless `withDocuments` is false) editor JSON in a string.
 */
export function hostileString(rng: Rng, withDocuments = true): string {
  const kind = rng.int(0, withDocuments ? 9 : 7);
  switch (kind) {
    case 0:
    case 1:
      return Array.from({ length: rng.int(1, 5) }, () => rng.pick(FRAGMENTS)).join('');
    case 2:
      return rng.pick(DATES);
    case 3:
      return rng.pick(NUMBERISH);
    case 4: {
      const length = rng.pick(LONG_LENGTHS);
      const unit = rng.pick(['x', 'é', '😀', '\0', ' ', 'a@b.co,', '\r\n']);
      return unit.repeat(Math.ceil(length / unit.length)).slice(0, length);
    }
    case 5:
    case 6:
      return `${rng.pick(FRAGMENTS)}${rng.pick(['a', 'user', '"a b"', 'a+tag', ''])}@${rng.pick(EMAIL_DOMAINS)}`;
    case 7:
      return Array.from({ length: rng.int(1, 20) }, () => String.fromCharCode(rng.chance(0.2) ? rng.int(0xd800, 0xdfff) : rng.int(0, 0xffff))).join('');
    case 8:
      return withDocuments ? jsonText(editorNode(rng, 0, rng.chance(0.1) ? 80 : 5)) : '';
    default:
      return rng.pick(['', ' ', 'x', 'sample', 'a@example.com', 'Sample <hello@example.com>', 'https://example.com/?a=1&b=2']);
  }
}

/** A document the campaign editor might be sent: known and unknown node types, odd attrs, any depth up to `max`. */
function editorNode(rng: Rng, depth: number, max: number): unknown {
  const node: Record<string, unknown> = { type: depth === 0 ? 'doc' : rng.pick(EDITOR_TYPES) };
  if (rng.chance(0.3)) node.text = hostileString(rng, false).slice(0, 1000);
  if (rng.chance(0.2)) node.attrs = { level: new RawJson(rng.pick(NUMBERS)), href: rng.pick(['javascript:alert(1)', 'https://x', '{{unsubscribeUrl}}']), id: 'firstName' };
  if (rng.chance(0.1)) node.marks = [{ type: rng.pick(['bold', 'link', 'nope']), attrs: { href: 'javascript:x' } }];
  if (depth < max && rng.chance(depth < 5 ? 0.8 : 0.97)) node.content = Array.from({ length: rng.int(1, depth < 5 ? 3 : 1) }, () => editorNode(rng, depth + 1, max));
  return node;
}

/** Any scalar JSON value, numbers as raw text. */
export function hostileScalar(rng: Rng): unknown {
  const roll = rng.next();
  if (roll < 0.1) return null;
  if (roll < 0.2) return rng.chance(0.5);
  if (roll < 0.4) return new RawJson(rng.pick(NUMBERS));
  return hostileString(rng);
}

/**
 * Any JSON value: scalars, arrays (empty, short, long) and objects whose keys are the given ones
 * (the fields the endpoint knows) or hostile ones, nested up to `maxDepth`.
 */
export function hostileValue(rng: Rng, keys: readonly string[], maxDepth = 4, depth = 0): unknown {
  const roll = rng.next();
  if (depth >= maxDepth || roll < 0.6) return hostileScalar(rng);
  if (roll < 0.8) {
    // Long arrays only near the top, of short items, so a body stays within a few megabytes.
    const size = depth <= 1 && rng.chance(0.15) ? rng.pick([50, 101, 1000, 10_001]) : rng.int(0, 4);
    if (size > 50) {
      const item = hostileScalar(rng);
      const short = typeof item === 'string' ? item.slice(0, 64) : item;
      return Array.from({ length: size }, () => short);
    }
    return Array.from({ length: size }, () => hostileValue(rng, keys, maxDepth, depth + 1));
  }
  return Object.fromEntries(Array.from({ length: rng.int(0, 5) }, () => [hostileKey(rng, keys), hostileValue(rng, keys, maxDepth, depth + 1)]));
}

/** A field name: usually one the endpoint knows, else one that trips object handling. */
export function hostileKey(rng: Rng, keys: readonly string[]): string {
  if (keys.length > 0 && rng.chance(0.7)) return rng.pick(keys);
  return rng.pick(['__proto__', 'constructor', 'prototype', '', ' ', '\0', '\ud800', 'a'.repeat(300), 'toString', 'hasOwnProperty', '0', '$where', 'x-y', 'é']);
}

/** The value wrapped `depth` times in arrays or objects. */
export function nest(value: unknown, depth: number, inArrays: boolean): unknown {
  let nested = value;
  for (let i = 0; i < depth; i++) nested = inArrays ? [nested] : { a: nested };
  return nested;
}

/** Bodies that are not quite JSON, or JSON that JavaScript reads in surprising ways. */
export const RAW_BODIES = [
  '', ' ', '\r\n', '{', '}', '[', 'null', 'true', '0', '-0', '"x"', '[]', '{}', '[{}]', '[null]', '{"a":1}{"b":2}', '{"a":1,"a":2}',
  '\ufeff{}', '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}', 'NaN', '1e309', '[1e309]',
  '{"name":"\\ud800"}', '{"name":"\\u0000"}', '\u0000', '{"name":"x",}', "{'name':'x'}", '{"name":"x"', '{"name":"\\x41"}',
  `{"a":"${'x'.repeat(100_000)}"}`, `[${'1,'.repeat(50_000)}1]`, `${'['.repeat(33)}${']'.repeat(33)}`, `${'{"a":'.repeat(40)}1${'}'.repeat(40)}`,
] as const;

/** Path ids that are not ids: written into the URL as they are (percent escapes included). */
export const RAW_IDS = [
  '0', '-1', '1.5', '2147483647', '2147483648', '99999999999999999999', '1e309', 'NaN', 'null', 'undefined', 'bulk', '%00', '%25',
  '%zz', '%ED%A0%80', '%FF', '%C0%AF', '%20', '+', '%2F', '%2e%2e', '%0d%0a', "'", '%22', '%3Cscript%3E', 'x'.repeat(129),
  'x'.repeat(3000), '%F0%9F%98%80', 'a%00b', '__proto__', 'constructor',
] as const;

/** Percent-encodes the UTF-8 of a string (lone surrogates become U+FFFD), where encodeURIComponent would throw. */
export function percentEncode(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** A garbage path id, ready to put into the URL. */
export function hostilePathId(rng: Rng): string {
  if (rng.chance(0.6)) return rng.pick(RAW_IDS);
  // Cut after encoding: a cut escape (`%F`) is hostile too. URLs stay well under node's 16 KiB header limit.
  return percentEncode(hostileString(rng).slice(0, 2000)).slice(0, 2000) || 'x';
}

/** A query string (without `?`, at most 8,000 characters) for the given known parameters, with hostile values and keys. */
export function hostileQuery(rng: Rng, keys: readonly string[]): string {
  const pairs: string[] = [];
  // Often one parameter alone, so that no other bad one hides it behind an early 400.
  const count = keys.length > 0 ? (rng.chance(0.5) ? 1 : rng.int(1, keys.length + 1)) : rng.int(0, 2);
  for (let i = 0; i < count; i++) {
    const key = keys.length > 0 && rng.chance(0.85) ? rng.pick(keys) : hostileKey(rng, []);
    const value = rng.chance(0.15)
      ? rng.pick(['%', '%zz', '%ED%A0%80', '%FF', '%00', '+', '%2B', 'a&b', '%26', '='])
      : /date|At$/i.test(key) && rng.chance(0.6)
        ? percentEncode(rng.pick(DATES))
        : percentEncode(hostileString(rng).slice(0, 3000)).slice(0, 3000);
    pairs.push(rng.chance(0.05) ? percentEncode(key) : `${percentEncode(key)}=${value}`);
  }
  return pairs.join('&').slice(0, 8000);
}
