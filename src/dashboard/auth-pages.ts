import { setTimeout as delay } from 'node:timers/promises';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html } from 'hono/html';
import { ApiError } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import { SYSTEM_LINK_PATHS } from '../mail/links.js';
import type { AuthThrottle } from '../services/auth-throttle.js';
import { WrongCredential } from '../people/account.js';
import { findPasswordReset, requestPasswordReset, resetPassword } from '../people/password-reset.js';
import { BUSY_RETRY_SECONDS } from '../people/passwords.js';
import { completeSignIn, openTicket, SECOND_STEP_TTL_MS, signIn, signOut } from '../people/sessions.js';
import { acceptInvite, findInvite, INVITE_PATH } from '../people/team.js';
import { done, field, fieldErrors, formError, plainPage, type Html } from './layout.js';
import { limitForms, renderError, section, securityHeaders, type FormBound } from './section.js';
import { checkOrigin, clearSessionCookie, type DashboardEnv, safeNext, secureCookies, sessionTokenOf, setSessionCookie } from './session.js';

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
<p><a href="${FORGOT_PATH}">Forgot password?</a></p>
<p class="muted">No account? Ask whoever runs Mailroom for an invite.</p>`,
  });
}

/** Where a person with two-factor sign-in on gives their code, once their password was right. */
export const SECOND_STEP_PATH = '/login/code';
export const FORGOT_PATH = '/forgot-password';
const RESET_PATH = SYSTEM_LINK_PATHS.reset;

// The password checked, sealed (people/sessions.ts), for the second step only: sent to that path alone.
const SECOND_STEP_COOKIE = 'mailroom_second_step';

function setSecondStepCookie(c: Context, deps: AppDeps, ticket: string): void {
  setCookie(c, SECOND_STEP_COOKIE, ticket, { httpOnly: true, sameSite: 'Lax', secure: secureCookies(deps), path: SECOND_STEP_PATH, maxAge: SECOND_STEP_TTL_MS / 1000 });
}

const clearSecondStepCookie = (c: Context, deps: AppDeps) => deleteCookie(c, SECOND_STEP_COOKIE, { path: SECOND_STEP_PATH, secure: secureCookies(deps) });

/** The second step this browser is at, or null: none, expired, or not made here. */
const secondStepOf = (c: Context, deps: AppDeps) => {
  const ticket = getCookie(c, SECOND_STEP_COOKIE);
  return ticket ? openTicket(deps, ticket, deps.clock()) : null;
};

function codeForm(c: Context, options: { next: string; error?: string; status?: 401 | 429 }) {
  return plainPage(c, {
    title: 'Two-factor sign-in',
    status: options.status,
    body: html`<h1>Two-factor sign-in</h1>
<p>Enter the code your authenticator app shows for Mailroom, or one of your recovery codes.</p>
${formError(options.error)}
<form method="post" action="${SECOND_STEP_PATH}" class="stack">
<input type="hidden" name="next" value="${options.next}">
${field('code', 'Code', { required: true, attrs: html`autocomplete="one-time-code" autofocus` })}
<button type="submit">Sign in</button>
</form>
<p class="muted">Lost your authenticator app and your recovery codes? Ask the operator of this Mailroom to turn two-factor sign-in off for you.</p>`,
  });
}

function forgotForm(c: Context, options: { email?: string; error?: string; status?: 400 | 429 } = {}) {
  return plainPage(c, {
    title: 'Forgot password',
    status: options.status,
    body: html`<h1>Forgot your password?</h1>
<p>Enter the address you sign in with: we mail you a link to choose a new password.</p>
${formError(options.error)}
<form method="post" action="${FORGOT_PATH}" class="stack">
${field('email', 'Email', { type: 'email', value: options.email, required: true, attrs: html`autocomplete="username" autofocus` })}
<button type="submit">Mail me a link</button>
</form>
<p><a href="/login">Back to sign in</a></p>`,
  });
}

// The one answer to every request for a reset link: it says nothing of whether the address has an account.
const linkOnItsWay = (c: Context) =>
  plainPage(c, {
    title: 'Check your email',
    body: html`<h1>Check your email</h1>
<p>If that address has an account, a link is on its way. It works once, for an hour.</p>
<p><a href="/login">Back to sign in</a></p>`,
  });

const deadResetLink = (c: Context, message: string) =>
  plainPage(c, {
    title: 'Link not valid',
    status: 404,
    body: html`<h1>This link does not work</h1>
<p>${message}</p>
<p><a class="button" href="${FORGOT_PATH}">Ask for a new link</a></p>`,
  });

/** What a page that asks for a new password says: the invite's, or a reset link's. */
type NewPasswordPage = { title: string; heading: string; lead: (email: string) => Html; action: string; label: string; button: string };

const INVITE_PAGE: NewPasswordPage = {
  title: 'Choose a password',
  heading: 'Welcome to Mailroom',
  lead: (email) => html`Choose a password for <strong>${email}</strong>.`,
  action: INVITE_PATH,
  label: 'Password',
  button: 'Set password and sign in',
};

const RESET_PAGE: NewPasswordPage = {
  title: 'Choose a new password',
  heading: 'Choose a new password',
  lead: (email) => html`For <strong>${email}</strong>. Every session of yours ends: you then sign in with the new password.`,
  action: RESET_PATH,
  label: 'New password',
  button: 'Change password',
};

function passwordForm(c: Context, wording: NewPasswordPage, options: { token: string; email: string; errors?: Record<string, string>; status?: 429 }) {
  return plainPage(c, {
    title: wording.title,
    status: options.status ?? (options.errors ? 400 : 200),
    body: html`<h1>${wording.heading}</h1>
<p>${wording.lead(options.email)}</p>
${formError(options.errors?.[''])}
<form method="post" action="${wording.action}/${options.token}" class="stack">
<input type="hidden" name="username" value="${options.email}" autocomplete="username">
${field('password', wording.label, { type: 'password', required: true, error: options.errors?.password, hint: 'At least 10 characters.', attrs: html`autocomplete="new-password" autofocus` })}
${field('confirm', `${wording.label} again`, { type: 'password', required: true, error: options.errors?.confirm, attrs: html`autocomplete="new-password"` })}
<button type="submit">${wording.button}</button>
</form>`,
  });
}

// The forms anyone may post, without a session, hold three fields of a line each: a few KiB is
// plenty, and no one gets to make the server read or parse more.
const OPEN_FORM: FormBound = { bytes: 16 * 1024, fields: 20 };

/** Whether an error is the service's refusal with this code. */
const isCode = (code: string) => (error: unknown): error is ApiError => error instanceof ApiError && error.code === code;

/** Whether a service refused for a full queue of password derivations: nothing was checked. */
export const queueFull = isCode('RATE_LIMITED');

/** The client's address as the throttle counts it. */
const addressOf = (c: Context) => `address ${getConnInfo(c).remote.address ?? 'unknown'}`;

/**
 * What a check of a password or second factor is counted against: the client's address and the
 * account. Sign-in, its second step and the account page count together, so none of them adds
 * guesses to another's.
 */
export const throttleKeys = (c: Context, email: string) => [addressOf(c), `account ${email}`];

/** Says when a throttled client may try again (Retry-After), in the words of the refusal. */
export function tryAgainIn(c: Context, until: number, what = 'failed sign-ins'): string {
  c.header('Retry-After', String(Math.ceil((until - Date.now()) / 1000)));
  return `Too many ${what}. Try again in ${Math.ceil((until - Date.now()) / 60_000)} minutes.`;
}

/**
 * Signing in (with the second step for two-factor sign-in) and out, the invite link's page, and
 * resetting a forgotten password. Sign-ins are throttled per client address and per account
 * (AUTH_FAILURES_PER_MINUTE each, `throttle` shared with the account page): each attempt, password
 * or code, is counted before it is checked (and given back when right), each failure answers later
 * than the last, and too many refuse further attempts for ten minutes; a blocked address is refused
 * before its form is read. Requests for reset links count the same way, each of them, on keys of their own.
 */
export function authPages(deps: AppDeps, throttle: AuthThrottle) {
  const app = new Hono<DashboardEnv>();
  const refused = (c: Context, until: number, form: { email: string; next: string }) => loginForm(c, { ...form, status: 429, error: tryAgainIn(c, until) });
  const refuseBlockedAddress: MiddlewareHandler = async (c, next) => {
    const until = throttle.blockedUntil(addressOf(c));
    if (until !== null) return refused(c, until, { email: '', next: safeNext(c.req.query('next')) });
    await next();
  };
  const busy = (c: Context) => c.header('Retry-After', String(BUSY_RETRY_SECONDS));
  for (const path of ['/login', `${INVITE_PATH}/:token`, SECOND_STEP_PATH, FORGOT_PATH, `${RESET_PATH}/:token`]) app.use(path, securityHeaders, checkOrigin(deps));
  app.onError(renderError(deps));

  app.get('/login', (c) => loginForm(c, { next: safeNext(c.req.query('next')) }));

  app.post('/login', refuseBlockedAddress, limitForms(deps, OPEN_FORM), async (c) => {
    const form = await c.req.parseBody();
    const email = text(form.email).trim().toLowerCase().slice(0, 254);
    const next = safeNext(text(form.next));
    const attempt = throttle.reserve(throttleKeys(c, email));
    if ('blockedUntil' in attempt) return refused(c, attempt.blockedUntil, { email, next });
    try {
      const outcome = await signIn(deps, { email, password: text(form.password).slice(0, 1000), now: deps.clock() });
      attempt.giveBack();
      if ('session' in outcome) {
        setSessionCookie(c, deps, outcome.session);
        return c.redirect(next, 303);
      }
      setSecondStepCookie(c, deps, outcome.ticket);
      return c.redirect(`${SECOND_STEP_PATH}?next=${encodeURIComponent(next)}`, 303);
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

  // The second step: no session until a code of the person's second factor is right. Only a
  // browser holding the ticket of a right password, not yet expired, gets here.
  const signInAgain = (c: Context, next: string, error: string) => {
    clearSecondStepCookie(c, deps);
    return loginForm(c, { next, status: 401, error });
  };

  app.get(SECOND_STEP_PATH, (c) => {
    const next = safeNext(c.req.query('next'));
    if (!secondStepOf(c, deps)) return c.redirect(`/login?next=${encodeURIComponent(next)}`, 303);
    return codeForm(c, { next });
  });

  app.post(SECOND_STEP_PATH, refuseBlockedAddress, limitForms(deps, OPEN_FORM), async (c) => {
    const form = await c.req.parseBody();
    const next = safeNext(text(form.next));
    const step = secondStepOf(c, deps);
    if (!step) return signInAgain(c, next, `Signing in takes at most ${SECOND_STEP_TTL_MS / 60_000} minutes from the password to the code: enter your password again.`);
    const attempt = throttle.reserve(throttleKeys(c, step.email));
    if ('blockedUntil' in attempt) return codeForm(c, { next, status: 429, error: tryAgainIn(c, attempt.blockedUntil) });
    try {
      const session = await completeSignIn(deps, { step, code: text(form.code).slice(0, 100), now: deps.clock() });
      attempt.giveBack();
      clearSecondStepCookie(c, deps);
      setSessionCookie(c, deps, session);
      return c.redirect(next, 303);
    } catch (error) {
      if (error instanceof WrongCredential) {
        await delay(attempt.delay);
        return codeForm(c, { next, status: 401, error: 'That code is not right, or has been used already.' });
      }
      attempt.giveBack();
      if (isCode('UNAUTHORIZED')(error)) return signInAgain(c, next, error.message);
      throw error;
    }
  });

  /**
   * Takes a new password posted on a page that asks for one: the two typed alike, then `save`;
   * a rule the password breaks, or a full queue of password derivations, is shown on the form.
   */
  const takeNewPassword = async (c: Context, wording: NewPasswordPage, form: { token: string; email: string }, save: (password: string) => Promise<Response>) => {
    const body = await c.req.parseBody();
    const password = text(body.password);
    if (password !== text(body.confirm)) return passwordForm(c, wording, { ...form, errors: { confirm: 'The two passwords differ' } });
    try {
      return await save(password);
    } catch (error) {
      if (isCode('VALIDATION_ERROR')(error)) return passwordForm(c, wording, { ...form, errors: fieldErrors(error) });
      if (!queueFull(error)) throw error;
      busy(c);
      return passwordForm(c, wording, { ...form, errors: { '': error.message }, status: 429 });
    }
  };

  app.get(`${INVITE_PATH}/:token`, async (c) => {
    const token = c.req.param('token');
    const invite = await findInvite(deps, token);
    return passwordForm(c, INVITE_PAGE, { token, email: invite.email });
  });

  app.post(`${INVITE_PATH}/:token`, limitForms(deps, OPEN_FORM), async (c) => {
    const token = c.req.param('token');
    const invite = await findInvite(deps, token);
    return takeNewPassword(c, INVITE_PAGE, { token, email: invite.email }, async (password) => {
      const session = await acceptInvite(deps, { token, password });
      setSessionCookie(c, deps, session);
      return done(c, '/', `Welcome, ${session.user.email}. You are signed in.`);
    });
  });

  app.get(FORGOT_PATH, (c) => forgotForm(c));

  // Every request counts against the client and the address, right or not: a reset link mails
  // the address, and nobody gets to fill a mailbox with them. The answer is the same whether the
  // address has an account or not.
  app.post(FORGOT_PATH, limitForms(deps, OPEN_FORM), async (c) => {
    const form = await c.req.parseBody();
    const email = text(form.email).trim().toLowerCase().slice(0, 254);
    const attempt = throttle.reserve([`reset ${addressOf(c)}`, `reset account ${email}`]);
    if ('blockedUntil' in attempt) return forgotForm(c, { email, status: 429, error: tryAgainIn(c, attempt.blockedUntil, 'requests for reset links') });
    try {
      await requestPasswordReset(deps, { email, now: deps.clock() });
    } catch (error) {
      if (!isCode('VALIDATION_ERROR')(error)) throw error;
      attempt.giveBack();
      return forgotForm(c, { email, status: 400, error: fieldErrors(error).email ?? error.message });
    }
    return linkOnItsWay(c);
  });

  /** The address of a live reset link, or why the link does not work. */
  const liveReset = (token: string) =>
    findPasswordReset(deps, { token, now: deps.clock() }).catch((error: unknown) => {
      if (isCode('NOT_FOUND')(error)) return { dead: error.message };
      throw error;
    });

  app.get(`${RESET_PATH}/:token`, async (c) => {
    const token = c.req.param('token');
    const reset = await liveReset(token);
    return 'dead' in reset ? deadResetLink(c, reset.dead) : passwordForm(c, RESET_PAGE, { token, email: reset.email });
  });

  app.post(`${RESET_PATH}/:token`, limitForms(deps, OPEN_FORM), async (c) => {
    const token = c.req.param('token');
    const reset = await liveReset(token);
    if ('dead' in reset) return deadResetLink(c, reset.dead);
    return takeNewPassword(c, RESET_PAGE, { token, email: reset.email }, async (password) => {
      try {
        await resetPassword(deps, { token, password, now: deps.clock(), ip: getConnInfo(c).remote.address ?? null });
      } catch (error) {
        if (isCode('NOT_FOUND')(error)) return deadResetLink(c, error.message);
        throw error;
      }
      return plainPage(c, {
        title: 'Password changed',
        body: html`<h1>Password changed</h1>
<p>Your new password is set, and every session of yours has ended.</p>
<p><a class="button" href="/login">Sign in</a></p>`,
      });
    });
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
