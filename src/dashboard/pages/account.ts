import { setTimeout as delay } from 'node:timers/promises';
import type { Context } from 'hono';
import { html } from 'hono/html';
import { ApiError } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import { asSelf, changePassword, WrongCredential } from '../../people/account.js';
import { BUSY_RETRY_SECONDS } from '../../people/passwords.js';
import { beginTwoFactorSetup, disableTwoFactor, enableTwoFactor, RECOVERY_CODE_COUNT, regenerateRecoveryCodes, twoFactorStatus } from '../../people/two-factor.js';
import type { AuthThrottle } from '../../services/auth-throttle.js';
import { callerOf } from '../api-call.js';
import { queueFull, throttleKeys, tryAgainIn } from '../auth-pages.js';
import { formValues } from '../forms.js';
import { copyable, csrfField, done, field, fieldErrors, formError, heading, page } from '../layout.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';

type Ctx = Context<DashboardEnv>;

/**
 * The forms of the page, each with its fields as the services name them and as the form does:
 * several forms ask for the current password or a code, and each field needs its own id.
 */
const FORMS = {
  password: { currentPassword: 'currentPassword', newPassword: 'newPassword' },
  setup: { currentPassword: 'setupPassword' },
  confirm: { code: 'setupCode' },
  codes: { code: 'codesCode' },
  off: { currentPassword: 'offPassword', code: 'offCode' },
} as const satisfies Record<string, Record<string, string>>;
type FormName = keyof typeof FORMS;

type View = {
  status?: 200 | 400 | 409 | 429;
  /** The form that was refused, and why, by its fields ("" for the form as a whole). */
  failed?: { form: FormName; errors: Record<string, string> };
  /** A secret just made: shown in this answer only. */
  setup?: { secret: string; uri: string };
  /** Recovery codes just made: shown in this answer only. */
  recoveryCodes?: string[];
};

/** The errors of `form` in `view`, by the form's field names. */
const errorsOf = (view: View, form: FormName) => (view.failed?.form === form ? view.failed.errors : {});

const password = (name: string, label: string, errors: Record<string, string>, autocomplete: 'current-password' | 'new-password', hint?: string) =>
  field(name, label, { type: 'password', required: true, error: errors[name], hint, attrs: html`autocomplete="${autocomplete}"` });

const code = (name: string, label: string, errors: Record<string, string>, hint?: string) =>
  field(name, label, { required: true, error: errors[name], hint, attrs: html`autocomplete="one-time-code" spellcheck="false"` });

const secretBox = (setup: { secret: string; uri: string }) => html`<section class="secret" role="status">
<p><strong class="secret-title">Add Mailroom to your authenticator app</strong></p>
<p>Enter this key in the app (time-based, 6 digits, every 30 seconds):</p>
<p>${copyable(setup.secret)}</p>
<p>Or give it this link, which holds the same:</p>
<p>${copyable(setup.uri)}</p>
<p><strong>It is shown only now.</strong> Then type the code the app shows below to turn two-factor sign-in on.</p>
</section>`;

const recoveryCodesBox = (codes: string[]) => html`<section class="secret" role="status">
<p><strong class="secret-title">Your ${codes.length} recovery codes</strong></p>
<pre>${codes.join('\n')}</pre>
<p><strong>Save them now, somewhere safe: they will not be shown again.</strong> Each signs you in once in place of a code,
if your authenticator app is lost. Any codes you had before no longer work.</p>
</section>`;

async function twoFactorPanel(c: Ctx, deps: AppDeps, view: View) {
  const status = await twoFactorStatus(deps, asSelf(callerOf(c)));
  if (status.enabled) {
    const codes = errorsOf(view, 'codes');
    const off = errorsOf(view, 'off');
    return html`${view.recoveryCodes ? recoveryCodesBox(view.recoveryCodes) : ''}
<p><strong>On.</strong> Signing in asks for a code of your authenticator app after your password.
You have ${status.recoveryCodesLeft} of ${RECOVERY_CODE_COUNT} recovery codes left.</p>
<h3>New recovery codes</h3>
${formError(codes[''])}
<form method="post" action="/account/two-factor/recovery-codes" class="stack">
${csrfField(c)}
${code('codesCode', 'Code', codes, 'A code of your authenticator app, or a recovery code.')}
<div><button type="submit" class="secondary">Make new recovery codes</button></div>
</form>
<h3>Turn off</h3>
${formError(off[''])}
<form method="post" action="/account/two-factor/off" class="stack">
${csrfField(c)}
${password('offPassword', 'Current password', off, 'current-password')}
${code('offCode', 'Code', off, 'A code of your authenticator app, or a recovery code.')}
<div><button type="submit" class="danger">Turn two-factor sign-in off</button></div>
</form>`;
  }
  const setup = errorsOf(view, 'setup');
  const confirm = errorsOf(view, 'confirm');
  const confirming = view.setup !== undefined || status.settingUp;
  return html`${view.setup ? secretBox(view.setup) : ''}
${
  confirming
    ? html`${formError(confirm[''])}
<form method="post" action="/account/two-factor/confirm" class="stack">
${csrfField(c)}
${code('setupCode', 'Code from the app', confirm, view.setup ? undefined : 'If your app has no Mailroom entry yet, start again below for a new key.')}
<div><button type="submit">Turn two-factor sign-in on</button></div>
</form>`
    : html`<p><strong>Off.</strong> With it on, signing in asks for a code of an authenticator app on your phone after your password,
so a password alone no longer opens your account.</p>`
}
${formError(setup[''])}
<form method="post" action="/account/two-factor" class="stack">
${csrfField(c)}
${password('setupPassword', 'Current password', setup, 'current-password')}
<div><button type="submit"${confirming ? html` class="secondary"` : ''}>${confirming ? 'Start again with a new key' : 'Set up two-factor sign-in'}</button></div>
</form>`;
}

async function accountPage(c: Ctx, deps: AppDeps, view: View = {}) {
  const user = c.get('user');
  const changing = errorsOf(view, 'password');
  return page(c, {
    title: 'Account',
    section: 'Account',
    status: view.status,
    body: html`${heading('Your account')}
<p class="muted">Signed in as <strong>${user.email}</strong> (${user.role}).</p>
<h2>Password</h2>
<section class="panel">
${formError(changing[''])}
<form method="post" action="/account/password" class="stack">
${csrfField(c)}
<input type="hidden" name="username" value="${user.email}" autocomplete="username">
${password('currentPassword', 'Current password', changing, 'current-password')}
${password('newPassword', 'New password', changing, 'new-password', 'At least 10 characters. Your other sessions end; this one stays.')}
${password('confirmPassword', 'New password again', changing, 'new-password')}
<div><button type="submit">Change password</button></div>
</form>
</section>
<h2>Two-factor sign-in</h2>
<section class="panel">
${await twoFactorPanel(c, deps, view)}
</section>`,
  });
}

/** A refusal the person can act on, on the form it is about; anything else goes on to be an error page. */
function refusal(c: Ctx, form: FormName, error: unknown): View {
  if (!(error instanceof ApiError)) throw error;
  const names: Record<string, string> = FORMS[form];
  if (error.code === 'VALIDATION_ERROR') {
    const errors = Object.fromEntries(Object.entries(fieldErrors(error)).map(([path, message]) => [names[path] ?? '', message]));
    return { status: 400, failed: { form, errors } };
  }
  if (error.code === 'CONFLICT') return { status: 409, failed: { form, errors: { '': error.message } } };
  if (queueFull(error)) {
    c.header('Retry-After', String(BUSY_RETRY_SECONDS));
    return { status: 429, failed: { form, errors: { '': error.message } } };
  }
  throw error;
}

/**
 * The person's own account: change the password, and set up, use and turn off two-factor sign-in.
 * Every change that checks a password or a code is counted by `throttle` with sign-in's, on the
 * same keys: a session does not buy more guesses of either.
 */
export function accountPages(deps: AppDeps, throttle: AuthThrottle) {
  const app = section(deps, '/account');

  /** Runs a change that checks a password or code: a wrong one counts as a failed sign-in and answers later; the rest are given back. */
  async function checked(c: Ctx, form: FormName, change: () => Promise<Response>): Promise<Response> {
    const attempt = throttle.reserve(throttleKeys(c, c.get('user').email));
    if ('blockedUntil' in attempt) {
      return accountPage(c, deps, { status: 429, failed: { form, errors: { '': tryAgainIn(c, attempt.blockedUntil, 'wrong passwords or codes') } } });
    }
    try {
      const answer = await change();
      attempt.giveBack();
      return answer;
    } catch (error) {
      if (error instanceof WrongCredential) await delay(attempt.delay);
      else attempt.giveBack();
      return accountPage(c, deps, refusal(c, form, error));
    }
  }

  app.get('/', (c) => accountPage(c, deps));

  app.post('/password', async (c) => {
    const values = await formValues(c);
    if ((values.newPassword ?? '') !== (values.confirmPassword ?? '')) {
      return accountPage(c, deps, { status: 400, failed: { form: 'password', errors: { confirmPassword: 'The two passwords differ' } } });
    }
    return checked(c, 'password', async () => {
      const input = { sessionToken: c.get('sessionToken'), currentPassword: values.currentPassword ?? '', newPassword: values.newPassword ?? '', now: deps.clock() };
      await changePassword(deps, asSelf(callerOf(c)), input);
      return done(c, '/account', 'Password changed. Your other sessions have ended.');
    });
  });

  // The secret goes straight into this answer, never through a redirect, so it is in no URL,
  // cookie or history entry; the page is not cached (page() says no-store).
  app.post('/two-factor', async (c) => {
    const values = await formValues(c);
    return checked(c, 'setup', async () => {
      const setup = await beginTwoFactorSetup(deps, asSelf(callerOf(c)), { currentPassword: values.setupPassword ?? '', now: deps.clock() });
      return accountPage(c, deps, { setup });
    });
  });

  app.post('/two-factor/confirm', async (c) => {
    const values = await formValues(c);
    return checked(c, 'confirm', async () => {
      const { recoveryCodes } = await enableTwoFactor(deps, asSelf(callerOf(c)), { code: values.setupCode ?? '', now: deps.clock() });
      return accountPage(c, deps, { recoveryCodes });
    });
  });

  app.post('/two-factor/recovery-codes', async (c) => {
    const values = await formValues(c);
    return checked(c, 'codes', async () => {
      const { recoveryCodes } = await regenerateRecoveryCodes(deps, asSelf(callerOf(c)), { code: values.codesCode ?? '', now: deps.clock() });
      return accountPage(c, deps, { recoveryCodes });
    });
  });

  app.post('/two-factor/off', async (c) => {
    const values = await formValues(c);
    return checked(c, 'off', async () => {
      await disableTwoFactor(deps, asSelf(callerOf(c)), { currentPassword: values.offPassword ?? '', code: values.offCode ?? '', now: deps.clock() });
      return done(c, '/account', 'Two-factor sign-in is off. Your recovery codes no longer work.');
    });
  });

  return app;
}
