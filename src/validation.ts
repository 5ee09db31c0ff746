import { z } from 'zod';
import { ApiError, type ErrorDetail } from './errors.js';

const article = (words: string) => (/^[aeiou]/.test(words) ? `an ${words}` : `a ${words}`);
const typeNames: Record<string, string> = { int: 'integer', record: 'object' };
const units: Record<string, string> = { string: ' characters', array: ' items', set: ' items', file: ' bytes' };

type Schema = z.core.$ZodType;

/**
 * What a schema takes, as a noun: "string", "array of strings", "string or array of strings".
 * Wrappers (optional, nullable, default, pipes) say what their inner schema takes.
 */
function noun(schema: Schema): string {
  const def = schema._zod.def as z.core.$ZodTypeDef & Record<string, any>;
  switch (def.type) {
    case 'array': {
      const element = noun(def.element);
      return element === 'unknown' || element === 'any' ? 'array' : `array of ${plural(element)}`;
    }
    case 'union':
      return (def.options as Schema[]).map(noun).join(' or ');
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
      return noun(def.innerType);
    case 'pipe':
      return noun(def.in);
    case 'number':
      return def.format?.includes('int') ? 'integer' : 'number';
    case 'enum':
    case 'literal':
      return 'string';
    default:
      return typeNames[def.type] ?? def.type;
  }
}

const plural = (words: string) => words.replace(/^(\w+)/, '$1s');

/** "must be a string or an array of strings": each alternative with its article. */
const mustBe = (schema: Schema) => `must be ${noun(schema).split(' or ').map(article).join(' or ')}`;

/**
 * The problems of the one alternative of a union whose type the value has (an array given where a
 * string or an array is taken), or null when it has none's or several's: those problems say what
 * is wrong, "must be at most 50 items", where the union alone could only say "Invalid input".
 */
function matchedAlternative(issue: { errors: z.core.$ZodIssue[][] }): z.core.$ZodIssue[] | null {
  const matched = issue.errors.filter((problems) => !problems.some((problem) => problem.code === 'invalid_type' && problem.path.length === 0));
  return matched.length === 1 ? matched[0]! : null;
}

/** A field's path as the errors name it: names joined by dots, places in a list in brackets (`filter.all[2].op`). */
export const fieldPath = (parts: readonly PropertyKey[]) =>
  parts.reduce<string>((text, part) => (typeof part === 'number' ? `${text}[${part}]` : text ? `${text}.${String(part)}` : String(part)), '');

const located = (path: readonly PropertyKey[], message: string) => (path.length === 0 ? message : `${fieldPath(path)} ${message}`);

/** Messages written for the people reading our 400s: "must be at most 100000", not zod's defaults. */
z.config({
  customError(issue) {
    switch (issue.code) {
      case 'invalid_type':
        if (issue.input === undefined) return 'is required';
        return issue.inst && issue.expected === 'array' ? mustBe(issue.inst as Schema) : `must be ${article(typeNames[issue.expected] ?? issue.expected)}`;
      case 'too_small': {
        const unit = units[issue.origin] ?? '';
        if (issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
        return `must be at least ${issue.minimum}${unit}`;
      }
      case 'too_big':
        return `must be at most ${issue.maximum}${units[issue.origin] ?? ''}`;
      case 'invalid_value':
        return `must be one of: ${issue.values.map((v) => String(v)).join(', ')}`;
      case 'invalid_format':
        return issue.format === 'regex' ? undefined : `must be a valid ${issue.format}`;
      case 'invalid_key':
        // The key's own problems ("variable names start with a letter…"), not "Invalid key in record".
        return issue.issues.map((problem) => problem.message).join('; ');
      case 'invalid_union': {
        if (issue.input === undefined) return 'is required';
        const problems = matchedAlternative(issue);
        if (problems) return problems.map((problem) => located(problem.path, problem.message)).join('; ');
        return issue.inst ? mustBe(issue.inst as Schema) : undefined;
      }
      default:
        return undefined;
    }
  },
});

/**
 * The union's problems where the value's alternative is known, each at its own path (`to[1] must be
 * a string`); every other issue as it is.
 */
function expanded(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  const problems = issue.code === 'invalid_union' ? matchedAlternative(issue) : null;
  return problems ? problems.flatMap((problem) => expanded({ ...problem, path: [...issue.path, ...problem.path] })) : [issue];
}

export function issuesToDetails(issues: readonly z.core.$ZodIssue[], prefix?: string): ErrorDetail[] {
  return issues.flatMap(expanded).map((issue) => {
    const path = fieldPath([...(prefix ? [prefix] : []), ...issue.path]);
    return { path: path || '(body)', message: issue.message };
  });
}

// A hundred problems say what is wrong with a request; a million would cost more to write and to
// send than the request cost to make.
export const MAX_DETAILS = 100;

/**
 * The refusal naming each problem, the first MAX_DETAILS of them when there are more. `code` is
 * the door's word for it: an entrance other than the API may call a value over a limit otherwise.
 */
export function validationError(details: ErrorDetail[], code: 'VALIDATION_ERROR' | 'PAYLOAD_TOO_LARGE' = 'VALIDATION_ERROR'): ApiError {
  const shown = details.slice(0, MAX_DETAILS);
  const summary = shown.map((d) => `${d.path === '(body)' ? 'the body' : d.path} ${d.message}`).join('; ');
  const more = details.length > shown.length ? `; and ${details.length - shown.length} more` : '';
  return new ApiError(code, `Invalid request: ${summary}${more}`, shown);
}

/**
 * Parses with the schema or throws a 400 naming every bad field. With `overLimit`, a value over
 * one of the schema's limits (a string, list or record too long) is refused with that code instead.
 */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, prefix?: string, overLimit?: 'PAYLOAD_TOO_LARGE'): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const { issues } = result.error;
  throw validationError(issuesToDetails(issues, prefix), overLimit && issues.some((issue) => issue.code === 'too_big') ? overLimit : 'VALIDATION_ERROR');
}

/**
 * A record of at most `max` entries, counted before any key or value is parsed: a body naming a
 * hundred thousand headers costs one count and one problem, not a check and an issue per entry.
 */
export function boundedRecord<K extends z.core.$ZodRecordKey, V extends z.ZodType>(key: K, value: V, max: number, noun: string) {
  return z.preprocess((input, ctx) => {
    if (entriesExceed(input, max)) {
      ctx.issues.push({ code: 'too_big', origin: 'object', maximum: max, inclusive: true, input, message: `must have at most ${max} ${noun}` });
    }
    return input;
  }, z.record(key, value).meta({ maxProperties: max }));
}

/** Whether a plain object has more than `max` keys. */
const entriesExceed = (input: unknown, max: number) =>
  typeof input === 'object' && input !== null && !Array.isArray(input) && Object.keys(input).length > max;
