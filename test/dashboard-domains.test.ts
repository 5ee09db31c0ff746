import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser, screenshot, signedIn, watchDialogs, type SignedIn } from './helpers/browser.js';
import type { TestDnsServer } from './helpers/dns-server.js';
import { createDomain, startServerWithDns, waitForDomain } from './helpers/domains.js';
import { settled, waitForEmail } from './helpers/emails.js';
import { expectOk, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

let dns: TestDnsServer;
let server: TestServer;
let teamId: number;
let key: string;
let stop: () => Promise<void>;
let browser: Browser;
let person: SignedIn;
let dialogs: string[] = [];

beforeAll(async () => {
  [{ dns, server, teamId, key, stop }, browser] = await Promise.all([
    startServerWithDns({ DNS_TIMEOUT_MS: '200', DOMAIN_WORKER_POLL_MS: '50', REGIONS: 'us-east-1,eu-central-1' }),
    launchBrowser(),
  ]);
  person = await signedIn(browser, server, teamId);
  await person.context.grantPermissions(['clipboard-read', 'clipboard-write']);
  // Confirms are each test's to answer.
  dialogs = watchDialogs(person.page, { answerConfirms: false });
});
afterAll(async () => {
  await browser?.close();
  await stop?.();
});

const submitted = async (page: Page, click: () => Promise<void>) => {
  const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), click()]);
  await page.waitForLoadState();
  return response.status();
};

const badgeText = (page: Page) => page.locator('#status .badge').textContent();

const SANDBOX = 'sandbox.mailroom.localhost';

describe('dashboard: domains', () => {
  it('a person adds a domain, copies its DKIM, SPF, MX and DMARC records, and verifies it once DNS serves them', async () => {
    const { page } = person;
    await page.goto('/domains');
    expect(await page.locator('table tbody tr td:first-child a').allTextContents()).toEqual([SANDBOX]);

    await page.getByLabel('Domain name').fill('mail.acme.test');
    await page.getByLabel('Region').selectOption('eu-central-1');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.waitForURL(/\/domains\/\d+$/);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('mail.acme.test');
    expect(await page.locator('.notice').textContent()).toContain('Domain mail.acme.test added');
    expect(await badgeText(page)).toBe('NOT_STARTED');
    expect(await page.locator('#status dd').nth(1).textContent()).toBe('eu-central-1');

    const id = Number(page.url().split('/').pop());
    const { body: domain } = await server.call('GET', `/v1/domains/${id}`, { key });
    const rows = page.locator('table tbody tr');
    expect(await rows.count()).toBe(4);
    for (const [i, record] of (domain.dnsRecords as { type: string; name: string; value: string; priority: string | null }[]).entries()) {
      const row = rows.nth(i);
      expect(await row.locator('td').first().textContent()).toBe(record.type);
      for (const [part, value] of [['name', record.name], ['value', record.value]]) {
        expect(await row.locator(`.record-${part} code`).textContent()).toBe(value);
        expect(await row.locator(`.record-${part} button`).getAttribute('data-copy')).toBe(value);
      }
      expect(await row.locator('.record-priority').allTextContents()).toEqual(record.priority === null ? [] : [record.priority]);
      expect(await row.locator('.record-ttl').textContent()).toBe('Auto');
    }
    expect(domain.dnsRecords.map((r: { name: string }) => r.name)).toEqual([expect.stringMatching(/\._domainkey\.mail$/), 'mail.mail', 'mail.mail', '_dmarc.mail']);

    // The copy button puts exactly the value on the clipboard: the long DKIM key, in one piece.
    const dkimCopy = rows.nth(0).locator('.record-value').getByRole('button', { name: 'Copy' });
    await dkimCopy.click();
    await rows.nth(0).getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(domain.dnsRecords[0].value);
    await screenshot(page, 'domain-records');

    dns.serve(domain);
    await page.getByRole('button', { name: 'Verify DNS records' }).click();
    await page.waitForLoadState();
    expect(await page.locator('.notice').textContent()).toContain('Verification of mail.acme.test started');

    // The page does not refresh itself: the person reloads until the worker's check has landed.
    await waitFor(
      'the page showing the domain verified',
      async () => {
        await page.reload();
        return badgeText(page);
      },
      (badge) => badge === 'SUCCESS',
    );
    expect(await rows.locator('td:last-child .badge').allTextContents()).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
    expect(await page.locator('#status time').count()).toBe(2);
    expect(await page.getByRole('button', { name: 'Check records again' }).count()).toBe(1);

    await page.goto('/domains');
    const listed = page.locator('table tbody tr');
    expect(await listed.count()).toBe(2);
    expect(await listed.first().locator('td').nth(0).textContent()).toBe('mail.acme.test');
    expect(await listed.first().locator('.badge').textContent()).toBe('SUCCESS');
    await screenshot(page, 'domains-list');
    expect(dialogs).toEqual([]);
  });

  it('the sandbox domain is listed with its badge and what it is for, its page offers no DNS records, verification or deletion, and its captured mail shows on the email page', async () => {
    const { page } = person;
    await page.goto('/domains');
    const row = page.locator('table tbody tr', { hasText: SANDBOX });
    expect(await row.locator('td').first().locator('.badge').textContent()).toBe('Sandbox');
    expect(await row.locator('td').nth(1).locator('.badge').textContent()).toBe('SUCCESS');
    expect(await page.locator('.sandbox-note').textContent()).toBe(
      `${SANDBOX} is your team's sandbox: a domain to try Mailroom with, verified from the start, with no DNS to set up. ` +
        `Send from any address on it, such as hello@${SANDBOX}: its mail never leaves this server, each message is captured and shown under Emails. ` +
        'Add your own domain to send for real.',
    );
    await screenshot(page, 'domains-sandbox');

    await row.getByRole('link', { name: SANDBOX }).click();
    await page.waitForURL(/\/domains\/\d+$/);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(SANDBOX);
    expect(await page.locator('#status .badge').allTextContents()).toEqual(['SUCCESS', 'Sandbox']);
    expect(await page.locator('main form button').allTextContents()).toEqual(['Save tracking']);
    expect(await page.getByRole('heading', { name: 'DNS records' }).count()).toBe(0);
    expect(await page.locator('.sandbox-note').count()).toBe(1);
    await screenshot(page, 'domain-sandbox');

    const sent = { from: `hello@${SANDBOX}`, to: 'ada@example.com', subject: 'Sandbox hello', html: '<p>Hello from the sandbox</p>' };
    const { emailId } = await expectOk(server, key, 'POST', '/v1/emails', sent);
    await waitForEmail(server, key, emailId, settled);
    await page.goto(`/emails/${emailId}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Sandbox hello');
    expect(await page.locator('.timeline li .badge').allTextContents()).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    expect(await page.frameLocator('iframe.email-body').locator('p').textContent()).toBe('Hello from the sandbox');
    await screenshot(page, 'email-from-sandbox');
    expect(dialogs).toEqual([]);
  });

  it('tracking is turned on and off from the domain page, and a domain is deleted only once the person confirms', async () => {
    const { page } = person;
    const domain = await createDomain(server, key, 'tracked.acme.test');
    await page.goto(`/domains/${domain.id}`);
    await page.getByLabel('Track opens').check();
    await page.getByRole('button', { name: 'Save tracking' }).click();
    await page.waitForLoadState();
    expect(await page.locator('.notice').textContent()).toBe('Tracking of tracked.acme.test saved');
    expect(await page.getByLabel('Track opens').isChecked()).toBe(true);
    expect((await server.call('GET', `/v1/domains/${domain.id}`, { key })).body).toMatchObject({ openTracking: true, clickTracking: false });

    await page.getByLabel('Track opens').uncheck();
    await page.getByLabel('Track clicks').check();
    await page.getByRole('button', { name: 'Save tracking' }).click();
    await page.waitForLoadState();
    expect((await server.call('GET', `/v1/domains/${domain.id}`, { key })).body).toMatchObject({ openTracking: false, clickTracking: true });

    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.getByRole('button', { name: 'Delete domain' }).click();
    expect(page.url()).toBe(`${server.url}/domains/${domain.id}`);
    expect((await server.call('GET', `/v1/domains/${domain.id}`, { key })).status).toBe(200);

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete domain' }).click();
    await page.waitForURL(`${server.url}/domains`);
    expect(await page.locator('.notice').textContent()).toBe('Domain tracked.acme.test deleted');
    expect((await server.call('GET', `/v1/domains/${domain.id}`, { key })).status).toBe(404);
    const question = 'confirm: Delete tracked.acme.test? Mail can no longer be sent from it, and API keys scoped to it are deleted with it.';
    expect(dialogs.splice(0)).toEqual([question, question]);
  });

  it('a bad or taken name, or a region not configured, is refused next to its field, with what was typed shown as text, and nothing is added', async () => {
    const { page } = person;
    const before = (await server.call('GET', '/v1/domains', { key })).body.length;
    for (const typed of ['<script>alert(1)</script>', '<b>x</b>', '192.0.2.1']) {
      await page.goto('/domains');
      await page.getByLabel('Domain name').fill(typed);
      expect(await submitted(page, () => page.getByRole('button', { name: 'Add domain' }).click())).toBe(400);
      const error = await page.locator('.field.has-error .error').textContent();
      expect(error).toMatch(typed === '192.0.2.1' ? /not an IP address/ : new RegExp(`^"${typed.replace(/[()/]/g, '\\$&')}" is not a valid domain name`));
      expect(await page.getByLabel('Domain name').inputValue()).toBe(typed);
      expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);
      expect(await page.locator('main script').count()).toBe(0);
    }
    await screenshot(page, 'domains-bad-name');

    await page.getByLabel('Domain name').fill('MAIL.ACME.TEST');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Add domain' }).click())).toBe(409);
    expect(await page.locator('.field.has-error .error').textContent()).toBe('Domain mail.acme.test is already registered for this team');

    // A region the operator did not configure (edited into the form) is named next to the select.
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    await page.route('**/domains', (route) => route.continue({ postData: new URLSearchParams({ _csrf: csrf, name: 'new.acme.test', region: 'mars-1' }).toString() }));
    expect(await submitted(page, () => page.getByRole('button', { name: 'Add domain' }).click())).toBe(400);
    await page.unroute('**/domains');
    expect(await page.locator('.field.has-error .error').textContent()).toBe('must be one of: us-east-1, eu-central-1');
    expect(await page.getByLabel('Domain name').inputValue()).toBe('new.acme.test');
    expect((await page.goto('/domains/not-a-number'))!.status()).toBe(404);
    expect((await server.call('GET', '/v1/domains', { key })).body.length).toBe(before);
    expect(dialogs).toEqual([]);
  });

  it('what DNS serves (a hostile SPF record, say) shows on the domain page as text, never as markup', async () => {
    const { page } = person;
    const domain = await createDomain(server, key, 'hostile.acme.test');
    dns.serve(domain);
    const spf = 'v=spf1 <b>x</b> <script>alert(1)</script> -all';
    dns.set('mail.hostile.acme.test', [{ type: 'TXT', value: spf }]);
    await page.goto(`/domains/${domain.id}`);
    await page.getByRole('button', { name: 'Verify DNS records' }).click();
    await page.waitForLoadState();
    await waitForDomain(server, key, domain.id, (d) => d.lastCheckedTime !== null);
    await page.reload();
    expect(await page.locator('.verification-error').textContent()).toContain(`("${spf}") does not contain include:`);
    expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);
    expect(await page.locator('main script').count()).toBe(0);

    // The same page at a phone's width: the records table scrolls inside its box, the page does not.
    const phone = await person.context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`/domains/${domain.id}`);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await screenshot(phone, 'domain-records-phone');
    await phone.close();
    expect(dialogs).toEqual([]);
  });

  it("a person of another team sees none of this team's domains, and gets 404 for their pages and actions, also by editing URLs", async () => {
    const domain = await createDomain(server, key, 'private.acme.test');
    const { teamId: otherTeam } = await server.team('Other team');
    const other = await signedIn(browser, server, otherTeam);

    await other.page.goto('/domains');
    expect(await other.page.locator('table tbody tr td:first-child a').allTextContents()).toEqual([SANDBOX]);
    const ownSandbox = (await server.call('GET', '/v1/domains', { key })).body.find((d: { sandbox: boolean }) => d.sandbox);
    expect(await other.page.locator(`a[href="/domains/${ownSandbox.id}"]`).count()).toBe(0);
    expect(await other.page.content()).not.toContain('acme.test');

    const opened = await other.page.goto(`/domains/${domain.id}`);
    expect(opened!.status()).toBe(404);
    expect(await other.page.getByRole('heading', { level: 1 }).textContent()).toBe('Not found');
    expect(await other.page.content()).not.toContain('private.acme.test');

    const csrf = await other.page.locator('input[name=_csrf]').first().inputValue();
    for (const [action, form] of [['verify', {}], ['tracking', { openTracking: 'on', clickTracking: 'on' }], ['delete', {}]] as const) {
      const response = await other.context.request.post(`/domains/${domain.id}/${action}`, { form: { _csrf: csrf, ...form }, maxRedirects: 0 });
      expect(response.status(), action).toBe(404);
    }
    const after = (await server.call('GET', `/v1/domains/${domain.id}`, { key })).body;
    expect(after).toMatchObject({ status: 'NOT_STARTED', isVerifying: false, openTracking: domain.openTracking, clickTracking: domain.clickTracking });
    await other.context.close();
    expect(dialogs).toEqual([]);
  });
});
