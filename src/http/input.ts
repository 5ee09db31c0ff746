import type { z } from 'zod';
import { fieldPath, parseOrThrow, validationError } from '../validation.js';

// PostgreSQL text and jsonb hold only well-formed Unicode without U+0000: a NUL or an unpaired
// surrogate (which JSON's \u escapes can carry) is the caller's mistake, refused before any schema
// or handler can pass it on to fail in the database as a 500.
const UNSTORABLE = /[\0\p{Cs}]/u;
const UNSTORABLE_MESSAGE = 'must be Unicode text without NUL characters or unpaired surrogates';

/**
 * Validates a request's params, query or body against its schema: the one door every entrance's
 * input passes. `overLimit`: the code for a value over one of the schema's limits, for an entrance
 * that answers those apart (SMTP's 552); a 400 VALIDATION_ERROR like every other problem otherwise.
 */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown, overLimit?: 'PAYLOAD_TOO_LARGE'): z.output<T> {
  if (!storable(input)) {
    throw validationError(unstorablePaths(input).map((path) => ({ path, message: UNSTORABLE_MESSAGE })));
  }
  return parseOrThrow(schema, input, undefined, overLimit);
}

/** Whether every string in the value, keys included, is storable; allocates nothing on the way. */
function storable(value: unknown): boolean {
  if (typeof value === 'string') return !UNSTORABLE.test(value);
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (!storable(item)) return false;
    return true;
  }
  for (const key in value) {
    if (UNSTORABLE.test(key) || !storable((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}

function unstorablePaths(value: unknown, path: PropertyKey[] = []): string[] {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? [fieldPath(path) || '(body)'] : [];
  if (typeof value !== 'object' || value === null) return [];
  if (Array.isArray(value)) return value.flatMap((item, index) => unstorablePaths(item, [...path, index]));
  return Object.entries(value).flatMap(([key, item]) =>
    UNSTORABLE.test(key) ? [fieldPath([...path, JSON.stringify(key).slice(1, -1)])] : unstorablePaths(item, [...path, key]),
  );
}
