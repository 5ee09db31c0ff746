import type { Context } from 'hono';
import { html } from 'hono/html';
import { ApiError } from '../../errors.js';
import { fieldErrors } from '../layout.js';

// What the campaigns and templates pages share: reading their forms, and showing a mail's HTML.

/** The form's text fields (a form of these pages has no files). */
export async function formValues(c: Context): Promise<Record<string, string>> {
  const body = await c.req.parseBody();
  return Object.fromEntries(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

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

// A mail's HTML is the sender's: it is shown in a frame that runs no script (the frame's sandbox, and
// this policy besides), loads nothing but images and its own styles, and opens only inside our pages.
const MAIL_CSP = "default-src 'none'; img-src data: https: http:; style-src 'unsafe-inline'; frame-ancestors 'self'";

/** A mail's HTML as the answer for a sandboxed frame. */
export const mailBody = (c: Context, body: string) =>
  c.body(body, 200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': MAIL_CSP, 'X-Frame-Options': 'SAMEORIGIN' });

/** The sandboxed frame that shows a mail's HTML: from `src`, or as the target named `name` of a form. */
export const mailFrame = (title: string, target: { src: string } | { name: string }) =>
  'src' in target
    ? html`<iframe class="email-body" sandbox src="${target.src}" title="${title}"></iframe>`
    : html`<iframe class="email-body" sandbox name="${target.name}" title="${title}"></iframe>`;
