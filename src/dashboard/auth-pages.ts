import { setTimeout as delay } from 'node:timers/promises';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono, type Context } from 'hono';
import { html } from 'hono/html';
import { ApiError } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import { acceptInvite, findInvite, INVITE_PATH, signIn, signOut } from '../services/users.js';
import { AuthThrottle } from '../submission/auth-throttle.js';
import { done, field, fieldErrors, formError, plainPage } from './layout.js';
import { limitForms, renderError, section, securityHeaders } from './section.js';
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

function passwordForm(c: Context, options: { token: string; email: string; errors?: Record<string, string> }) {
  return plainPage(c, {
    title: 'Choose a password',
    status: options.errors ? 400 : 200,
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

/**
 * Signing in and out, and the invite link's page. Failed sign-ins are throttled per client address
 * and per account (AUTH_FAILURES_PER_MINUTE each): each failure answers later than the last, and
 * too many refuse further attempts for ten minutes.
 */
export function authPages(deps: AppDeps) {
  const app = new Hono<DashboardEnv>();
  const throttle = new AuthThrottle(deps.config.authFailuresPerMinute);
  for (const path of ['/login', `${INVITE_PATH}/:token`]) app.use(path, securityHeaders, checkOrigin(deps), limitForms(deps));
  app.onError(renderError(deps));

  app.get('/login', (c) => loginForm(c, { next: safeNext(c.req.query('next')) }));

  app.post('/login', async (c) => {
    const form = await c.req.parseBody();
    const email = text(form.email).trim().toLowerCase().slice(0, 254);
    const next = safeNext(text(form.next));
    const client = getConnInfo(c).remote.address ?? 'unknown';
    const keys = [`address ${client}`, `account ${email}`];
    const blocked = keys.map((key) => throttle.blockedUntil(key)).find((until) => until !== null);
    if (blocked) {
      c.header('Retry-After', String(Math.ceil((blocked - Date.now()) / 1000)));
      return loginForm(c, { email, next, status: 429, error: `Too many failed sign-ins. Try again in ${Math.ceil((blocked - Date.now()) / 60_000)} minutes.` });
    }
    try {
      const session = await signIn(deps, { email, password: text(form.password).slice(0, 1000) });
      setSessionCookie(c, deps, session);
      return c.redirect(next, 303);
    } catch (error) {
      if (!(error instanceof ApiError) || error.code !== 'UNAUTHORIZED') throw error;
      const wait = Math.max(...keys.map((key) => throttle.fail(key)));
      await delay(wait);
      return loginForm(c, { email, next, status: 401, error: error.message });
    }
  });

  app.get(`${INVITE_PATH}/:token`, async (c) => {
    const token = c.req.param('token');
    const invite = await findInvite(deps, token);
    return passwordForm(c, { token, email: invite.email });
  });

  app.post(`${INVITE_PATH}/:token`, async (c) => {
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
      throw error;
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
