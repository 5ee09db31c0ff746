import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../src/dashboard/session.js';
import { KeyVault } from '../src/domains/key-vault.js';
import { resetTwoFactor } from '../src/people/team.js';
import { base32Decode, hotp, PERIOD_SECONDS, timeStep } from '../src/people/totp.js';
import { PASSWORD } from './helpers/browser.js';
import { FormClient, signedInClient, visibleText, type Answer } from './helpers/form-client.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// Each person's own account, as they use it through the dashboard's forms (plain posts, no
// script): changing the password, and two-factor sign-in with an authenticator app's codes and
// recovery codes. The server's clock (deps.clock) stands still where a test says, so codes are
// made for the time steps the test chooses.

const NEW_PASSWORD = 'a new password nobody guesses';
const SECOND_STEP = '/login/code';

let server: TestServer;
let teamId: number;
let unique = 0;

beforeAll(async () => {
  server = await startTestServer();
  ({ teamId } = await server.team('Accounts'));
});
afterAll(() => server?.stop());

/** A person of the team who accepted their invite: signed in, in a client of their own. */
const person = (target = server, team = teamId) => signedInClient(target, team, `person-${unique++}@accounts.test`);

/** Signs in from a fresh client: with two-factor sign-in on, the client is then at the second step. */
async function signIn(email: string, password: string, target = server) {
  const client = new FormClient(target.url);
  const answer = await client.post('/login', { email, password });
  return { client, answer };
}

/** Whether the client's session opens a page. */
const signedIn = async (client: FormClient) => (await client.get('/account')).status === 200;

const errorOf = (answer: Answer) => /role="alert">([^<]*)</.exec(answer.text)?.[1] ?? /class="error"[^>]*>([^<]*)</.exec(answer.text)?.[1];

const auditRows = (userId: string) => server.deps.db.selectFrom('audit_log').selectAll().where('target_id', '=', userId).orderBy('id').execute();

/** Stops the server's clock at `at` (milliseconds), for the TOTP checks. */
const clockAt = (at: number) => {
  server.deps.clock = () => new Date(at);
};

/** A moment in the middle of a time step, well after now. */
let moment = (Math.floor(Date.now() / 1000 / PERIOD_SECONDS) + 100) * PERIOD_SECONDS * 1000 + 10_000;

/** Two-factor sign-in set up and on for a signed-in person; answers the secret and the recovery codes shown. */
async function withTwoFactor(client: FormClient) {
  clockAt(moment);
  const setup = await client.post('/account/two-factor', { setupPassword: PASSWORD });
  expect(setup.status).toBe(200);
  const secret = /secret=([A-Z2-7]+)/.exec(setup.text)![1]!;
  const on = await client.post('/account/two-factor/confirm', { setupCode: codeAt(secret, moment) });
  expect(on.status).toBe(200);
  const recoveryCodes = /<pre>([^<]*)<\/pre>/.exec(on.text)![1]!.split('\n');
  // Later codes are for later steps: each test moves on from the last one's time.
  moment += 10 * PERIOD_SECONDS * 1000;
  clockAt(moment);
  return { secret, recoveryCodes, setupPage: setup.text };
}

/** The code of the authenticator app at `at` (milliseconds), `offset` steps on. */
const codeAt = (secret: string, at: number, offset = 0) => hotp(base32Decode(secret), timeStep(new Date(at)) + offset);

describe('changing the password', () => {
  it('needs the current password: a wrong one is refused with a 400 that says so, and the password stays', async () => {
    const { email, client } = await person();
    const refused = await client.post('/account/password', { currentPassword: 'not my password', newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD });
    expect(refused.status).toBe(400);
    expect(errorOf(refused)).toBe('is not your current password');
    expect((await signIn(email, PASSWORD)).answer.status).toBe(303);
    expect((await signIn(email, NEW_PASSWORD)).answer.status).toBe(401);
  });

  it('refuses a new password the password rules refuse, and two that differ, changing nothing', async () => {
    const { email, client } = await person();
    const common = await client.post('/account/password', { currentPassword: PASSWORD, newPassword: 'qwertyuiop', confirmPassword: 'qwertyuiop' });
    expect(common.status).toBe(400);
    expect(common.text).toContain('is one of the most common passwords');
    const differ = await client.post('/account/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: `${NEW_PASSWORD}!` });
    expect(differ.status).toBe(400);
    expect(differ.text).toContain('The two passwords differ');
    expect((await signIn(email, PASSWORD)).answer.status).toBe(303);
  });

  it('ends every other session of the person and keeps this one; the new password signs in, the old one no longer does; the audit log has it, never the password', async () => {
    const { email, userId, client } = await person();
    const elsewhere = (await signIn(email, PASSWORD)).client;
    expect(await signedIn(elsewhere)).toBe(true);

    const changed = await client.post('/account/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD });
    expect(changed.status).toBe(303);
    expect(changed.location).toBe('/account');
    expect(visibleText((await client.get('/account')).text)).toContain('Password changed. Your other sessions have ended.');
    expect(await signedIn(client)).toBe(true);
    expect(await signedIn(elsewhere)).toBe(false);

    expect((await signIn(email, PASSWORD)).answer.status).toBe(401);
    expect((await signIn(email, NEW_PASSWORD)).answer.status).toBe(303);

    const rows = await auditRows(userId);
    expect(rows.map((row) => [row.action, row.actor_type, row.actor_id, row.actor_label])).toEqual([['user.passwordChanged', 'user', userId, email]]);
    const hash = (await server.deps.db.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirstOrThrow()).password_hash!;
    expect(JSON.stringify(rows)).not.toContain(NEW_PASSWORD);
    expect(JSON.stringify(rows)).not.toContain(hash.split('$').at(-1));
  });

  it('is only for the signed-in: without a session the page sends to sign in, and a post without the CSRF token is refused', async () => {
    const visitor = new FormClient(server.url);
    const page = await visitor.get('/account');
    expect(page.status).toBe(303);
    expect(page.location).toBe('/login?next=%2Faccount');

    expect((await visitor.post('/account/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD })).status).toBe(401);

    // Posted as another site would: the cookie goes along, the token cannot.
    const { email, client } = await person();
    const withCookieOnly = await fetch(`${server.url}/account/password`, {
      method: 'POST',
      headers: { cookie: `${SESSION_COOKIE}=${client.session}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD }),
      redirect: 'manual',
    });
    expect(withCookieOnly.status).toBe(403);
    expect((await signIn(email, PASSWORD)).answer.status).toBe(303);
  });
});

describe('the Account link', () => {
  it('is in the header of every signed-in page, next to the address and Sign out, and marks the account page as current', async () => {
    const { client } = await person();
    const overview = await client.get('/');
    expect(overview.text).toMatch(/<form method="post" action="\/logout" class="signout"><span class="who">[^<]+<\/span><a href="\/account">Account<\/a>/);
    expect((await client.get('/account')).text).toContain('<a href="/account" aria-current="page">Account</a>');
  });
});

describe('two-factor sign-in', () => {
  it('is set up with the current password, shows the key and its otpauth URI once, and is on only once a current code confirms it; then ten recovery codes are shown once', async () => {
    const { email, userId, client } = await person();
    clockAt(moment);
    const wrongPassword = await client.post('/account/two-factor', { setupPassword: 'not my password' });
    expect(wrongPassword.status).toBe(400);
    expect(errorOf(wrongPassword)).toBe('is not your current password');

    const setup = await client.post('/account/two-factor', { setupPassword: PASSWORD });
    expect(setup.status).toBe(200);
    const uri = /otpauth:\/\/[^"<\s]+/.exec(setup.text)![0]!.replace(/&amp;/g, '&');
    const secret = new URL(uri).searchParams.get('secret')!;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(uri).toBe(`otpauth://totp/Mailroom:${email}?secret=${secret}&issuer=Mailroom&algorithm=SHA1&digits=6&period=30`);
    expect(setup.text).toContain(`<code>${secret}</code>`);

    // Not on yet: the password alone still signs in, and the key is not shown again.
    expect((await signIn(email, PASSWORD)).answer.location).toBe('/');
    const again = await client.get('/account');
    expect(again.text).not.toContain(secret);
    expect(visibleText(again.text)).toContain('Turn two-factor sign-in on');

    const wrongCode = await client.post('/account/two-factor/confirm', { setupCode: codeAt(secret, moment, 5) });
    expect(wrongCode.status).toBe(400);
    expect((await signIn(email, PASSWORD)).answer.location).toBe('/');

    const on = await client.post('/account/two-factor/confirm', { setupCode: codeAt(secret, moment) });
    expect(on.status).toBe(200);
    const codes = /<pre>([^<]*)<\/pre>/.exec(on.text)![1]!.split('\n');
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/);
    expect(visibleText(on.text)).toContain('they will not be shown again');

    const later = await client.get('/account');
    for (const code of codes) expect(later.text).not.toContain(code);
    expect(visibleText(later.text)).toContain('You have 10 of 10 recovery codes left');
    expect((await auditRows(userId)).map((row) => row.action)).toEqual(['user.twoFactorEnabled']);
    moment += 10 * PERIOD_SECONDS * 1000;
  });

  it('a right password alone starts no session: the second step asks for a code, and its cookie alone opens nothing', async () => {
    const { email, client } = await person();
    await withTwoFactor(client);

    const { client: browser, answer } = await signIn(email, PASSWORD);
    expect(answer.status).toBe(303);
    expect(answer.location).toBe(`${SECOND_STEP}?next=%2F`);
    expect(browser.session).toBeUndefined();
    expect([...browser.cookies.keys()]).toEqual(['mailroom_second_step']);

    // The cookie of the second step is no session: pages send to sign in.
    expect((await browser.get('/')).location).toBe('/login');
    expect((await browser.get('/account')).status).toBe(303);
    const step = await browser.get(SECOND_STEP);
    expect(step.status).toBe(200);
    expect(visibleText(step.text)).toContain('Enter the code your authenticator app shows');

    for (const code of ['', '000000', 'not-a-code']) {
      const refused = await browser.post(SECOND_STEP, { code });
      expect(refused.status, code).toBe(401);
      expect(browser.session).toBeUndefined();
    }

    // Nor can the second step be reached without the password: no cookie, or one not made by this server.
    const stranger = new FormClient(server.url);
    expect((await stranger.get(SECOND_STEP)).location).toBe('/login?next=%2F');
    stranger.cookies.set('mailroom_second_step', encodeURIComponent(new KeyVault('some-other-secret-0003').sealText(JSON.stringify({ purpose: 'mailroom: password checked, second factor awaited', userId: 'x', email, expiresAt: Date.now() + 60_000 }))));
    const forged = await stranger.post(SECOND_STEP, { code: '123456' });
    expect(forged.status).toBe(401);
    expect(visibleText(forged.text)).toContain('enter your password again');
    expect(stranger.session).toBeUndefined();
  });

  it("a current code is accepted, and the step before and after it; each step's code once only; a code two steps off is refused", async () => {
    const { email, client } = await person();
    const { secret } = await withTwoFactor(client);
    const codeSignIn = async (code: string) => {
      const { client: browser } = await signIn(email, PASSWORD);
      const answer = await browser.post(SECOND_STEP, { code, next: '/account' });
      return { answer, browser };
    };

    const earlier = await codeSignIn(codeAt(secret, moment, -1));
    expect(earlier.answer.status).toBe(303);
    expect(earlier.answer.location).toBe('/account');
    expect(earlier.browser.cookies.has('mailroom_second_step')).toBe(false);
    expect(await signedIn(earlier.browser)).toBe(true);

    expect((await codeSignIn(codeAt(secret, moment))).answer.status).toBe(303);
    // The same code again, in the same step: refused, as is the earlier step's.
    const replayed = await codeSignIn(codeAt(secret, moment));
    expect(replayed.answer.status).toBe(401);
    expect(errorOf(replayed.answer)).toBe('That code is not right, or has been used already.');
    expect(await signedIn(replayed.browser)).toBe(false);
    expect((await codeSignIn(codeAt(secret, moment, -1))).answer.status).toBe(401);

    expect((await codeSignIn(codeAt(secret, moment, 1))).answer.status).toBe(303);
    expect((await codeSignIn(codeAt(secret, moment, 2))).answer.status).toBe(401);
    // A code typed with a space in it reads the same; the next step's comes in its turn.
    moment += PERIOD_SECONDS * 1000 * 2;
    clockAt(moment);
    const spaced = codeAt(secret, moment);
    expect((await codeSignIn(`${spaced.slice(0, 3)} ${spaced.slice(3)}`)).answer.status).toBe(303);
    moment += 10 * PERIOD_SECONDS * 1000;
  });

  it('a recovery code signs in once, and only once, however it is typed', async () => {
    const { email, client } = await person();
    const { recoveryCodes } = await withTwoFactor(client);
    const code = recoveryCodes[3]!;

    const first = await signIn(email, PASSWORD);
    const used = await first.client.post(SECOND_STEP, { code: code.toUpperCase().replace(/-/g, ' ') });
    expect(used.status).toBe(303);
    expect(await signedIn(first.client)).toBe(true);

    const second = await signIn(email, PASSWORD);
    const again = await second.client.post(SECOND_STEP, { code });
    expect(again.status).toBe(401);
    expect(await signedIn(second.client)).toBe(false);
    expect(visibleText((await client.get('/account')).text)).toContain('You have 9 of 10 recovery codes left');
  });

  it('the second step expires five minutes after the password: then even a right code is refused and the password is asked again', async () => {
    const { email, client } = await person();
    const { secret } = await withTwoFactor(client);
    const { client: browser } = await signIn(email, PASSWORD);

    moment += 5 * 60_000 + 1000;
    clockAt(moment);
    const late = await browser.post(SECOND_STEP, { code: codeAt(secret, moment) });
    expect(late.status).toBe(401);
    expect(visibleText(late.text)).toContain('enter your password again');
    expect(browser.session).toBeUndefined();
    expect(browser.cookies.has('mailroom_second_step')).toBe(false);
    expect((await browser.get(SECOND_STEP)).status).toBe(303);
    moment += 10 * PERIOD_SECONDS * 1000;
  });

  it('a password changed between the two steps voids the first: the old password and a right code start no session', async () => {
    const { email, client } = await person();
    const { secret } = await withTwoFactor(client);
    const { client: thief } = await signIn(email, PASSWORD);
    const changed = await client.post('/account/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD });
    expect(changed.status).toBe(303);

    const refused = await thief.post(SECOND_STEP, { code: codeAt(secret, moment) });
    expect(refused.status).toBe(401);
    expect(visibleText(refused.text)).toContain('enter your password again');
    expect(thief.session).toBeUndefined();
    const { client: owner } = await signIn(email, NEW_PASSWORD);
    expect((await owner.post(SECOND_STEP, { code: codeAt(secret, moment) })).status).toBe(303);
    moment += 10 * PERIOD_SECONDS * 1000;
  });

  it('new recovery codes need a code: the old ones stop working, the new ones work', async () => {
    const { email, userId, client } = await person();
    const { secret, recoveryCodes: old } = await withTwoFactor(client);

    const refused = await client.post('/account/two-factor/recovery-codes', { codesCode: '000000' });
    expect(refused.status).toBe(400);
    expect(errorOf(refused)).toBe('is not a current code of your authenticator app or an unused recovery code');

    const made = await client.post('/account/two-factor/recovery-codes', { codesCode: codeAt(secret, moment) });
    expect(made.status).toBe(200);
    const fresh = /<pre>([^<]*)<\/pre>/.exec(made.text)![1]!.split('\n');
    expect(fresh).toHaveLength(10);
    expect(fresh.filter((code) => old.includes(code))).toEqual([]);

    const withOld = await signIn(email, PASSWORD);
    expect((await withOld.client.post(SECOND_STEP, { code: old[0]! })).status).toBe(401);
    const withNew = await signIn(email, PASSWORD);
    expect((await withNew.client.post(SECOND_STEP, { code: fresh[0]! })).status).toBe(303);
    expect((await auditRows(userId)).map((row) => row.action)).toEqual(['user.twoFactorEnabled', 'user.recoveryCodesRegenerated']);
  });

  it('is turned off with the current password and a code, not with either alone; then the password alone signs in again', async () => {
    const { email, userId, client } = await person();
    const { secret } = await withTwoFactor(client);

    const wrongPassword = await client.post('/account/two-factor/off', { offPassword: 'not my password', offCode: codeAt(secret, moment) });
    expect(wrongPassword.status).toBe(400);
    expect(errorOf(wrongPassword)).toBe('is not your current password');
    const wrongCode = await client.post('/account/two-factor/off', { offPassword: PASSWORD, offCode: '000000' });
    expect(wrongCode.status).toBe(400);
    expect((await signIn(email, PASSWORD)).answer.location).toBe(`${SECOND_STEP}?next=%2F`);

    const off = await client.post('/account/two-factor/off', { offPassword: PASSWORD, offCode: codeAt(secret, moment) });
    expect(off.status).toBe(303);
    expect(visibleText((await client.get('/account')).text)).toContain('Two-factor sign-in is off.');
    expect((await signIn(email, PASSWORD)).answer.location).toBe('/');
    const stored = await server.deps.db.selectFrom('users').select(['totp_secret', 'totp_enabled_at']).where('id', '=', userId).executeTakeFirstOrThrow();
    expect(stored).toEqual({ totp_secret: null, totp_enabled_at: null });
    expect((await auditRows(userId)).map((row) => row.action)).toEqual(['user.twoFactorEnabled', 'user.twoFactorDisabled']);
  });
});

describe('a person who lost their authenticator and their recovery codes', () => {
  it('has two-factor sign-in turned off by an admin or the operator: their sessions end and the password alone signs in; only an owner does it to an owner', async () => {
    const admin = { teamId, domainId: null, role: 'admin' as const, actor: { type: 'user' as const, id: 'usr_admin', label: 'admin@accounts.test', ip: null } };
    const member = await signedInClient(server, teamId, `lost-${unique++}@accounts.test`, 'member');
    await withTwoFactor(member.client);
    const owner = await signedInClient(server, teamId, `lost-owner-${unique++}@accounts.test`, 'owner');
    await withTwoFactor(owner.client);

    await expect(resetTwoFactor(server.deps, admin, { userId: owner.userId })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect((await signIn(owner.email, PASSWORD)).answer.location).toBe(`${SECOND_STEP}?next=%2F`);
    expect((await owner.client.get('/account')).status).toBe(200);

    expect(await resetTwoFactor(server.deps, admin, { userId: member.userId })).toMatchObject({ userId: member.userId, twoFactor: false });
    expect((await member.client.get('/account')).location).toMatch(/^\/login/);
    expect((await signIn(member.email, PASSWORD)).answer.location).toBe('/');
    expect((await auditRows(member.userId)).map((row) => [row.action, row.actor_id])).toEqual([['user.twoFactorEnabled', member.userId], ['user.twoFactorDisabled', 'usr_admin']]);

    await resetTwoFactor(server.deps, { teamId, domainId: null }, { userId: owner.userId });
    expect((await signIn(owner.email, PASSWORD)).answer.location).toBe('/');
  });
});

describe('wrong passwords and codes count with sign-in, per account and per address', () => {
  const LIMIT = 3;
  let strict: TestServer;
  let strictTeam: number;

  beforeAll(async () => {
    strict = await startTestServer({ AUTH_FAILURES_PER_MINUTE: String(LIMIT) });
    ({ teamId: strictTeam } = await strict.team('Throttled'));
  });
  afterAll(() => strict?.stop());

  it('wrong codes at the second step block the account: then even the right code is refused (429), and so is the password at sign-in', async () => {
    const { email, client } = await person(strict, strictTeam);
    strict.deps.clock = () => new Date(moment);
    const setup = await client.post('/account/two-factor', { setupPassword: PASSWORD });
    const secret = /secret=([A-Z2-7]+)/.exec(setup.text)![1]!;
    expect((await client.post('/account/two-factor/confirm', { setupCode: codeAt(secret, moment) })).status).toBe(200);

    // Each attempt from an address of its own: only the account's count can block them all.
    const browsers: FormClient[] = [];
    for (let i = 0; i <= LIMIT; i++) {
      const browser = new FormClient(strict.url, `127.0.1.${i + 1}`);
      expect((await browser.post('/login', { email, password: PASSWORD })).status).toBe(303);
      browsers.push(browser);
    }
    for (let i = 0; i < LIMIT; i++) expect((await browsers[i]!.post(SECOND_STEP, { code: '000000' })).status).toBe(401);
    const blocked = await browsers[LIMIT]!.post(SECOND_STEP, { code: codeAt(secret, moment, 1) });
    expect(blocked.status).toBe(429);
    expect(blocked.text).toContain('Too many failed sign-ins');
    expect(browsers[LIMIT]!.session).toBeUndefined();
    expect((await new FormClient(strict.url, '127.0.1.9').post('/login', { email, password: PASSWORD })).status).toBe(429);
  });

  it('wrong current passwords on the account page count too: after the limit the page refuses even the right one (429)', async () => {
    const { email, client } = await person(strict, strictTeam);
    for (let i = 0; i < LIMIT; i++) {
      expect((await client.post('/account/password', { currentPassword: `guess ${i}`, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD })).status).toBe(400);
    }
    const blocked = await client.post('/account/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD });
    expect(blocked.status).toBe(429);
    expect(blocked.text).toContain('Too many wrong passwords or codes');
    expect((await new FormClient(strict.url, '127.0.2.1').post('/login', { email, password: NEW_PASSWORD })).status).toBe(429);
  });
});
