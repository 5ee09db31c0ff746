import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../src/db/schema.js';
import { audit, type Actor, type AuditedChange } from '../src/events/audit.js';
import { acceptInvite } from '../src/people/team.js';
import { invitePerson, launchBrowser, PASSWORD, screenshot } from './helpers/browser.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
// A month back (within AUDIT_RETENTION_DAYS), at midnight UTC, so a day picked in the form is a known window.
const BASE = Math.floor(Date.now() / DAY_MS - 30) * DAY_MS;
const dayOf = (time: number) => new Date(time).toISOString().slice(0, 10);

const ada: Actor = { type: 'user', id: 'usr_ada', label: 'ada@example.test', ip: '203.0.113.7' };
const deployKey: Actor = { type: 'apiKey', id: 'key_deploy', label: 'Deploy', ip: '198.51.100.20' };
const hostile: Actor = { type: 'apiKey', id: 'key_hostile', label: '<script>alert("label")</script>', ip: '<b>ip</b>' };

let server: TestServer;
let browser: Awaited<ReturnType<typeof launchBrowser>>;
let teamId: number;
const sessions = new Map<Role, string>();

async function record(actor: Actor, change: AuditedChange, at: number) {
  await audit(server.deps.db, { teamId, actor }, change, new Date(at));
}

/** A person of the team with this role who has chosen a password: their session token. */
async function signedInAs(role: Role): Promise<string> {
  const invited = await invitePerson(server, teamId, `${role}@audit.example.test`, role);
  const session = await acceptInvite(server.deps, { token: new URL(invited.inviteUrl).pathname.split('/').at(-1)!, password: PASSWORD });
  return session.token;
}

/** A browser of this person's that runs no script (unless `script`): what the page does, it does as plain HTML. */
async function withoutScript(role: Role, script = false): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ baseURL: server.url, javaScriptEnabled: script });
  await context.addCookies([{ name: 'mailroom_session', value: sessions.get(role)!, url: server.url }]);
  return { context, page: await context.newPage() };
}

const fetchAs = (role: Role, path: string) => fetch(`${server.url}${path}`, { headers: { cookie: `mailroom_session=${sessions.get(role)!}` }, redirect: 'manual' });

/** The table's rows, each as its cells' text. */
const rowsOf = (page: Page) =>
  page.locator('table tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => (cell as HTMLElement).innerText.trim())));

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  ({ teamId } = await server.team('Audited'));
  for (const role of ['owner', 'admin', 'member', 'viewer'] as const) sessions.set(role, await signedInAs(role));
  // On the first day: three changes an hour apart; two days later: 60 by the deploy key, a minute apart.
  await record(ada, { action: 'domain.created', targetType: 'domain', targetId: 41 }, BASE + HOUR_MS);
  await record(deployKey, { action: 'template.created', targetType: 'template', targetId: 'tpl_welcome' }, BASE + 2 * HOUR_MS);
  await record(hostile, { action: 'webhook.deleted', targetType: 'webhook', targetId: '<img src=x onerror=alert(1)>' }, BASE + 3 * HOUR_MS);
  for (let i = 0; i < 60; i++) await record(deployKey, { action: 'suppression.added', targetType: 'suppression', targetId: `s${i}` }, BASE + 2 * DAY_MS + i * 60_000);
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('dashboard: audit log', () => {
  it('an owner and an admin see the log, newest first: when, who, action, target and from where', async () => {
    for (const role of ['owner', 'admin'] as const) {
      const { context, page } = await withoutScript(role);
      await page.goto(`/audit-log?from=${dayOf(BASE)}&to=${dayOf(BASE)}`);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Audit log');
      expect(await page.locator('nav[aria-label="Main"] a[aria-current="page"]').textContent()).toBe('Audit log');
      const rows = await rowsOf(page);
      expect(rows.map((cells) => cells[2]), role).toEqual(['webhook.deleted', 'template.created', 'domain.created']);
      const iso = new Date(BASE + HOUR_MS).toISOString();
      expect(rows[2]).toEqual([`${iso.replace('T', ' ').slice(0, 19)} UTC`, 'ada@example.test\nperson · usr_ada', 'domain.created', 'domain\n41', '203.0.113.7']);
      expect(rows[1]).toEqual([expect.any(String), 'Deploy\nAPI key · key_deploy', 'template.created', 'template\ntpl_welcome', '198.51.100.20']);
      await context.close();
    }
    const { context, page } = await withoutScript('owner', true);
    await page.goto(`/audit-log?from=${dayOf(BASE)}&to=${dayOf(BASE)}`);
    await screenshot(page, 'audit-log');
    await context.close();
  });

  it('a member and a viewer get the 403 page, however they ask, and no link to it', async () => {
    for (const role of ['member', 'viewer'] as const) {
      for (const path of ['/audit-log', `/audit-log?actor=usr_ada&action=domain.created&from=${dayOf(BASE)}`, '/audit-log?page=2', '/audit-log?from=nonsense']) {
        const res = await fetchAs(role, path);
        const text = await res.text();
        expect(res.status, `${role} ${path}`).toBe(403);
        expect(text).toContain(`Your role (${role}) cannot see the audit log`);
        expect(text).not.toContain('ada@example.test');
        expect(text).not.toContain('href="/audit-log"');
      }
    }
    // Those who may read it find it in the navigation.
    expect(await (await fetchAs('admin', '/')).text()).toContain('href="/audit-log"');
  });

  it('filters work without JavaScript: the form narrows by actor, action and days, and the pager keeps the filters', async () => {
    const { context, page } = await withoutScript('admin');
    await page.goto('/audit-log');
    await page.getByLabel('Actor', { exact: true }).fill('key_deploy');
    await page.getByLabel('Action', { exact: true }).selectOption('suppression.added');
    await page.getByLabel('From', { exact: true }).fill(dayOf(BASE + 2 * DAY_MS));
    await page.getByLabel('To', { exact: true }).fill(dayOf(BASE + 2 * DAY_MS));
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/actor=key_deploy/);
    const url = new URL(page.url());
    expect(Object.fromEntries(url.searchParams)).toMatchObject({ actor: 'key_deploy', action: 'suppression.added', from: dayOf(BASE + 2 * DAY_MS) });
    expect(await page.locator('main p.muted', { hasText: 'changes match' }).textContent()).toContain('60 changes match these filters');
    const first = await rowsOf(page);
    expect(first).toHaveLength(50);
    expect(first[0]![3]).toBe('suppression\ns59');

    await page.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL(/page=2/);
    expect(new URL(page.url()).searchParams.get('actor')).toBe('key_deploy');
    expect((await rowsOf(page)).map((cells) => cells[3])).toEqual(Array.from({ length: 10 }, (_, i) => `suppression\ns${9 - i}`));
    expect(await page.getByRole('link', { name: 'Next →' }).count()).toBe(0);

    // A name in the list narrows the log to that actor; an action to that action.
    await page.goto(`/audit-log?from=${dayOf(BASE)}&to=${dayOf(BASE)}`);
    await page.getByRole('link', { name: 'ada@example.test' }).click();
    expect((await rowsOf(page)).map((cells) => cells[2])).toEqual(['domain.created']);
    expect(await page.getByLabel('Actor', { exact: true }).inputValue()).toBe('usr_ada');
    await page.getByRole('link', { name: 'domain.created' }).click();
    expect(await page.getByLabel('Action', { exact: true }).inputValue()).toBe('domain.created');
    await context.close();
  });

  it('a bad filter is named next to its field with a 400, and the page still answers', async () => {
    const res = await fetchAs('owner', `/audit-log?from=${dayOf(BASE + 2 * DAY_MS)}&to=${dayOf(BASE)}&action=domain.exploded`);
    expect(res.status).toBe(400);
    const { context, page } = await withoutScript('owner');
    await page.goto(`/audit-log?from=${dayOf(BASE + 2 * DAY_MS)}&to=${dayOf(BASE)}`);
    expect(await page.locator('#f-to-error').textContent()).toBe('must not be before from');
    expect(await page.locator('table').count()).toBe(0);
    await page.goto('/audit-log?action=domain.exploded');
    expect(await page.locator('.field.has-error').textContent()).toContain('unknown action "domain.exploded"');
    await context.close();
  });

  it('escapes every value: a label, an address or an id holding markup is shown as text', async () => {
    const res = await fetchAs('owner', `/audit-log?actor=key_hostile`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain('<script>alert');
    expect(text).not.toContain('<img src=x');
    expect(text).not.toContain('<b>ip</b>');
    const { context, page } = await withoutScript('owner');
    await page.goto('/audit-log?actor=key_hostile');
    expect(await rowsOf(page)).toEqual([[expect.any(String), '<script>alert("label")</script>\nAPI key · key_hostile', 'webhook.deleted', 'webhook\n<img src=x onerror=alert(1)>', '<b>ip</b>']]);
    await context.close();
  });
});
