import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Deps } from '../deps.js';
import { escapeHtml } from '../mail/html.js';
import { isWebUrl, PAGE_PATHS } from '../mail/links.js';
import { confirmSubscription, unsubscribe } from '../services/subscriptions.js';
import { recordClick, recordOpen, type Reader } from './tracking.js';

/** A plain page: these are read by people, not API clients, and must never leak more than this. */
function page(c: Context, status: ContentfulStatusCode, title: string, body: string) {
  const html =
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">' +
    `<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title></head>` +
    `<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem">` +
    `<h1 style="font-size:1.4rem">${escapeHtml(title)}</h1>${body}</body></html>`;
  return c.html(html, status, { 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
}

const invalidLink = (c: Context) =>
  page(c, 400, 'This link is not valid', '<p>The link may be incomplete or changed. Use the link from the email as it was sent.</p>');

const unknownLink = (c: Context) => page(c, 404, 'Not found', '<p>There is nothing at this address.</p>');

// A transparent 1×1 GIF: the open-tracking pixel.
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/** A form that POSTs back to the same address: a GET (a mail scanner's) never changes anything. */
const confirmForm = (c: Context, title: string, text: string, button: string) =>
  page(c, 200, title, `<p>${escapeHtml(text)}</p><form method="post"><button type="submit" style="font-size:1rem;padding:.6rem 1.2rem">${escapeHtml(button)}</button></form>`);

/**
 * The recipients' pages outside /v1, without an API key: each link carries a token signed with the
 * server secret, and a bad one gets a plain 400 page.
 */
export function recipientPages(deps: Deps) {
  const pages = new Hono();
  // Nothing on these pages is meant to be framed, sniffed as another type, or load anything.
  for (const prefix of Object.values(PAGE_PATHS)) {
    pages.use(`${prefix}/*`, async (c, next) => {
      await next();
      c.header('X-Content-Type-Options', 'nosniff');
      c.header('X-Frame-Options', 'DENY');
      c.header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    });
  }

  // The socket's address: a forwarding header would be the reader's word, and anyone can write one.
  const readerOf = (c: Context): Reader => ({ userAgent: c.req.header('user-agent') ?? null, ip: getConnInfo(c).remote.address ?? null });

  /** Tracking must never stand between a reader and the page or image: a fault is logged, not shown. */
  const track = async (c: Context, work: Promise<boolean>) =>
    work.catch((error: unknown) => {
      deps.log.error('recording a tracking event failed', { error, path: c.req.path });
      return true;
    });

  pages.get(`${PAGE_PATHS.open}/:token`, async (c) => {
    const token = deps.tokens.verify(c.req.param('token'), 'open');
    if (!token || !(await track(c, recordOpen(deps, token.emailId, readerOf(c))))) return unknownLink(c);
    return c.body(PIXEL, 200, { 'Content-Type': 'image/gif', 'Cache-Control': 'no-store, private', 'Referrer-Policy': 'no-referrer' });
  });

  // Only ever to the URL the token signs: the link as it was in the mail, never an open redirect.
  pages.get(`${PAGE_PATHS.click}/:token`, async (c) => {
    const token = deps.tokens.verify(c.req.param('token'), 'click');
    if (!token || !isWebUrl(token.url) || !(await track(c, recordClick(deps, token.emailId, token.url, readerOf(c))))) {
      return unknownLink(c);
    }
    return c.redirect(token.url, 302);
  });

  pages.get(`${PAGE_PATHS.unsubscribe}/:token`, (c) => {
    if (!deps.tokens.verify(c.req.param('token'), 'unsubscribe')) return invalidLink(c);
    return confirmForm(c, 'Unsubscribe', 'Do you want to stop receiving these emails?', 'Unsubscribe');
  });

  // Both the page's button and RFC 8058 one-click (List-Unsubscribe=One-Click) land here.
  pages.post(`${PAGE_PATHS.unsubscribe}/:token`, async (c) => {
    const token = deps.tokens.verify(c.req.param('token'), 'unsubscribe');
    if (!token) return invalidLink(c);
    await unsubscribe(deps, token);
    return page(c, 200, 'You are unsubscribed', '<p>You will not receive these emails any more.</p>');
  });

  /** The confirmation token, or the page that says why there is none. */
  const confirmation = (c: Context) => {
    const token = deps.tokens.verify(c.req.param('token') ?? '', 'confirm');
    if (!token) return { page: invalidLink(c) };
    if (token.expiresAt < Date.now()) {
      return { page: page(c, 400, 'This link has expired', '<p>Confirmation links hold for 7 days. Sign up again to get a new one.</p>') };
    }
    return { token };
  };

  pages.get(`${PAGE_PATHS.confirm}/:token`, (c) => {
    const { page: refused } = confirmation(c);
    return refused ?? confirmForm(c, 'Confirm your subscription', 'Please confirm that you want to receive these emails.', 'Confirm');
  });

  pages.post(`${PAGE_PATHS.confirm}/:token`, async (c) => {
    const { page: refused, token } = confirmation(c);
    if (refused) return refused;
    const outcome = await confirmSubscription(deps, token!);
    if (outcome === 'missing') return page(c, 404, 'Subscription not found', '<p>This address is no longer on the list.</p>');
    return page(c, 200, 'Thank you', outcome === 'confirmed' ? '<p>Your subscription is confirmed.</p>' : '<p>Nothing to confirm: this subscription was already settled.</p>');
  });

  return pages;
}
