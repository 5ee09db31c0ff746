import { z } from 'zod';
import { ApiError, type ErrorDetail } from './errors.js';

const article = (word: string) => (/^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`);
const typeNames: Record<string, string> = { int: 'integer', record: 'object' };
const units: Record<string, string> = { string: ' characters', array: ' items', set: ' items', file: ' bytes' };

/** Messages written for the people reading our 400s: "must be at most 100000", not zod's defaults. */
z.config({
  customError(issue) {
    switch (issue.code) {
      case 'invalid_type':
        if (issue.input === undefined) return 'is required';
        return `must be ${article(typeNames[issue.expected] ?? issue.expected)}`;
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
      default:
        return undefined;
    }
  },
});

export function issuesToDetails(issues: readonly z.core.$ZodIssue[], prefix?: string): ErrorDetail[] {
  return issues.map((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter((part) => part !== undefined && part !== '').join('.');
    return { path: path || '(body)', message: issue.message };
  });
}

export function validationError(details: ErrorDetail[]): ApiError {
  const summary = details.map((d) => (d.path === '(body)' ? d.message : `${d.path} ${d.message}`)).join('; ');
  return new ApiError('VALIDATION_ERROR', `Invalid request: ${summary}`, details);
}

/** Parses with the schema or throws a 400 naming every bad field. */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, prefix?: string): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(issuesToDetails(result.error.issues, prefix));
  return result.data;
}
