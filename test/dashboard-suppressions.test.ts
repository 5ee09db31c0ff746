import { afterAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { screenshot, signedIn, startDashboard } from './helpers/browser.js';

const { server, browser, apiKey: key, person, dialogs, stop } = await startDashboard('Suppressions team');
afterAll(stop);

const suppressed = async () => ((await server.call('GET', '/v1/suppressions?limit=1000', { key })).body.data as { email: string }[]).map((s) => s.email);
const listedEmails = (page: Page) => page.locator('table tbody tr td:first-child').allTextContents();

async function suppress(page: Page, email: string) {
  await page.goto('/suppressions');
  await page.getByLabel('Email address').fill(email);
  const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Suppress' }).click()]);
  await page.waitForLoadState();
  return response.status();
}

describe('dashboard: suppressions', () => {
  it('a person suppresses an address, sees it listed with its reason, and removes it once they confirm', async () => {
    const { page } = person;
    await page.goto('/suppressions');
    expect(await page.locator('.empty').textContent()).toContain('No suppressed addresses');

    expect(await suppress(page, '  Someone@Example.COM ')).toBe(303);
    expect(await page.locator('.notice').textContent()).toBe('someone@example.com is suppressed: no mail is sent to it');
    expect(await listedEmails(page)).toEqual(['someone@example.com']);
    expect(await page.locator('table tbody tr .badge').textContent()).toBe('Added by hand');
    expect(await suppressed()).toEqual(['someone@example.com']);
    await screenshot(page, 'suppressions');

    const remove = page.locator('table tbody tr', { hasText: 'someone@example.com' }).getByRole('button', { name: 'Remove' });
    page.once('dialog', (dialog) => void dialog.dismiss());
    await remove.click();
    expect(await suppressed()).toEqual(['someone@example.com']);

    page.once('dialog', (dialog) => void dialog.accept());
    await remove.click();
    await page.locator('.notice').waitFor();
    expect(await page.locator('.notice').textContent()).toBe('someone@example.com removed: mail to it is sent again');
    expect(await suppressed()).toEqual([]);
    expect(await page.locator('.empty').count()).toBe(1);
    const question = 'confirm: Remove someone@example.com from the suppression list? Mail to it will be sent again.';
    expect(dialogs.splice(0)).toEqual([question, question]);
  });

  it('a bad address is refused next to the field with what was typed, and nothing is added', async () => {
    const { page } = person;
    expect(await suppress(page, 'not an address')).toBe(400);
    expect(await page.locator('.field.has-error .error').textContent()).toBe('"not an address" is not a valid email address');
    expect(await page.getByLabel('Email address').inputValue()).toBe('not an address');
    await screenshot(page, 'suppressions-bad-address');
    const badPage = await page.goto('/suppressions?page=0');
    expect(badPage!.status()).toBe(400);
    expect(await page.locator('main').textContent()).toContain('page must be at least 1');
    expect(await suppressed()).toEqual([]);
  });

  it('the list is read a page at a time, in the order the API lists it (newest first)', async () => {
    const { page } = person;
    const emails = Array.from({ length: 55 }, (_, i) => `bulk${String(i).padStart(2, '0')}@example.com`);
    for (const email of emails) expect((await server.call('POST', '/v1/suppressions', { key, body: { email } })).status).toBe(200);
    await page.goto('/suppressions');
    const first = await listedEmails(page);
    expect(first).toEqual((await suppressed()).slice(0, 50));
    expect(await page.locator('main').textContent()).toContain('55 addresses in all');
    await page.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL(/page=2$/);
    const second = await listedEmails(page);
    expect([...first, ...second].sort()).toEqual(emails);
    expect(await page.getByRole('link', { name: 'Next →' }).count()).toBe(0);
    await page.getByRole('link', { name: '← Previous' }).click();
    expect(await listedEmails(page)).toEqual(first);

    for (const email of emails) await server.call('DELETE', `/v1/suppressions/${email}`, { key });
  });

  it('addresses holding markup show as text in the list, the notice and the remove question', async () => {
    const { page } = person;
    for (const email of ['"<script>alert(1)</script>"@example.com', '"<b>x</b>"@example.com']) {
      expect(await suppress(page, email)).toBe(303);
      expect(await page.locator('.notice').textContent()).toBe(`${email} is suppressed: no mail is sent to it`);
      expect(await listedEmails(page)).toContain(email);
      expect(await page.locator('table tbody tr', { hasText: email }).locator('form').getAttribute('data-confirm')).toBe(`Remove ${email} from the suppression list? Mail to it will be sent again.`);
      expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);
      expect(await page.locator('main script').count()).toBe(0);
    }
    page.once('dialog', (dialog) => void dialog.accept());
    await page.locator('table tbody tr', { hasText: '"<b>x</b>"@example.com' }).getByRole('button', { name: 'Remove' }).click();
    await page.locator('.notice').waitFor();
    expect(await listedEmails(page)).toEqual(['"<script>alert(1)</script>"@example.com']);
    expect(dialogs.splice(0)).toEqual(['confirm: Remove "<b>x</b>"@example.com from the suppression list? Mail to it will be sent again.']);

    const phone = await person.context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto('/suppressions');
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await screenshot(phone, 'suppressions-phone');
    await phone.close();
  });

  it("a person of another team sees none of this team's suppressions, and removing one of them answers 404 and keeps it", async () => {
    expect((await server.call('POST', '/v1/suppressions', { key, body: { email: 'kept@example.com' } })).status).toBe(200);
    const { teamId: otherTeam } = await server.team('Other team');
    const other = await signedIn(browser, server, otherTeam);
    await other.page.goto('/suppressions');
    expect(await other.page.locator('.empty').count()).toBe(1);
    expect(await other.page.content()).not.toContain('kept@example.com');

    const csrf = await other.page.locator('input[name=_csrf]').first().inputValue();
    const response = await other.context.request.post('/suppressions/remove', { form: { _csrf: csrf, email: 'kept@example.com' }, maxRedirects: 0 });
    expect(response.status()).toBe(404);
    expect(await suppressed()).toContain('kept@example.com');
    await other.context.close();
  });
});
