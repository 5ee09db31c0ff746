import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptInvite, launchBrowser, screenshot } from './helpers/browser.js';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { runShellBlocks, sectionBlocks } from './helpers/markdown-examples.js';
import { childEnv, cleanUpAfterEach, NPM_START, startServerProcess, tempDir } from './helpers/processes.js';
import { apiAt } from './helpers/server.js';
import { closedPort } from './helpers/webhook-receiver.js';
import type { Browser } from 'playwright-core';

/**
 * The README's quick start, run as written: its first block must be `npm ci` and `npm start` (the
 * suite's install did the first; the test runs the second itself), and every block after it runs
 * in one shell, in order, against that server. Only the address changes: the README's
 * http://127.0.0.1:3000 becomes the port the test's server took.
 */

/** The `sh` blocks of the README's "Quick start" section, in order. */
const quickStartBlocks = () => sectionBlocks('README.md', '## Quick start', 'sh');

describe("the README's quick start", () => {
  const cleanups = cleanUpAfterEach();
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(() => browser.close());

  it('runs as written on a fresh data directory: npm start, team create, one curl from the sandbox; the email is DELIVERED, listed, and shown delivered in the dashboard', async () => {
    const [install, ...blocks] = await quickStartBlocks();
    expect(install!.trim().split('\n')).toEqual(['npm ci', 'npm start']);
    expect(blocks.length).toBeGreaterThanOrEqual(3);

    // A fresh clone's first start: nothing in DATA_DIR yet, nothing configured.
    const dataDir = await tempDir();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    // On a port of its own rather than 0, so that links (the invite's) name the port it listens on.
    const port = await closedPort();
    const env = childEnv({ DATA_DIR: dataDir, DATABASE_URL: null, SMTP_URL: null, PUBLIC_URL: null, PORT: String(port) });
    const server = await startServerProcess(env, NPM_START);
    cleanups.push(async () => void (await server.stop()));

    // The quick start keeps the key in $KEY; the test reads the team's mail with it.
    const { outputs, after: key } = await runShellBlocks(blocks, env, server.url, 'printf "%s" "$KEY"');
    const [send, list, invite] = outputs.map((output) => output.trim());
    const { emailId } = JSON.parse(send!);
    expect(emailId).toMatch(/^\w{8,}$/);
    const listed = JSON.parse(list!);
    expect(listed).toMatchObject({ count: 1, data: [{ id: emailId, from: 'hello@sandbox.mailroom.localhost', to: 'ada@example.com' }] });

    const api = apiAt(server.url);
    const email = await waitForEmail(api, key, emailId, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    const eml = await readFile(path.join(dataDir, 'outbox', `${emailId}.eml`), 'utf8');
    expect(eml).toMatch(/^Subject: Hello from Mailroom\r$/m);

    // The invite's link, opened in a browser: a password, then the email among the team's mail.
    const { inviteUrl } = JSON.parse(invite!.slice(invite!.indexOf('{')));
    expect(inviteUrl.startsWith(`${server.url}/invite/`)).toBe(true);
    const { page } = await acceptInvite(browser, server.url, inviteUrl);
    await page.getByRole('link', { name: 'Emails', exact: true }).click();
    await page.waitForURL(`${server.url}/emails`);
    const row = page.locator('tbody tr').first();
    expect(await row.locator('a.subject').textContent()).toBe('Hello from Mailroom');
    expect(await row.locator('.badge').textContent()).toBe('DELIVERED');
    await screenshot(page, 'quick-start-emails');
    await row.locator('a.subject').click();
    await page.waitForURL(`${server.url}/emails/${emailId}`);
    expect(await page.locator('.timeline .badge').allTextContents()).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    await screenshot(page, 'quick-start-email');
  });
});
