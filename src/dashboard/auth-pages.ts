import { setTimeout as delay } from 'node:timers/promises';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { html } from 'hono/html';
import { ApiError } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import { AuthThrottle } from '../services/auth-throttle.js';
import { BUSY_RETRY_SECONDS } from '../people/passwords.js';
import { signIn, signOut } from '../people/sessions.js';
import { acceptInvite, findInvite, INVITE_PATH } from '../people/team.js';
import { done, field, fieldErrors, formError, plainPage } from './layout.js';
import { limitForms, renderError, section, securityHeaders, type FormBound } from './section.js';
import { checkOrigin, clearSessionCookie, type DashboardEnv, safeNext, sessionTokenOf, setSessionCookie } from './session.js';

const text = (value: unknown) => (typeof value === 'string' ? value : '');

function loginForm(c: Context, options: { email?: string; next: string; error?: string; status?: 200 | 401 | 429 }) {
  return plainPage(c, {
    title: 'Sign in',
    status: options.status,
    body: html`<h1>Sign in</h1>
${formError(options.error)}
<form method="post" action="/login" class="stack">
<input type="hidden" name="next" value="${options.next}">
${field('email', 'Email', { type: 'email', value: options.email, required: true, attrs: html`autocomplete="username" autofocus` })}
${field('password', 'Password', { type: 'password', required: true, attrs: html`autocomplete="current-password"` })}
<button type="submit">Sign in</button>
</form>
<p class="muted">No account? Ask whoever runs Mailroom for an invite.</p>`,
  });
}

function passwordForm(c: Context, options: { token: string; email: string; errors?: Record<string, string>; status?: 429 }) {
  return plainPage(c, {
    title: 'Choose a password',
    status: options.status ?? (options.errors ? 400 : 200),
    body: html`<h1>Welcome to Mailroom</h1>
<p>Choose a password for <strong>${options.email}</strong>.</p>
${formError(options.errors?.[''])}
<form method="post" action="${INVITE_PATH}/${options.token}" class="stack">
<input type="hidden" name="username" value="${options.email}" autocomplete="username">
${field('password', 'Password', { type: 'password', required: true, error: options.errors?.password, hint: 'At least 10 characters.', attrs: html`autocomplete="new-password" autofocus` })}
${field('confirm', 'Password again', { type: 'password', required: true, error: options.errors?.confirm, attrs: html`autocomplete="new-password"` })}
<button type="submit">Set password and sign in</button>
</form>`,
  });
}

// The forms anyone may post, without a session, hold three fields of a line each: a few KiB is
// plenty, and no one gets to make the server read or parse more.
const OPEN_FORM: FormBound = { bytes: 16 * 1024, fields: 20 };

/** Whether a service refused for a full queue of password derivations: nothing was checked. */
const queueFull = (error: unknown): error is ApiError => error instanceof ApiError && error.code === 'RATE_LIMITED';

/**
 * Signing in and out, and the invite link's page. Sign-ins are throttled per client address and
 * per account (AUTH_FAILURES_PER_MINUTE each): each attempt is counted before its password is
 * checked (and given back when right), each failure answers later than the last, and too many
 * refuse further attempts for ten minutes; a blocked address is refused before its form is read.
 */
export function authPages(deps: AppDeps) {
  const app = new Hono<DashboardEnv>();
  const throttle = new AuthThrottle(deps.config.authFailuresPerMinute);
  const addressOf = (c: Context) => `address ${getConnInfo(c).remote.address ?? 'unknown'}`;
  const refused = (c: Context, until: number, form: { email: string; next: string }) => {
    c.header('Retry-After', String(Math.ceil((until - Date.now()) / 1000)));
    return loginForm(c, { ...form, status: 429, error: `Too many failed sign-ins. Try again in ${Math.ceil((until - Date.now()) / 60_000)} minutes.` });
  };
  const refuseBlockedAddress: MiddlewareHandler = async (c, next) => {
    const until = throttle.blockedUntil(addressOf(c));
    if (until !== null) return refused(c, until, { email: '', next: safeNext(c.req.query('next')) });
    await next();
  };
  const busy = (c: Context) => c.header('Retry-After', String(BUSY_RETRY_SECONDS));
  for (const path of ['/login', `${INVITE_PATH}/:token`]) app.use(path, securityHeaders, checkOrigin(deps));
  app.onError(renderError(deps));

  app.get('/login', (c) => loginForm(c, { next: safeNext(c.req.query('next')) }));

  app.post('/login', refuseBlockedAddress, limitForms(deps, OPEN_FORM), async (c) => {
    const form = await c.req.parseBody();
    const email = text(form.email).trim().toLowerCase().slice(0, 254);
    const next = safeNext(text(form.next));
    const attempt = throttle.reserve([addressOf(c), `account ${email}`]);
    if ('blockedUntil' in attempt) return refused(c, attempt.blockedUntil, { email, next });
    try {
      const session = await signIn(deps, { email, password: text(form.password).slice(0, 1000) });
      attempt.giveBack();
      setSessionCookie(c, deps, session);
      return c.redirect(next, 303);
    } catch (error) {
      if (queueFull(error)) {
        attempt.giveBack();
        busy(c);
        return loginForm(c, { email, next, status: 429, error: error.message });
      }
      if (!(error instanceof ApiError) || error.code !== 'UNAUTHORIZED') throw error;
      await delay(attempt.delay);
      return loginForm(c, { email, next, status: 401, error: error.message });
    }
  });

  app.get(`${INVITE_PATH}/:token`, async (c) => {
    const token = c.req.param('token');
    const invite = await findInvite(deps, token);
    return passwordForm(c, { token, email: invite.email });
  });

  app.post(`${INVITE_PATH}/:token`, limitForms(deps, OPEN_FORM), async (c) => {
    const token = c.req.param('token');
    const invite = await findInvite(deps, token);
    const form = await c.req.parseBody();
    const password = text(form.password);
    if (password !== text(form.confirm)) return passwordForm(c, { token, email: invite.email, errors: { confirm: 'The two passwords differ' } });
    try {
      const session = await acceptInvite(deps, { token, password });
      setSessionCookie(c, deps, session);
      return done(c, '/', `Welcome, ${session.user.email}. You are signed in.`);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'VALIDATION_ERROR') return passwordForm(c, { token, email: invite.email, errors: fieldErrors(error) });
      if (!queueFull(error)) throw error;
      busy(c);
      return passwordForm(c, { token, email: invite.email, errors: { '': error.message }, status: 429 });
    }
  });

  const signOutSection = section(deps, '/logout');
  signOutSection.post('/', async (c) => {
    const token = sessionTokenOf(c);
    if (token) await signOut(deps, token);
    clearSessionCookie(c, deps);
    return c.redirect('/login', 303);
  });
  app.route('/', signOutSection);
  return app;
}
