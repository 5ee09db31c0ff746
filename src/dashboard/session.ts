import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Deps } from '../deps.js';
import { ApiError } from '../errors.js';
import { sessionUser, type NewSession, type SessionUser } from '../people/sessions.js';

export type DashboardEnv = { Variables: { user: SessionUser; sessionToken: string; requestId: string } };
type SessionDeps = Pick<Deps, 'db' | 'config'>;

export const SESSION_COOKIE = 'mailroom_session';
export const CSRF_FIELD = '_csrf';
export const CSRF_HEADER = 'x-csrf-token';

/** Cookies are sent only over TLS when the dashboard is served over https. */
export const secureCookies = (deps: Pick<Deps, 'config'>) => deps.config.publicUrl.startsWith('https:');

export function setSessionCookie(c: Context, deps: SessionDeps, session: NewSession): void {
  setCookie(c, SESSION_COOKIE, session.token, {
    httpOnly: true,
    sameSite: 'Lax',
    secure: secureCookies(deps),
    path: '/',
    expires: session.expiresAt,
  });
}

export const clearSessionCookie = (c: Context, deps: SessionDeps) => deleteCookie(c, SESSION_COOKIE, { path: '/', secure: secureCookies(deps) });

export const sessionTokenOf = (c: Context) => getCookie(c, SESSION_COOKIE) ?? null;

/**
 * The CSRF token of a session: derived from the session token, which only the cookie's holder
 * knows, so nothing more is stored and another site can neither read nor compute it.
 */
export const csrfTokenFor = (sessionToken: string) => createHmac('sha256', sessionToken).update('mailroom csrf').digest('base64url');

/** Where a sign-in may send the person next: a path of this site, never another origin. */
export function safeNext(next: string | undefined | null): string {
  return next && /^\/(?![/\\])[\x21-\x7e]*$/.test(next) ? next : '/';
}

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A state-changing request must come from our own pages: a browser's Origin (when sent) must be
 * ours, and a signed-in request must carry the session's CSRF token, in the form or a header.
 */
export function checkOrigin(deps: SessionDeps): MiddlewareHandler {
  const publicOrigin = new URL(deps.config.publicUrl).origin;
  return async (c, next) => {
    if (STATE_CHANGING.has(c.req.method)) {
      const origin = c.req.header('origin');
      if (origin !== undefined && origin !== publicOrigin && origin !== new URL(c.req.url).origin) {
        throw new ApiError('FORBIDDEN', 'This request came from another site and was refused');
      }
    }
    await next();
  };
}

/**
 * Signs the person in from the session cookie, or sends them to /login (a page) or refuses (a
 * state-changing request); then checks the CSRF token of every state-changing request.
 */
export function requireSession(deps: SessionDeps): MiddlewareHandler<DashboardEnv> {
  return async (c, next) => {
    const token = sessionTokenOf(c);
    const user = token ? await sessionUser(deps, token) : null;
    if (!user || !token) {
      if (token) clearSessionCookie(c, deps);
      if (c.req.method === 'GET' || c.req.method === 'HEAD') {
        const { pathname, search } = new URL(c.req.url);
        const path = pathname + search;
        return c.redirect(path === '/' ? '/login' : `/login?next=${encodeURIComponent(path)}`, 303);
      }
      throw new ApiError('UNAUTHORIZED', 'Your session has ended; sign in again');
    }
    if (STATE_CHANGING.has(c.req.method)) {
      const sent = c.req.header(CSRF_HEADER) ?? (await formField(c, CSRF_FIELD));
      const expected = csrfTokenFor(token);
      if (!sent || sent.length !== expected.length || !timingSafeEqual(Buffer.from(sent), Buffer.from(expected))) {
        throw new ApiError('FORBIDDEN', 'The form was missing its security token or it did not match; reload the page and try again');
      }
    }
    c.set('user', user);
    c.set('sessionToken', token);
    await next();
  };
}

export const FORM_TYPES = /^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i;

/** A field of a form body (parsed once; Hono keeps it for the handler), or undefined for other bodies. */
export async function formField(c: Context, name: string): Promise<string | undefined> {
  if (!FORM_TYPES.test(c.req.header('content-type') ?? '')) return undefined;
  const value = (await c.req.parseBody())[name];
  return typeof value === 'string' ? value : undefined;
}
