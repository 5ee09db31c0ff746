import { afterAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { screenshot, signedIn, startDashboard } from './helpers/browser.js';
import { createDomain } from './helpers/domains.js';

const { server, browser, apiKey: key, person, dialogs, stop } = await startDashboard('Keys team');
afterAll(stop);

const rowOf = (page: Page, name: string) => page.locator('table tbody tr', { has: page.locator('.key-name', { hasText: name }) });

async function createKey(page: Page, name: string, options: { permission?: string; domain?: string } = {}) {
  await page.goto('/api-keys');
  await page.getByLabel('Name').fill(name);
  if (options.permission) await page.getByLabel('Permission').selectOption({ label: options.permission });
  if (options.domain) await page.getByLabel('Domain').selectOption({ label: options.domain });
  const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Create API key' }).click()]);
  await page.waitForLoadState();
  return response;
}

describe('dashboard: API keys', () => {
  it('a key created in the browser is shown once and works; revoked in the browser, the API refuses it at once', async () => {
    const { page } = person;
    const created = await createKey(page, 'Production server');
    expect(created.status()).toBe(200);
    // Answered in place, never through a redirect: the token is in no URL and no cookie.
    expect(page.url()).toBe(`${server.url}/api-keys`);
    const token = (await page.locator('.secret code').textContent())!;
    expect(token).toMatch(/^mr_[\w-]{43}$/);
    expect(await page.locator('.secret button[data-copy]').getAttribute('data-copy')).toBe(token);
    expect(await page.locator('.secret').textContent()).toContain('it will not be shown again');
    expect(JSON.stringify(await person.context.cookies())).not.toContain(token);
    await screenshot(page, 'api-keys-created');

    const row = rowOf(page, 'Production server');
    expect(await row.locator('td code').textContent()).toBe(`${token.slice(0, 7)}…${token.slice(-4)}`);
    expect(await row.locator('td').nth(1).innerText()).toBe('Full access\nall domains');
    expect(await row.locator('.badge').textContent()).toBe('active');
    expect((await server.call('GET', '/v1/domains', { key: token })).status).toBe(200);

    await page.goto('/api-keys');
    expect(await page.content()).not.toContain(token);
    expect(await page.locator('.secret').count()).toBe(0);

    page.once('dialog', (dialog) => void dialog.dismiss());
    await row.getByRole('button', { name: 'Revoke' }).click();
    expect((await server.call('GET', '/v1/domains', { key: token })).status).toBe(200);

    page.once('dialog', (dialog) => void dialog.accept());
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.waitForURL(`${server.url}/api-keys`);
    await page.locator('.notice').waitFor();
    expect(await page.locator('.notice').textContent()).toBe('API key revoked: calls with it are refused from now on');
    expect(await row.locator('.badge').textContent()).toBe('revoked');
    expect(await row.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
    const refused = await server.call('GET', '/v1/domains', { key: token });
    expect(refused.status).toBe(401);
    expect(await page.content()).not.toContain(token);
    // The team's other key is untouched.
    expect((await server.call('GET', '/v1/domains', { key })).status).toBe(200);
    const question = 'confirm: Revoke the key Production server? Anything using it is refused from now on.';
    expect(dialogs.splice(0)).toEqual([question, question]);
  });

  it('a sending-only key scoped to one domain reads that mail but cannot manage domains', async () => {
    const { page } = person;
    const domain = await createDomain(server, key, 'scoped.example.test');
    await createKey(page, 'Newsletter', { permission: 'Sending only: the /v1/emails endpoints', domain: 'scoped.example.test' });
    const token = (await page.locator('.secret code').textContent())!;
    const row = rowOf(page, 'Newsletter');
    expect(await row.locator('td').nth(1).innerText()).toBe('Sending only\nscoped.example.test');
    expect((await server.call('GET', '/v1/emails', { key: token })).status).toBe(200);
    expect((await server.call('GET', `/v1/domains/${domain.id}`, { key: token })).status).toBe(403);
  });

  it('a key without a name, or scoped to a domain that is not the team\'s, is refused next to the field and none is created', async () => {
    const { page } = person;
    const keysBefore = await page.goto('/api-keys').then(() => page.locator('table tbody tr').count());

    await page.getByLabel('Name').fill('   ');
    const [blank] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Create API key' }).click()]);
    await page.waitForLoadState();
    expect(blank.status()).toBe(400);
    expect(await page.locator('.field.has-error .error').textContent()).toBe('must not be empty');
    expect(await page.locator('.secret').count()).toBe(0);

    // A domain id edited into the form: another team's domain is "not a domain of this team".
    const { apiKey: otherKey } = await server.team('Domain owner');
    const foreign = await createDomain(server, otherKey, 'foreign.example.test');
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    const forged = await person.context.request.post('/api-keys', { form: { _csrf: csrf, name: 'Sneaky', permission: 'full', domainId: String(foreign.id) } });
    expect(forged.status()).toBe(400);
    expect(await forged.text()).toContain('is not a domain of this team');
    expect(await forged.text()).not.toContain('class="secret"');

    await page.goto('/api-keys');
    expect(await page.locator('table tbody tr').count()).toBe(keysBefore);
  });

  it('a key name holding markup shows as text on the page that creates it and on the list', async () => {
    const { page } = person;
    for (const name of ['<script>alert(1)</script>', '<b>x</b>']) {
      await createKey(page, name);
      expect(await page.locator('.secret-title').textContent()).toBe(`API key “${name}” created`);
      expect(await rowOf(page, name).locator('.key-name').textContent()).toBe(name);
      expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);
      expect(await page.locator('main script').count()).toBe(0);
      await page.goto('/api-keys');
      expect(await rowOf(page, name).count()).toBe(1);
      expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);
    }
    // The revoke question names the key too, as plain text.
    expect(await rowOf(page, '<b>x</b>').locator('form').getAttribute('data-confirm')).toBe('Revoke the key <b>x</b>? Anything using it is refused from now on.');

    const phone = await person.context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto('/api-keys');
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await screenshot(phone, 'api-keys-phone');
    await phone.close();
    expect(dialogs).toEqual([]);
  });

  it("a person of another team sees none of this team's keys, and revoking one of them answers 404 and leaves the key working", async () => {
    const { page } = person;
    await createKey(page, 'Kept key');
    const token = (await page.locator('.secret code').textContent())!;
    const keyId = (await rowOf(page, 'Kept key').locator('form').getAttribute('action'))!.split('/')[2]!;

    const { teamId: otherTeam } = await server.team('Other team');
    const other = await signedIn(browser, server, otherTeam);
    await other.page.goto('/api-keys');
    expect(await other.page.locator('table tbody tr').count()).toBe(1);
    expect(await other.page.locator('.key-name').allTextContents()).toEqual(['initial']);
    expect(await other.page.content()).not.toContain('Kept key');

    const csrf = await other.page.locator('input[name=_csrf]').first().inputValue();
    const response = await other.context.request.post(`/api-keys/${keyId}/revoke`, { form: { _csrf: csrf }, maxRedirects: 0 });
    expect(response.status()).toBe(404);
    expect((await server.call('GET', '/v1/domains', { key: token })).status).toBe(200);
    await page.goto('/api-keys');
    expect(await rowOf(page, 'Kept key').locator('.badge').textContent()).toBe('active');
    await other.context.close();
  });
});
