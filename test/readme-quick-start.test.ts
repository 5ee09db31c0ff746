import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptInvite, launchBrowser, screenshot } from './helpers/browser.js';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
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

const README_URL = 'http://127.0.0.1:3000';
const BLOCK_END = '--- end of block ---';

/** The `sh` blocks of the README's "Quick start" section, in order. */
async function quickStartBlocks(): Promise<string[]> {
  const readme = await readFile('README.md', 'utf8');
  const start = readme.search(/^## Quick start/m);
  expect(start, 'the README has a Quick start section').toBeGreaterThan(-1);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

/** Runs the blocks as one bash script that stops at the first failing command; answers each block's output. */
async function runBlocks(blocks: string[], env: NodeJS.ProcessEnv, url: string): Promise<{ outputs: string[]; key: string }> {
  const script = [
    'set -euo pipefail',
    ...blocks.map((block) => `${block.replaceAll(README_URL, url)}\nprintf '\\n%s\\n' '${BLOCK_END}'`),
    // The quick start keeps the key in $KEY; the test reads the team's mail with it.
    'printf "%s" "$KEY"',
  ].join('\n');
  const { stdout } = await promisify(execFile)('bash', ['-c', script], { env, cwd: process.cwd(), timeout: 240_000 });
  const parts = stdout.split(`\n${BLOCK_END}\n`);
  return { outputs: parts.slice(0, -1), key: parts.at(-1)! };
}

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

    const { outputs, key } = await runBlocks(blocks, env, server.url);
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
