import type { Browser, Page } from 'playwright-core';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signedIn } from './helpers/browser.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { sleep, waitFor } from './helpers/wait.js';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from './helpers/webhook-receiver.js';

// The sender runs in the test server; small numbers let calls and retries happen within a test's seconds.
const ENV = { WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_POLL_MS: '50', WEBHOOK_TIMEOUT_MS: '2000' };
const HOSTILE = '<script>alert(1)</script> <b>x</b>';

let server: TestServer;
let browser: Browser;
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(ENV), launchBrowser()]);
});
afterAll(async () => {
  await browser?.close();
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await server?.stop();
});

async function receiver() {
  const started = await startWebhookReceiver();
  receivers.push(started);
  return started;
}

const ok = (key: string, method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);

/** The call log's rows as their cells' text, after reloading until `done` holds of them. */
async function callLog(page: Page, done: (rows: string[][]) => boolean) {
  return waitFor(
    'call log',
    async () => {
      await page.reload();
      return page.locator('table tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent!.trim())));
    },
    done,
  );
}

/** What a `dl.facts` says for one term. */
const fact = (page: Page, term: string) => page.locator(`dl.facts dt:text-is("${term}") + dd`);

/** The signature of a received call checks out with `secret` (as a Standard Webhooks library checks it). */
const signedWith = (request: ReceivedRequest, secret: string) => {
  try {
    new StandardWebhook(secret).verify(request.rawBody, request.headers);
    return true;
  } catch {
    return false;
  }
};

describe('dashboard webhooks', () => {
  it('a person adds a webhook for their endpoint, sees its signing secret once, sends a test event, sees it delivered, and a retry reaches the endpoint again', async () => {
    const endpoint = await receiver();
    const { teamId } = await server.team('Webhook flow');
    const { context, page } = await signedIn(browser, server, teamId);

    await page.goto('/webhooks');
    expect(await page.locator('.empty').textContent()).toContain('No webhooks yet');
    await page.getByRole('link', { name: 'New webhook' }).click();
    await page.getByLabel('Endpoint URL').fill(endpoint.url);
    await page.getByLabel('Description').fill('Order system');
    expect(await page.getByLabel('All events, including types added later').isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Create webhook' }).click();

    const secret = (await page.locator('.secret .copyable code').textContent())!;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(await page.locator('.secret button[data-copy]').getAttribute('data-copy')).toBe(secret);
    expect(page.url(), 'the secret answers the POST, never a URL').toBe(`${server.url}/webhooks`);
    const webhookId = (await fact(page, 'Webhook ID').textContent())!;
    expect(await fact(page, 'Events').textContent()).toBe('All events');

    // Loading the address again is a GET: the list, without the secret. The webhook's own page has none either.
    await page.goto(page.url());
    expect(await page.content()).not.toContain(secret);
    const row = page.locator('table tbody tr');
    expect(await row.count()).toBe(1);
    expect(await row.locator('td').nth(0).textContent()).toBe(`${endpoint.url}Order system`);
    expect(await row.locator('td').nth(1).textContent()).toBe('All events');
    expect(await row.locator('.badge').textContent()).toBe('ACTIVE');
    await screenshot(page, 'webhooks-list');
    await page.getByRole('link', { name: endpoint.url }).click();
    await page.waitForURL(`${server.url}/webhooks/${webhookId}`);
    await page.reload();
    expect(await page.content()).not.toContain(secret);
    expect(await page.locator('.secret').count()).toBe(0);

    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.waitForURL(`${server.url}/webhooks/${webhookId}`);
    expect(await page.locator('.notice').textContent()).toContain('Test event sent');
    const [first] = await endpoint.waitForCount(1);
    expect(first!.json).toMatchObject({ type: 'webhook.test', attempt: 1 });
    expect(signedWith(first!, secret), 'signed with the secret the page showed').toBe(true);

    const rows = await callLog(page, (all) => all[0]?.[1] === 'DELIVERED');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.slice(0, 3)).toEqual(['webhook.test', 'DELIVERED', '1']);
    expect(rows[0]![3]).toMatch(/^200 · \d+ ms$/);
    expect(rows[0]![5], 'no next attempt once delivered').toBe('—');
    await screenshot(page, 'webhook');

    await page.getByRole('link', { name: 'webhook.test' }).click();
    await page.waitForURL(/\/calls\//);
    const callId = first!.headers['webhook-id']!;
    expect(page.url()).toBe(`${server.url}/webhooks/${webhookId}/calls/${callId}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Call: webhook.test');
    expect(await fact(page, 'Status').textContent()).toBe('DELIVERED');
    expect(await fact(page, 'Last response').textContent()).toBe('200');
    expect(JSON.parse((await page.locator('pre').textContent())!)).toEqual({ ...first!.json, attempt: 1 });
    await screenshot(page, 'webhook-call');

    await page.getByRole('button', { name: 'Retry' }).click();
    await page.waitForURL(`${server.url}/webhooks/${webhookId}/calls/${callId}`);
    expect(await page.locator('.notice').textContent()).toContain('Call queued again');
    const [, again] = await endpoint.waitForCount(2);
    expect(again!.headers['webhook-id'], 'the same call, made again').toBe(callId);
    expect(again!.json).toMatchObject({ type: 'webhook.test', attempt: 2 });
    expect(signedWith(again!, secret)).toBe(true);
    await waitFor('retry recorded', async () => {
      await page.reload();
      return [await fact(page, 'Status').textContent(), await fact(page, 'Attempts').textContent()];
    }, ([status, attempts]) => status === 'DELIVERED' && attempts === '2', 15_000);
    await context.close();
  });

  it('a URL the SSRF guard refuses, a non-http URL or no events chosen is explained next to its field with what was typed kept, and no webhook is made', async () => {
    const { teamId, apiKey } = await server.team('Refused');
    const { context, page } = await signedIn(browser, server, teamId);
    await page.goto('/webhooks/new');
    const submit = async () => {
      const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Create webhook' }).click()]);
      await page.waitForLoadState();
      return response.status();
    };
    const errorOf = (label: string) => page.locator('.field.has-error', { has: page.getByLabel(label, { exact: true }) }).locator('.error');

    await page.getByLabel('Endpoint URL').fill('http://10.0.0.7/hooks');
    await page.getByLabel('All events, including types added later').uncheck();
    await page.getByLabel('email.bounced').check();
    expect(await submit()).toBe(400);
    expect(await errorOf('Endpoint URL').textContent()).toBe("10.0.0.7 is a private address; the server's operator can allow it by adding 10.0.0.7 to WEBHOOK_ALLOWED_HOSTS");
    expect(await page.getByLabel('Endpoint URL').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Endpoint URL').inputValue()).toBe('http://10.0.0.7/hooks');
    expect(await page.getByLabel('email.bounced').isChecked(), 'the chosen events are kept').toBe(true);
    expect(await page.getByLabel('All events, including types added later').isChecked()).toBe(false);
    await screenshot(page, 'webhook-new-refused');

    await page.getByLabel('Endpoint URL').fill('ftp://files.example.com/hooks');
    expect(await submit()).toBe(400);
    expect(await errorOf('Endpoint URL').textContent()).toBe('the URL must use http or https');

    await page.getByLabel('Endpoint URL').fill('http://127.0.0.1:1/hooks');
    await page.getByLabel('email.bounced').uncheck();
    expect(await submit()).toBe(400);
    expect(await page.locator('fieldset.has-error .error').textContent()).toBe('Choose at least one event, or tick All events');
    expect(await page.locator('.field.has-error').count(), 'the URL was fine').toBe(1);

    expect((await ok(apiKey, 'GET', '/v1/webhooks')).count).toBe(0);
    await context.close();
  });

  it('a webhook is edited (events and pause), re-activated, its secret rotated (the new one shown once and signing the next call), and deleted after confirming', async () => {
    const endpoint = await receiver();
    const { teamId, apiKey } = await server.team('Edits');
    const created = await ok(apiKey, 'POST', '/v1/webhooks', { url: endpoint.url });
    const { context, page } = await signedIn(browser, server, teamId);
    await page.goto(`/webhooks/${created.id}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Webhook');

    await page.getByRole('link', { name: 'Edit' }).click();
    expect(await page.getByLabel('Endpoint URL').inputValue()).toBe(endpoint.url);
    await page.getByLabel('Description').fill('Bounce handler');
    await page.getByLabel('All events, including types added later').uncheck();
    await page.getByLabel('email.bounced').check();
    await page.getByLabel('email.complained').check();
    await page.getByLabel('Status', { exact: true }).selectOption('PAUSED');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(`${server.url}/webhooks/${created.id}`);
    expect(await page.locator('.notice').textContent()).toBe('Webhook saved');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Bounce handler');
    expect(await fact(page, 'Events').textContent()).toBe('email.bounced, email.complained');
    expect(await fact(page, 'Status').locator('.badge').textContent()).toBe('PAUSED');
    expect(await ok(apiKey, 'GET', `/v1/webhooks/${created.id}`)).toMatchObject({ description: 'Bounce handler', events: ['email.bounced', 'email.complained'], status: 'PAUSED' });

    // A paused webhook offers no test event; one forced anyway is refused with the reason on its page.
    expect(await page.getByRole('button', { name: 'Send test event' }).count()).toBe(0);
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    const forced = await page.request.post(`/webhooks/${created.id}/test`, { form: { _csrf: csrf } });
    expect(forced.status()).toBe(409);
    expect(await forced.text()).toContain('only an ACTIVE webhook is called');

    await page.getByRole('button', { name: 'Activate' }).click();
    await page.waitForURL(`${server.url}/webhooks/${created.id}`);
    expect(await fact(page, 'Status').locator('.badge').textContent()).toBe('ACTIVE');

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.locator('.secret').waitFor();
    const rotated = (await page.locator('.secret .copyable code').textContent())!;
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(created.secret);
    await page.goto(`/webhooks/${created.id}`);
    expect(await page.content()).not.toContain(rotated);
    await page.getByRole('button', { name: 'Send test event' }).click();
    const [call] = await endpoint.waitForCount(1);
    expect(signedWith(call!, rotated)).toBe(true);
    expect(signedWith(call!, created.secret), 'the old secret no longer signs').toBe(false);

    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.reload();
    expect(page.url(), 'dismissing the question deletes nothing').toBe(`${server.url}/webhooks/${created.id}`);
    expect((await server.call('GET', `/v1/webhooks/${created.id}`, { key: apiKey })).status).toBe(200);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(`${server.url}/webhooks`);
    expect(await page.locator('.notice').textContent()).toBe('Webhook deleted');
    expect(await page.locator('.empty').count()).toBe(1);
    expect((await server.call('GET', `/v1/webhooks/${created.id}`, { key: apiKey })).status).toBe(404);
    await context.close();
  });

  it('the call log is read a page at a time, newest first, and can be filtered by status', async () => {
    const endpoint = await receiver();
    const { teamId, apiKey } = await server.team('Busy log');
    const created = await ok(apiKey, 'POST', '/v1/webhooks', { url: endpoint.url });
    for (let i = 0; i < 21; i++) await ok(apiKey, 'POST', `/v1/webhooks/${created.id}/test`);
    await endpoint.waitForCount(21);
    const { context, page } = await signedIn(browser, server, teamId);
    await page.goto(`/webhooks/${created.id}`);
    await callLog(page, (rows) => rows.length === 20 && rows.every((row) => row[1] === 'DELIVERED'));
    const newest = await page.locator('table tbody tr a').first().getAttribute('href');
    await page.getByRole('link', { name: 'Next →' }).click();
    expect(new URL(page.url()).searchParams.get('page')).toBe('2');
    expect(await page.locator('table tbody tr').count()).toBe(1);
    expect(await page.locator('table tbody tr a').getAttribute('href')).not.toBe(newest);
    await page.getByRole('link', { name: '← Previous' }).click();
    expect(await page.locator('table tbody tr a').first().getAttribute('href')).toBe(newest);

    await page.getByLabel('Status', { exact: true }).selectOption('FAILED');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await page.locator('.empty').textContent()).toBe('No calls with this status.');
    await context.close();
  });

  it('escaping: a description and an event payload holding markup show as text on the list, the webhook, its edit form and the call', async () => {
    const endpoint = await receiver();
    const { teamId, apiKey } = await server.team('Escaping');
    const created = await ok(apiKey, 'POST', '/v1/webhooks', { url: endpoint.url, description: HOSTILE, events: ['contact.created'] });
    const book = await ok(apiKey, 'POST', '/v1/contactBooks', { name: 'Readers' });
    await ok(apiKey, 'POST', `/v1/contactBooks/${book.id}/contacts`, { email: 'reader@example.com', firstName: HOSTILE });
    await endpoint.waitForCount(1);

    const { context, page } = await signedIn(browser, server, teamId);
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const injected = async () => (await page.locator('b', { hasText: 'x' }).count()) + (await page.locator('main script:not([type]), main script[src]').count());

    await page.goto('/webhooks');
    expect(await page.locator('table tbody td small').textContent()).toBe(HOSTILE);
    expect(await injected()).toBe(0);
    await page.goto(`/webhooks/${created.id}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(HOSTILE);
    expect(await page.title()).toBe(`${HOSTILE} · Mailroom`);
    expect(await injected()).toBe(0);
    await page.goto(`/webhooks/${created.id}/edit`);
    expect(await page.getByLabel('Description').inputValue()).toBe(HOSTILE);
    expect(await injected()).toBe(0);
    await page.goto(`/webhooks/${created.id}`);
    await callLog(page, (rows) => rows[0]?.[1] === 'DELIVERED');
    await page.getByRole('link', { name: 'contact.created' }).click();
    const payload = JSON.parse((await page.locator('pre').textContent())!);
    expect(payload.data.firstName).toBe(HOSTILE);
    expect(await injected()).toBe(0);
    expect(dialogs).toEqual([]);
    await context.close();
  });

  it("isolation: a person of another team sees none of this team's webhooks, and opening or acting on their addresses is a 404 that changes nothing", async () => {
    const endpoint = await receiver();
    const owner = await server.team('Owner');
    const hook = await ok(owner.apiKey, 'POST', '/v1/webhooks', { url: endpoint.url, description: 'Owner hook' });
    await ok(owner.apiKey, 'POST', `/v1/webhooks/${hook.id}/test`);
    const [delivered] = await endpoint.waitForCount(1);
    const callId = delivered!.headers['webhook-id']!;
    const before = await waitFor('the call recorded', () => ok(owner.apiKey, 'GET', `/v1/webhooks/${hook.id}/calls`), (calls) => calls.data[0]?.status === 'DELIVERED');
    // Read after the delivery, which touches the webhook's row too.
    const unchanged = await ok(owner.apiKey, 'GET', `/v1/webhooks/${hook.id}`);
    expect(unchanged).toMatchObject({ secret: hook.secret, status: 'ACTIVE', url: endpoint.url });

    const stranger = await server.team('Stranger');
    const { context, page } = await signedIn(browser, server, stranger.teamId);
    await page.goto('/webhooks');
    expect(await page.locator('.empty').count()).toBe(1);
    const listed = await page.content();
    for (const secretive of [endpoint.url, hook.id, 'Owner hook']) expect(listed).not.toContain(secretive);

    const base = `/webhooks/${hook.id}`;
    for (const path of [base, `${base}/edit`, `${base}/calls/${callId}`, `${base}?page=2`]) {
      const response = await page.goto(path);
      expect(response!.status(), path).toBe(404);
      expect(await page.content(), path).not.toContain(endpoint.url);
    }
    await page.goto('/webhooks');
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    const actions: [string, Record<string, string>][] = [
      [`${base}/test`, {}],
      [`${base}/status`, { status: 'PAUSED' }],
      [`${base}/edit`, { url: 'http://127.0.0.1:1/taken', description: 'Taken', allEvents: '1', status: 'PAUSED' }],
      [`${base}/rotate-secret`, {}],
      [`${base}/calls/${callId}/retry`, {}],
      [`${base}/delete`, {}],
    ];
    for (const [path, fields] of actions) {
      const response = await page.request.post(path, { form: { _csrf: csrf, ...fields }, maxRedirects: 0 });
      expect(response.status(), path).toBe(404);
    }

    const after = await ok(owner.apiKey, 'GET', `/v1/webhooks/${hook.id}`);
    expect(after, 'same URL, status, secret, and not updated since').toEqual(unchanged);
    expect(await ok(owner.apiKey, 'GET', `/v1/webhooks/${hook.id}/calls`)).toEqual(before);
    await sleep(300);
    expect(endpoint.received, 'no call was made or retried').toHaveLength(1);
    await context.close();
  });

  it('at phone width the webhook page, its call log, a new secret and the form fit the screen', async () => {
    const endpoint = await receiver();
    const { teamId, apiKey } = await server.team('Phone');
    const created = await ok(apiKey, 'POST', '/v1/webhooks', { url: `${endpoint.url}/a-rather-long-path/for-orders-and-refunds`, description: 'Shop events', events: ['email.delivered', 'email.bounced', 'email.complained', 'contact.created'] });
    await ok(apiKey, 'POST', `/v1/webhooks/${created.id}/test`);
    await endpoint.waitForCount(1);
    const { context, page } = await signedIn(browser, server, teamId, { viewport: { width: 390, height: 844 } });
    await page.goto(`/webhooks/${created.id}`);
    await callLog(page, (rows) => rows[0]?.[1] === 'DELIVERED');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, 'no sideways scrolling of the page').toBeLessThanOrEqual(0);
    await screenshot(page, 'webhook-phone');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.locator('.secret').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
    await screenshot(page, 'webhook-secret-phone');
    await page.goto('/webhooks/new');
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
    await screenshot(page, 'webhook-new-phone');
    await context.close();
  });
});
