import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenshot, startDashboard, type DashboardRig } from './helpers/browser.js';

/**
 * An owner, in a browser, runs the team's people from the dashboard: the Team page from the menu,
 * their own Account page from beside Sign out, and the Audit log page that answers who did what.
 */

let rig: DashboardRig;

beforeAll(async () => {
  // The address its links are made for, as a deployment has one (the test server's own port is not known before it starts).
  rig = await startDashboard('People', { PUBLIC_URL: 'http://mailroom.example.com' });
}, 60_000);
afterAll(() => rig?.stop());

describe("a team's people in the dashboard", () => {
  it('the owner invites someone from the Team page (the link shown while SYSTEM_FROM is unset), finds their Account page beside Sign out, and reads the invite in the Audit log', async () => {
    const { page, email } = rig.person;
    const nav = page.getByRole('navigation', { name: 'Main' });
    await page.goto('/');

    await nav.getByRole('link', { name: 'Team' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Team');
    await page.getByLabel('Email').fill('grace@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('admin');
    await page.getByRole('button', { name: 'Invite' }).click();
    expect(await page.getByRole('status').textContent()).toContain('grace@example.com is invited');
    expect(await page.getByRole('status').textContent()).toMatch(/The invite was not mailed \(SYSTEM_FROM is not set\)/);
    expect(await page.getByRole('status').textContent()).toContain('http://mailroom.example.com/invite/');
    const grace = page.getByRole('row').filter({ hasText: 'grace@example.com' });
    expect(await grace.locator('.person-role').textContent()).toBe('Admin');
    await screenshot(page, 'team');

    await page.getByRole('link', { name: 'Account' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Your account');
    expect(await page.locator('main').textContent()).toContain(`Signed in as ${email}`);
    await screenshot(page, 'account');

    await nav.getByRole('link', { name: 'Audit log' }).click();
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Audit log');
    const invited = page.getByRole('row').filter({ hasText: 'user.invited' });
    expect(await invited.count()).toBe(1);
    expect(await invited.textContent()).toContain(email);
    await screenshot(page, 'audit-log');
  });
});
