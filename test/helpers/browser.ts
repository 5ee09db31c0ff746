import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { Role } from '../../src/people/caller.js';
import { inviteUser } from '../../src/people/team.js';
import { startTestServer, type TestServer } from './server.js';

/** Debian's chromium, which .ci/run installs when it is missing. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Without the network-quiet flags, chromium dials Google's hosts at start and on this closed
// network many of those connections are refused.
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

export const SCREENSHOTS = path.resolve('test-artifacts', 'screenshots');

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
}

export const PASSWORD = 'correct horse battery staple';

export type SignedIn = { context: BrowserContext; page: Page; email: string; userId: string };

/**
 * Invites a person into `teamId` as the operator's CLI does (no role given: the team's first person
 * is its owner, later ones members). The link names PUBLIC_URL, which in a test server says port 0:
 * `inviteUrl` is rebased on the server's own address.
 */
export async function invitePerson(server: TestServer, teamId: number, email: string, role?: Role) {
  const invited = await inviteUser(server.deps, { teamId, domainId: null }, { email, role });
  return { ...invited, inviteUrl: server.url + new URL(invited.inviteUrl).pathname };
}

/**
 * A person of `teamId`, invited as the CLI would, who follows the link, chooses a password and is
 * signed in: the same steps a new user takes, in a browser context of their own.
 */
export async function signedIn(
  browser: Browser,
  server: TestServer,
  teamId: number,
  options: { email?: string; role?: Role; viewport?: { width: number; height: number } } = {},
): Promise<SignedIn> {
  const email = options.email ?? `person-${teamId}-${Math.random().toString(36).slice(2, 8)}@example.test`;
  const invited = await invitePerson(server, teamId, email, options.role);
  return { ...(await acceptInvite(browser, server.url, invited.inviteUrl, options.viewport)), email, userId: invited.userId };
}

/** Follows an invite link in a new browser context, chooses the password and lands signed in on the overview. */
export async function acceptInvite(browser: Browser, baseURL: string, inviteUrl: string, viewport = { width: 1280, height: 860 }) {
  const context = await browser.newContext({ baseURL, viewport });
  const page = await context.newPage();
  await page.goto(inviteUrl);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByLabel('Password again').fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await page.waitForURL(`${baseURL}/`);
  return { context, page };
}

/**
 * Saves the whole page as one screenshot under test-artifacts/screenshots (kept by CI as an
 * artefact). The viewport is stretched to the page first: Chromium does not paint a sandboxed
 * (cross-origin) frame outside the viewport, so a full-page capture would show a mail's frame empty.
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  const size = page.viewportSize()!;
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.setViewportSize({ width: size.width, height: Math.max(height, size.height) });
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await page.screenshot({ path: file });
  await page.setViewportSize(size);
  return file;
}

/**
 * Notes every dialog the page opens: an alert or prompt would be injected script, so it is
 * dismissed; a confirm is accepted (the person said yes) unless the test answers confirms itself.
 */
export function watchDialogs(page: Page, options: { answerConfirms?: boolean } = {}): string[] {
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    if (dialog.type() !== 'confirm') void dialog.dismiss();
    else if (options.answerConfirms !== false) void dialog.accept();
  });
  return dialogs;
}

export type DashboardRig = { server: TestServer; browser: Browser; teamId: number; apiKey: string; person: SignedIn; dialogs: string[]; stop(): Promise<void> };

/**
 * A test server and a browser with one team and one of its people signed in, whose dialogs are
 * watched (confirms left to the test to answer).
 */
export async function startDashboard(teamName: string, env: Record<string, string> = {}): Promise<DashboardRig> {
  const [server, browser] = await Promise.all([startTestServer(env), launchBrowser()]);
  const { teamId, apiKey } = await server.team(teamName);
  const person = await signedIn(browser, server, teamId);
  const dialogs = watchDialogs(person.page, { answerConfirms: false });
  return { server, browser, teamId, apiKey, person, dialogs, stop: async () => void (await Promise.all([browser.close(), server.stop()])) };
}
