import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { inviteUser } from '../src/people/team.js';
import { acceptInvite, invitePerson, launchBrowser, PASSWORD, screenshot, signedIn } from './helpers/browser.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let browser: Browser;
let teamId: number;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  ({ teamId } = await server.team('Sign-in team'));
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

async function signInForm(email: string, password: string) {
  const context = await browser.newContext({ baseURL: server.url });
  const page = await context.newPage();
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState();
  return { context, page };
}

describe('dashboard sign-in', () => {
  it('an invite link lets a person choose a password and signs them in; the link works once', async () => {
    const invite = await invitePerson(server, teamId, 'first@example.test');
    const context = await browser.newContext({ baseURL: server.url });
    const page = await context.newPage();
    await page.goto(invite.inviteUrl);
    await screenshot(page, 'invite');
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByLabel('Password again').fill('short');
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    expect(await page.locator('.field.has-error .error').textContent()).toBe('must be at least 10 characters');

    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByLabel('Password again').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    await page.waitForURL(`${server.url}/`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Overview');
    expect(await page.locator('.who').textContent()).toBe('first@example.test');
    await screenshot(page, 'overview');

    const again = await fetch(invite.inviteUrl);
    expect(again.status).toBe(404);
    await context.close();
  });

  it('a password among the most common is refused on the invite page with a 400 that says why, whatever its case', async () => {
    const invite = await invitePerson(server, teamId, 'common@example.test');
    for (const common of ['qwertyuiop', '1q2w3e4r5t', 'BasketBall']) {
      const refused = await fetch(invite.inviteUrl, { method: 'POST', body: new URLSearchParams({ password: common, confirm: common }), redirect: 'manual' });
      expect(refused.status, common).toBe(400);
      expect(await refused.text()).toContain('is one of the most common passwords, which are guessed first; choose another');
    }
    const chosen = await fetch(invite.inviteUrl, { method: 'POST', body: new URLSearchParams({ password: PASSWORD, confirm: PASSWORD }), redirect: 'manual' });
    expect(chosen.status).toBe(303);
  });

  it('the session cookie is HttpOnly and SameSite=Lax, and scripts cannot read it', async () => {
    const { context, page } = await signedIn(browser, server, teamId);
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: 'mailroom_session', httpOnly: true, sameSite: 'Lax' });
    expect(await page.evaluate(() => document.cookie)).not.toContain('mailroom_session');
    await context.close();
  });

  it('sign-out ends the session: the old cookie no longer opens a page', async () => {
    const { context, page } = await signedIn(browser, server, teamId);
    const [cookie] = await context.cookies();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/login$/);
    const replay = await fetch(`${server.url}/`, { headers: { cookie: `mailroom_session=${cookie!.value}` }, redirect: 'manual' });
    expect(replay.status).toBe(303);
    expect(replay.headers.get('location')).toBe('/login');
    await context.close();
  });

  it('a wrong password is refused with the same message as an unknown address', async () => {
    await signedIn(browser, server, teamId, { email: 'known@example.test' }).then((s) => s.context.close());
    const wrong = await signInForm('known@example.test', 'not the password');
    const unknown = await signInForm('nobody@example.test', 'not the password');
    for (const { page } of [wrong, unknown]) {
      expect(page.url()).toBe(`${server.url}/login`);
      expect(await page.getByRole('alert').textContent()).toBe('Wrong email address or password');
    }
    await screenshot(wrong.page, 'login-wrong-password');
    await Promise.all([wrong.context.close(), unknown.context.close()]);

    const right = await signInForm('known@example.test', PASSWORD);
    expect(right.page.url()).toBe(`${server.url}/`);
    await right.context.close();
  });

  it('sign-in attempts are throttled: after too many failures even the right password is refused for a while', async () => {
    // A server of its own: the block it sets lasts ten minutes for this client address.
    const strict = await startTestServer({ AUTH_FAILURES_PER_MINUTE: '5' });
    try {
      const team = await strict.team('Throttled');
      await signedIn(browser, strict, team.teamId, { email: 'target@example.test' }).then((s) => s.context.close());
      const post = (password: string) =>
        fetch(`${strict.url}/login`, { method: 'POST', body: new URLSearchParams({ email: 'target@example.test', password }), redirect: 'manual' });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await post(`guess ${i}`)).status);
      expect(statuses).toEqual([401, 401, 401, 401, 401]);
      const refused = await post(PASSWORD);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(60);
    } finally {
      await strict.stop();
    }
  });

  it('a state-changing request without the CSRF token is refused, and changes nothing', async () => {
    const { context, page } = await signedIn(browser, server, teamId);
    const cookie = (await context.cookies())[0]!;
    const headers = { cookie: `mailroom_session=${cookie.value}`, 'content-type': 'application/x-www-form-urlencoded' };
    const forged = await fetch(`${server.url}/logout`, { method: 'POST', headers, body: '', redirect: 'manual' });
    expect(forged.status).toBe(403);
    const wrongToken = await fetch(`${server.url}/logout`, { method: 'POST', headers, body: '_csrf=forged', redirect: 'manual' });
    expect(wrongToken.status).toBe(403);
    const otherSite = await fetch(`${server.url}/logout`, { method: 'POST', headers: { ...headers, origin: 'https://evil.example' }, body: '', redirect: 'manual' });
    expect(otherSite.status).toBe(403);
    await page.reload();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Overview');
    await context.close();
  });

  it('pages need a session: a visitor is sent to sign in, and back to the page they asked for afterwards', async () => {
    await signedIn(browser, server, teamId, { email: 'returning@example.test' }).then((s) => s.context.close());
    const context = await browser.newContext({ baseURL: server.url });
    const page = await context.newPage();
    await page.goto('/');
    expect(page.url()).toBe(`${server.url}/login`);
    await screenshot(page, 'login');
    await page.goto('/analytics?days=30');
    expect(page.url()).toBe(`${server.url}/login?next=%2Fanalytics%3Fdays%3D30`);
    await page.getByLabel('Email').fill('returning@example.test');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${server.url}/analytics?days=30`);
    // Only a path of this site is followed after sign-in.
    const open = await fetch(`${server.url}/login?next=//evil.example/`);
    expect(await open.text()).not.toContain('evil.example');
    await context.close();
  });

  it('passwords, invite links and session tokens are stored only as hashes, and the password hash is scrypt', async () => {
    const invite = await invitePerson(server, teamId, 'stored@example.test');
    const inviteToken = invite.inviteUrl.split('/').at(-1)!;
    const { context } = await acceptInvite(browser, server.url, invite.inviteUrl);
    const sessionToken = (await context.cookies())[0]!.value;
    const users = await server.deps.db.selectFrom('users').selectAll().execute();
    const sessions = await server.deps.db.selectFrom('sessions').selectAll().execute();
    const stored = JSON.stringify([users, sessions]);
    for (const secret of [PASSWORD, inviteToken, sessionToken]) expect(stored).not.toContain(secret);
    expect(users.find((user) => user.email === 'stored@example.test')!.password_hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    await context.close();
  });

  it("on every screen every section of the navigation shows without scrolling it: in one row on a laptop, in the folded menu below (an owner's, the longest)", async () => {
    for (const width of [1440, 1280, 1100, 1024, 800]) {
      const { context, page } = await signedIn(browser, server, teamId, { role: 'owner', viewport: { width, height: 800 } });
      const nav = page.getByRole('navigation', { name: 'Main' });
      if (!(await nav.isVisible())) await page.locator('.menu-button').click();
      const { scroll, client } = await nav.evaluate((element) => ({ scroll: element.scrollWidth, client: element.clientWidth }));
      expect(scroll, `the menu at ${width} px`).toBeLessThanOrEqual(client);
      await context.close();
    }
  });

  it('at phone width the navigation folds into a menu that opens on a tap and holds every section', async () => {
    const { context, page } = await signedIn(browser, server, teamId, { viewport: { width: 390, height: 844 } });
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.isVisible()).toBe(false);
    await screenshot(page, 'overview-phone');
    await page.locator('.menu-button').click();
    expect(await nav.isVisible()).toBe(true);
    expect(await nav.getByRole('link').allTextContents()).toEqual(['Overview', 'Domains', 'Emails', 'Inbound', 'Campaigns', 'Automations', 'Contacts', 'Templates', 'Suppressions', 'Webhooks', 'Team', 'Analytics', 'Deliverability']);
    await screenshot(page, 'overview-phone-menu');
    await context.close();
  });

  it('a form body over MAX_BODY_BYTES is refused with 413 before anything reads it, signed in or not', async () => {
    const big = 'x'.repeat(server.deps.config.maxBodyBytes + 1);
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const signIn = await fetch(`${server.url}/login`, { method: 'POST', headers: form, body: `email=a%40example.test&password=${big}` });
    expect(signIn.status).toBe(413);
    const { context } = await signedIn(browser, server, teamId);
    const cookie = `mailroom_session=${(await context.cookies())[0]!.value}`;
    const signedInPost = await fetch(`${server.url}/logout`, { method: 'POST', headers: { ...form, cookie }, body: `_csrf=${big}` });
    expect(signedInPost.status).toBe(413);
    await context.close();
  });

  it('inviting again replaces the link; an address already in use, here or in another team, is refused', async () => {
    const first = await invitePerson(server, teamId, 'twice@example.test');
    const second = await invitePerson(server, teamId, 'TWICE@example.test');
    expect(second.userId).toBe(first.userId);
    expect((await fetch(first.inviteUrl)).status).toBe(404);
    expect((await fetch(second.inviteUrl)).status).toBe(200);

    const other = await server.team('Other team');
    await expect(invitePerson(server, other.teamId, 'twice@example.test')).rejects.toMatchObject({ code: 'CONFLICT' });
    const { context } = await acceptInvite(browser, server.url, second.inviteUrl);
    await expect(invitePerson(server, teamId, 'twice@example.test')).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(invitePerson(server, teamId, 'not an address')).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await context.close();
  });

  it('with an https PUBLIC_URL the session cookie is Secure, and invite links start with it', async () => {
    const behindTls = await startTestServer({ PUBLIC_URL: 'https://mail.example.test' });
    try {
      const team = await behindTls.team('Behind TLS');
      const invite = await inviteUser(behindTls.deps, { teamId: team.teamId, domainId: null }, { email: 'tls@example.test' });
      expect(invite.inviteUrl).toMatch(/^https:\/\/mail\.example\.test\/invite\//);
      const chosen = await fetch(behindTls.url + new URL(invite.inviteUrl).pathname, {
        method: 'POST',
        body: new URLSearchParams({ password: PASSWORD, confirm: PASSWORD }),
        redirect: 'manual',
      });
      expect(chosen.status).toBe(303);
      const cookie = chosen.headers.getSetCookie().find((line) => line.startsWith('mailroom_session='))!;
      expect(cookie.split(/;\s*/)).toEqual(expect.arrayContaining(['HttpOnly', 'Secure', 'SameSite=Lax', 'Path=/']));
    } finally {
      await behindTls.stop();
    }
  });
});
