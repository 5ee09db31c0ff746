import type { Context } from 'hono';
import { ApiError } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import { assertAllowed, may, type Area } from '../people/roles.js';
import type { Domain } from '../services/domains.js';
import { callApi, callerOf } from './api-call.js';
import { field, fieldErrors } from './layout.js';
import type { DashboardEnv } from './session.js';

// Reading a page's form and putting the API's verdict on it next to the fields.

/**
 * Whether the signed-in person's role lets them change `area`: a page offers only the changes
 * it allows. Hiding is never the guard: the call behind each control checks the role again.
 */
export const mayChange = (c: Context<DashboardEnv>, area: Area) => may(callerOf(c), area, 'change');

/** A page that is only a form to change `area` (a "new" or an "edit" page) is refused, as its post would be, to a role that may not. */
export const assertMayChange = (c: Context<DashboardEnv>, area: Area) => assertAllowed(callerOf(c), area, 'change');

/** The form's text fields (a file field, which these forms never have, reads as missing). */
export async function formValues(c: Context): Promise<Record<string, string>> {
  const body = await c.req.parseBody();
  return Object.fromEntries(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** A form as typed, and what was wrong with it by field ("" for the form as a whole). */
export type Form = { values: Record<string, string>; errors: Record<string, string> };
export const BLANK_FORM: Form = { values: {}, errors: {} };

/** An empty field is one left out: the API's defaults and "required" messages then apply. */
export const given = (value: string | undefined) => (value === undefined || value === '' ? undefined : value);

/** The validation error to show on the form; anything else goes on to be an error page. */
export function invalidInput(error: unknown): ApiError {
  if (error instanceof ApiError && error.code === 'VALIDATION_ERROR') return error;
  throw error;
}

export type FormErrors = { fields: Record<string, string>; form?: string };

/**
 * Each message beside the field the form shows for it; those of fields it does not show in one line
 * above the form, unless a shown field already says the same ("html, text or content is required").
 */
export function formErrors(error: ApiError, shown: readonly string[]): FormErrors {
  const fields: Record<string, string> = {};
  const others = new Set<string>();
  const all = Object.entries(fieldErrors(error));
  for (const [path, message] of all) if (shown.includes(path)) fields[path] = message;
  const said = new Set(Object.values(fields));
  for (const [path, message] of all) if (!shown.includes(path) && !said.has(message)) others.add(path && path !== '(body)' ? `${path}: ${message}` : message);
  return { fields, form: others.size > 0 ? [...others].join('; ') : undefined };
}

/**
 * The errors of a mistake the person can put right in the form (bad or conflicting input), by the
 * form's `fields` ("" for the form as a whole), with the status to answer. Anything else is thrown
 * on, to become an error page (404 and the like). A conflict names no field, so `conflictField`
 * says which one it is about.
 */
export function correctable(error: unknown, fields: readonly string[], conflictField = ''): { errors: Record<string, string>; status: 400 | 409 } {
  if (error instanceof ApiError && error.code === 'CONFLICT') return { errors: { [conflictField]: error.message }, status: 409 };
  const { fields: byField, form } = formErrors(invalidInput(error), fields);
  return { errors: form === undefined ? byField : { ...byField, '': form }, status: 400 };
}

/** The names of the team's verified domains: where a From address may be. */
export async function verifiedDomains(c: Context<DashboardEnv>, deps: AppDeps): Promise<string[]> {
  const domains = await callApi<Domain[]>(c, deps, 'get', '/domains');
  return domains.filter((domain) => domain.status === 'SUCCESS').map((domain) => domain.name);
}

/** The From field of mail the team sends, naming its verified domains (`local` the example's mailbox). */
export const senderField = (options: { value?: string; error?: string; verified: readonly string[]; name: string; local: string }) => {
  const { verified } = options;
  return field('from', 'From', {
    value: options.value,
    error: options.error,
    required: true,
    placeholder: `${options.name} <${options.local}@${verified[0] ?? 'example.com'}>`,
    hint: verified.length ? `An address on a verified domain: ${verified.join(', ')}` : 'No domain of this team is verified yet: verify one under Domains first.',
  });
};
