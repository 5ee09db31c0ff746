import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signedIn, watchDialogs, type SignedIn } from './helpers/browser.js';
import { expectShownAsText, HOSTILE, postAs, submitted } from './helpers/dashboard-content.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let browser: Browser;
let key: string;
let teamId: number;
let person: SignedIn;
let dialogs: string[];

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  const team = await server.team('Templates team');
  ({ apiKey: key, teamId } = team);
  person = await signedIn(browser, server, teamId);
  dialogs = watchDialogs(person.page);
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const template = (id: string) => server.call('GET', `/v1/templates/${id}`, { key });

async function createTemplate(body: Record<string, string>) {
  const res = await server.call('POST', '/v1/templates', { key, body });
  expect(res.status).toBe(200);
  return res.body as { id: string; name: string };
}

describe('dashboard: templates', () => {
  it('a person makes a template, changes it and deletes it in the browser, and the API sees each step', async () => {
    const { page } = person;
    await page.goto('/templates');
    expect(await page.locator('.empty').textContent()).toContain('No templates yet');

    await page.getByRole('link', { name: 'New template' }).click();
    await page.getByLabel('Name').fill('Welcome');
    await page.getByLabel('Subject').fill('Welcome, {{firstName,fallback=friend}}');
    await page.getByLabel('HTML').fill('<h1>Hello {{firstName}}</h1><p>Glad you are here.</p>');
    await page.getByRole('button', { name: 'Create template' }).click();
    await page.waitForURL(/\/templates\/[^/]+$/);
    expect(await page.locator('.notice').textContent()).toBe('Template “Welcome” created');
    const id = page.url().split('/').pop()!;
    expect((await template(id)).body).toMatchObject({ name: 'Welcome', subject: 'Welcome, {{firstName,fallback=friend}}', html: '<h1>Hello {{firstName}}</h1><p>Glad you are here.</p>', variables: ['firstName'] });
    // The saved HTML is shown in a sandboxed frame.
    expect(await page.locator('iframe.email-body').getAttribute('sandbox')).toBe('');
    expect(await page.frameLocator('iframe.email-body').locator('h1').textContent()).toBe('Hello {{firstName}}');

    await page.getByLabel('Subject').fill('Welcome aboard, {{firstName}}');
    await page.getByLabel('HTML').fill('<p>Hi {{firstName}}, your plan is {{plan}}.</p>');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.waitForURL(`${server.url}/templates/${id}`);
    expect(await page.locator('.notice').textContent()).toBe('Template saved');
    expect((await template(id)).body).toMatchObject({ name: 'Welcome', subject: 'Welcome aboard, {{firstName}}', html: '<p>Hi {{firstName}}, your plan is {{plan}}.</p>', variables: ['firstName', 'plan'] });
    await screenshot(page, 'template-edit');
    expect(await page.getByRole('link', { name: 'Start a campaign' }).getAttribute('href')).toBe(`/campaigns/new?templateId=${id}`);

    await createTemplate({ name: 'Receipt', subject: 'Your receipt', html: '<p>Thanks for your order {{orderId}}</p>' });
    await page.goto('/templates');
    const rows = page.locator('table tbody tr');
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(1).locator('td a').textContent()).toBe('Welcome');
    expect(await rows.nth(1).locator('td small').textContent()).toBe('Welcome aboard, {{firstName}}');
    expect(await rows.nth(1).locator('td').nth(1).textContent()).toBe('firstName, plan');
    await screenshot(page, 'templates-list');

    await rows.nth(1).getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(`${server.url}/templates`);
    expect(dialogs.at(-1)).toBe('confirm: Delete the template “Welcome”?');
    expect(await page.locator('.notice').textContent()).toBe('Template “Welcome” deleted');
    expect((await template(id)).status).toBe(404);
    expect(await rows.count()).toBe(1);
  });

  it('bad input re-renders the form with each message next to its field (400), and saves nothing', async () => {
    const { page } = person;
    const before = (await server.call('GET', '/v1/templates', { key })).body.count;
    await page.goto('/templates/new');
    // The browser's own required checks are skipped, as a script or an old browser would.
    await page.locator('form.stack').evaluate((form) => ((form as HTMLFormElement).noValidate = true));
    await page.getByLabel('Name').fill('   ');
    await page.getByLabel('Subject').fill('Hello');
    const status = await submitted(page, () => page.getByRole('button', { name: 'Create template' }).click());
    expect(status).toBe(400);
    expect(await page.locator('.field:has(#f-name) .error').textContent()).toBe('must not be empty');
    expect(await page.getByLabel('Subject').inputValue()).toBe('Hello');

    await page.locator('form.stack').evaluate((form) => ((form as HTMLFormElement).noValidate = true));
    await page.getByLabel('Name').fill('No body');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Create template' }).click())).toBe(400);
    expect(await page.locator('.field:has(#f-html) .error').textContent()).toBe('is required unless text or content is given');
    // Said once, beside the field: nothing about it is repeated above the form.
    expect(await page.locator('.form-error').count()).toBe(0);
    await screenshot(page, 'template-new-error');
    expect((await server.call('GET', '/v1/templates', { key })).body.count).toBe(before);

    const { id } = await createTemplate({ name: 'Kept', subject: 'Kept', html: '<p>kept</p>' });
    await page.goto(`/templates/${id}`);
    await page.locator('form.stack').evaluate((form) => ((form as HTMLFormElement).noValidate = true));
    await page.getByLabel('Subject').fill('');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Save changes' }).click())).toBe(400);
    expect(await page.locator('.field:has(#f-subject) .error').textContent()).toBe('must not be empty');
    expect((await template(id)).body.subject).toBe('Kept');
  });

  it('names, subjects and bodies holding markup show as text on every templates page, and none of their script runs', async () => {
    const { page } = person;
    const { id } = await createTemplate({ name: HOSTILE, subject: HOSTILE, html: `<p>${HOSTILE}</p><img src=x onerror="alert(2)">` });
    for (const path of ['/templates', `/templates/${id}`]) {
      await page.goto(path);
      await expectShownAsText(page, HOSTILE, dialogs);
    }
    // The edit form holds the HTML as the textarea's text, not as markup.
    expect(await page.getByLabel('HTML').inputValue()).toBe(`<p>${HOSTILE}</p><img src=x onerror="alert(2)">`);
    // In the sandboxed frame the markup renders, but its script never runs.
    expect(await page.frameLocator('iframe.email-body').locator('b').textContent()).toBe('x');
    expect(dialogs.filter((dialog) => dialog.startsWith('alert'))).toEqual([]);
    const body = await person.context.request.get(`/templates/${id}/body`);
    expect(body.headers()['content-security-policy']).toBe("sandbox; default-src 'none'; img-src data: https: http:; style-src 'unsafe-inline'; font-src data: https:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'");
    expect(body.headers()['x-frame-options']).toBe('SAMEORIGIN');
  });

  it('a person of another team sees none of this team’s templates, gets 404 for their URLs and actions, and changes nothing', async () => {
    const { id } = await createTemplate({ name: 'Ours alone', subject: 'Private', html: '<p>private</p>' });
    const other = await signedIn(browser, server, (await server.team('Other team')).teamId);
    try {
      await other.page.goto('/templates');
      expect(await other.page.locator('.empty').textContent()).toContain('No templates yet');
      expect(await other.page.getByText('Ours alone').count()).toBe(0);
      for (const path of [`/templates/${id}`, `/templates/${id}/body`]) {
        const response = await other.page.goto(path);
        expect(response!.status(), path).toBe(404);
        expect(await other.page.content()).not.toContain('private');
      }
      const edit = await postAs(other, `/templates/${id}`, { name: 'Taken', subject: 'Taken', html: '<p>taken</p>' });
      expect(edit.status()).toBe(404);
      const remove = await postAs(other, `/templates/${id}/delete`);
      expect(remove.status()).toBe(404);
      expect((await template(id)).body).toMatchObject({ name: 'Ours alone', subject: 'Private', html: '<p>private</p>' });
    } finally {
      await other.context.close();
    }
  });

  it('the templates list reads well at phone width', async () => {
    const phone = await signedIn(browser, server, teamId, { viewport: { width: 390, height: 844 } });
    try {
      await phone.page.goto('/templates');
      expect(await phone.page.locator('table').isVisible()).toBe(true);
      await screenshot(phone.page, 'templates-list-phone');
    } finally {
      await phone.context.close();
    }
  });
});
