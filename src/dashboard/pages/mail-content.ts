import type { Context } from 'hono';
import { html } from 'hono/html';

// A mail's HTML is the sender's: it is shown in a frame that runs no script (the frame's sandbox, and
// this policy besides), loads nothing but images and its own styles, and opens only inside our pages.
// The policy's own sandbox holds where the frame's does not (the body's address opened by itself, as a
// link in a phishing mail would): no script, a unique origin without the dashboard's cookies, and no
// form that could post what someone types into a look-alike of our sign-in page.
const MAIL_CSP = "sandbox; default-src 'none'; img-src data: https: http:; style-src 'unsafe-inline'; font-src data: https:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'";

/** A mail's HTML as the answer for a sandboxed frame. */
export const mailBody = (c: Context, body: string) =>
  c.body(body, 200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': MAIL_CSP, 'X-Frame-Options': 'SAMEORIGIN' });

/** The sandboxed frame that shows a mail's HTML: from `src`, or as the target named `name` of a form. */
export const mailFrame = (title: string, target: { src: string } | { name: string }) =>
  'src' in target
    ? html`<iframe class="email-body" sandbox referrerpolicy="no-referrer" src="${target.src}" title="${title}"></iframe>`
    : html`<iframe class="email-body" sandbox referrerpolicy="no-referrer" name="${target.name}" title="${title}"></iframe>`;
