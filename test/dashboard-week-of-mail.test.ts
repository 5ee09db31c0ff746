import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NAV } from '../src/dashboard/layout.js';
import { launchBrowser, screenshot, signedIn } from './helpers/browser.js';
import { verifiedDomain } from './helpers/domains.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

/**
 * The dashboard of a team in steady use, as a person sees it after a week: thousands of emails a
 * day (fewer at the weekend), a few bounces, two campaigns part-way through. The week's counters
 * and the campaigns' progress are written to the database as the sending would have left them (a
 * week of real sending is not a test's to wait for); the campaigns themselves are made and started
 * through the API. Its screenshots are the ones the README and docs/dashboard.md show.
 */

let server: TestServer;
let browser: Browser;
let teamId: number;
let key: string;

/** A week, oldest day first, as daily counters: what the overview and analytics read. */
const WEEK = [
  { sent: 1432, delivered: 1415, opened: 603, clicked: 88, unsubscribed: 2, bounced: 12, hard_bounced: 8, complained: 0 },
  { sent: 1518, delivered: 1497, opened: 655, clicked: 97, unsubscribed: 3, bounced: 14, hard_bounced: 9, complained: 1 },
  { sent: 1389, delivered: 1374, opened: 571, clicked: 79, unsubscribed: 1, bounced: 10, hard_bounced: 6, complained: 0 },
  { sent: 1604, delivered: 1581, opened: 702, clicked: 110, unsubscribed: 4, bounced: 15, hard_bounced: 10, complained: 0 },
  { sent: 1157, delivered: 1146, opened: 466, clicked: 61, unsubscribed: 1, bounced: 8, hard_bounced: 5, complained: 0 },
  { sent: 503, delivered: 499, opened: 187, clicked: 22, unsubscribed: 0, bounced: 3, hard_bounced: 2, complained: 0 },
  { sent: 3412, delivered: 3368, opened: 1290, clicked: 205, unsubscribed: 6, bounced: 31, hard_bounced: 19, complained: 1 },
];
const sum = (kind: keyof (typeof WEEK)[number]) => WEEK.reduce((total, day) => total + day[kind], 0);

/** Two campaigns sending now, with their progress as the overview shows it. */
const CAMPAIGNS = [
  { name: 'December newsletter', subject: 'What we shipped in December', total: 4812, sent: 2400, delivered: 2371 },
  { name: 'Winter sale: 20% off annual plans', subject: '20% off annual plans, this week only', total: 1950, sent: 600, delivered: 596 },
];

const utcDay = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
const number = (n: number) => n.toLocaleString('en');

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  ({ teamId, apiKey: key } = await server.team('Acme'));
  const ok = (method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);
  const domain = await verifiedDomain(server, key, 'example.com');

  // The campaigns, started for real: each sends its first batch, then waits an hour for the next.
  const book = await ok('POST', '/v1/contactBooks', { name: 'Newsletter readers', emoji: '📰' });
  const readers = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'margaret', 'ken', 'radia', 'frances'];
  await ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, readers.map((name) => ({ email: `${name}@example.net`, firstName: name[0]!.toUpperCase() + name.slice(1) })));
  for (const campaign of CAMPAIGNS) {
    const created = await ok('POST', '/v1/campaigns', {
      name: campaign.name, from: `news@${domain.name}`, subject: campaign.subject, contactBookId: book.id,
      html: '<p>Hello {{firstName}},</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>', batchSize: 5, batchWindowMinutes: 60, sendNow: true,
    });
    await waitFor(`${campaign.name}: its first batch delivered`, () => ok('GET', `/v1/campaigns/${created.id}`), (c) => c.status === 'RUNNING' && c.delivered === 5);
    // Then as it would stand a few batches into a list of thousands.
    await server.deps.db.updateTable('campaigns').set({ total: campaign.total, sent: campaign.sent, delivered: campaign.delivered }).where('id', '=', created.id).execute();
  }

  // The week's counters, in place of those of the ten mails above.
  await server.deps.db.deleteFrom('daily_email_counts').where('team_id', '=', teamId).execute();
  await server.deps.db
    .insertInto('daily_email_counts')
    .values(WEEK.map((counts, i) => ({ team_id: teamId, domain_id: domain.id, day: utcDay(WEEK.length - 1 - i), ...counts })))
    .execute();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** The cards under a heading, as label → value. */
async function cardsUnder(page: Page, heading: string) {
  const group = page.locator('h2', { hasText: new RegExp(`^${heading}$`) }).locator('xpath=following-sibling::div[1]');
  const labels = await group.locator('.card .label').allTextContents();
  const values = await group.locator('.card .value').allTextContents();
  return Object.fromEntries(labels.map((label, i) => [label, values[i]]));
}

/** A person of the team, signed in (each test its own: an invite is taken once), an owner: one who sees every page. */
const person = (email: string, viewport?: { width: number; height: number }) => signedIn(browser, server, teamId, { email, viewport, role: 'owner' });

describe("a team's week of mail in the dashboard", () => {
  it("the overview shows today's and the week's counts, both rates within the guard's limits once past its minimum volume, the campaigns sending now, and every page in the navigation", async () => {
    const { context, page } = await person('ada@example.com');
    await page.goto('/');
    expect(await page.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents()).toEqual(NAV.map((item) => item.label));
    const today = WEEK.at(-1)!;
    expect(await cardsUnder(page, 'Today')).toEqual({ Sent: number(today.sent), Delivered: number(today.delivered), Bounced: number(today.bounced), Complained: number(today.complained) });
    expect(await cardsUnder(page, 'Last 7 days')).toEqual({ Sent: number(sum('sent')), Delivered: number(sum('delivered')), Bounced: number(sum('bounced')), Complained: number(sum('complained')) });
    expect((await cardsUnder(page, 'Reputation, last 7 days')).Delivered).toBe(number(sum('delivered')));
    expect(await page.locator('.card .badge').allTextContents()).toEqual(['Within the limit', 'Within the limit']);

    const rows = page.locator('table tbody tr');
    expect(await rows.locator('a').allTextContents()).toEqual(expect.arrayContaining(CAMPAIGNS.map((campaign) => campaign.name)));
    for (const campaign of CAMPAIGNS) {
      const row = rows.filter({ hasText: campaign.name });
      expect(await row.locator('small').textContent()).toBe(`${number(campaign.sent)} of ${number(campaign.total)}`);
      expect(await row.locator('td').last().textContent()).toBe(number(campaign.delivered));
    }
    await screenshot(page, 'overview-week');
    await context.close();
  });

  it('at phone width, the menu of the overview holds every page', async () => {
    const { context, page } = await person('grace@example.com', { width: 390, height: 844 });
    await page.goto('/');
    await page.locator('.menu-button').click();
    const nav = page.getByRole('navigation', { name: 'Main' });
    expect(await nav.isVisible()).toBe(true);
    expect(await nav.getByRole('link').allTextContents()).toEqual(NAV.map((item) => item.label));
    await screenshot(page, 'overview-week-phone-menu');
    await context.close();
  });

  it('analytics charts and lists each day of the week, with its totals', async () => {
    const { context, page } = await person('alan@example.com');
    await page.goto('/analytics');
    const plain = (text: string | null) => Number(text!.replaceAll(',', ''));
    const totals = await page.locator('#totals .card').evaluateAll((cards) => cards.map((card) => [card.querySelector('.label')!.textContent!, card.querySelector('.value')!.textContent!]));
    expect(Object.fromEntries(totals.map(([label, value]) => [label, plain(value!)]))).toMatchObject({ Sent: sum('sent'), Delivered: sum('delivered'), Opened: sum('opened'), Clicked: sum('clicked') });
    const sentByDay = await page.locator('table tbody tr').evaluateAll((rows) => rows.map((row) => row.querySelectorAll('td')[1]!.textContent));
    expect(sentByDay.map(plain)).toEqual(WEEK.map((day) => day.sent).reverse());
    await page.waitForFunction(() => typeof (window as any).Chart === 'function' && (window as any).Chart.getChart(document.querySelector('canvas[data-chart]')));
    await screenshot(page, 'analytics-week');
    await context.close();
  });
});
