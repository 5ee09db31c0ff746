import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signedIn } from './helpers/browser.js';
import { verifiedDomain } from './helpers/domains.js';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { waitFor } from './helpers/wait.js';

let env: Awaited<ReturnType<typeof startFeedbackServer>>;
let browser: Browser;
let team: FeedbackTeam;
let domainA: { id: number; name: string };

const KINDS = ['Sent', 'Delivered', 'Opened', 'Clicked', 'Bounced', 'Complained'];

// The reputation guard judges rates from 4 delivered emails on: all domains together reach it,
// domain A alone (3) does not.
const MIN_DELIVERED = '4';

/**
 * Mail through the API to the loopback SMTP sink, which refuses addresses starting with "hard": domain A
 * delivers 3 and hard-bounces 1, domain B delivers 1. A hard bounce at RCPT is not counted as sent.
 */
beforeAll(async () => {
  [env, browser] = await Promise.all([startFeedbackServer({ REPUTATION_MIN_DELIVERED: MIN_DELIVERED }), launchBrowser()]);
  team = await feedbackTeam(env.server, env.sink, 'stats-a.test');
  domainA = team.domain;
  await verifiedDomain(env.server, team.key, 'stats-b.test');
  env.sink.rule = { rcpt: (address) => (address.startsWith('hard') ? { code: 550, message: '5.1.1 no such user' } : null) };
  const send = async (domain: string, to: string) => {
    const { emailId } = await team.ok('POST', '/v1/emails', { from: `hello@${domain}`, to, subject: 'Hello', html: '<p>Hello</p>' });
    await waitFor(`mail to ${to}`, () => team.email(emailId), (e) => ['DELIVERED', 'BOUNCED'].includes(e.latestStatus));
  };
  for (let i = 0; i < 3; i++) await send('stats-a.test', `reader${i}@receiver.example`);
  await send('stats-a.test', 'hard@receiver.example');
  await send('stats-b.test', 'reader@receiver.example');
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await env?.stop();
});

/** The cards of a group (`#totals`, `#reputation`) as label → value and the line under it. */
async function cards(page: Page, group: string) {
  const entries = await page.locator(`${group} .card`).evaluateAll((all) =>
    all.map((card) => [card.querySelector('.label')!.textContent!, { value: card.querySelector('.value')!.textContent!, sub: card.querySelector('.sub')?.textContent ?? '' }] as const),
  );
  return Object.fromEntries(entries);
}

const totals = async (page: Page) => Object.fromEntries(Object.entries(await cards(page, '#totals')).map(([label, card]) => [label, Number(card.value)]));

/** The day-by-day table: its rows (date first), and each count column's sum. */
async function dayTable(page: Page) {
  const rows = await page.locator('table tbody tr').evaluateAll((all) => all.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent!)));
  const sums = Object.fromEntries(KINDS.map((kind, i) => [kind, rows.reduce((sum, row) => sum + Number(row[i + 1]), 0)]));
  return { rows, sums };
}

/** Chart.js drew the chart: its datasets' labels and sums, and the canvas's size. */
async function drawnChart(page: Page) {
  await page.waitForFunction(() => typeof (window as any).Chart === 'function' && (window as any).Chart.getChart(document.querySelector('canvas[data-chart]')));
  return page.evaluate(() => {
    const canvas = document.querySelector('canvas[data-chart]') as HTMLCanvasElement;
    const chart = (window as any).Chart.getChart(canvas);
    const datasets = chart.data.datasets as { label: string; data: number[] }[];
    return {
      Chart: typeof (window as any).Chart,
      days: (chart.data.labels as string[]).length,
      sums: Object.fromEntries(datasets.map((dataset) => [dataset.label, dataset.data.reduce((a, b) => a + b, 0)])),
      width: canvas.getBoundingClientRect().width,
      height: canvas.getBoundingClientRect().height,
    };
  });
}

describe('dashboard analytics', () => {
  it("shows the team's last 7 days as totals, a drawn chart and a table of the same numbers, with the rates beside the guard's limits marked when over; 30 days shows 30 rows", async () => {
    const { context, page } = await signedIn(browser, env.server, team.teamId);
    await page.goto('/analytics');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Analytics');
    const expected = { Sent: 4, Delivered: 4, Opened: 0, Clicked: 0, Bounced: 1, Complained: 0 };
    expect(await totals(page)).toEqual(expected);

    const chart = await drawnChart(page);
    expect(chart).toMatchObject({ Chart: 'function', days: 7, sums: expected });
    expect(chart.width).toBeGreaterThan(500);
    expect(chart.height).toBeGreaterThan(100);

    const week = await dayTable(page);
    expect(week.rows).toHaveLength(7);
    expect(week.sums).toEqual(expected);

    const reputation = await cards(page, '#reputation');
    expect(reputation['Hard-bounce rate']).toEqual({ value: '25%', sub: 'limit 5% Over the limit' });
    expect(reputation['Complaint rate']).toEqual({ value: '0%', sub: 'limit 0.1% Within the limit' });
    expect(reputation.Delivered!.value).toBe('4');
    await screenshot(page, 'analytics');

    await page.getByLabel('Period').selectOption('30');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/days=30/);
    const month = await dayTable(page);
    expect(month.rows).toHaveLength(30);
    expect(month.sums).toEqual(expected);
    expect((await drawnChart(page)).days).toBe(30);
    expect(await page.getByLabel('Period').inputValue(), 'the choice stays chosen').toBe('30');
    await context.close();
  });

  it("the domain filter shows one domain's numbers and rates, not judged while the domain is below the guard's minimum volume", async () => {
    const { context, page } = await signedIn(browser, env.server, team.teamId);
    await page.goto('/analytics');
    await page.getByLabel('Domain').selectOption({ label: 'stats-a.test' });
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(new RegExp(`domainId=${domainA.id}`));
    const expected = { Sent: 3, Delivered: 3, Opened: 0, Clicked: 0, Bounced: 1, Complained: 0 };
    expect(await totals(page)).toEqual(expected);
    expect((await dayTable(page)).sums).toEqual(expected);
    expect((await drawnChart(page)).sums).toEqual(expected);
    const reputation = await cards(page, '#reputation');
    expect(reputation['Hard-bounce rate']).toEqual({ value: '33.33%', sub: 'limit 5% Not enough mail yet 3 of 4 delivered' });
    expect(reputation['Complaint rate']).toEqual({ value: '0%', sub: 'limit 0.1% Not enough mail yet 3 of 4 delivered' });
    expect(await page.locator('#reputation .value.over').count()).toBe(0);
    expect(await page.locator('h2').first().textContent()).toBe('Totals, last 7 days, stats-a.test');
    await context.close();
  });

  it('a period or domain typed into the address that the API refuses is explained next to its field with a 400, and markup in them is never run or shown as markup', async () => {
    const { context, page } = await signedIn(browser, env.server, team.teamId);
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const period = await page.goto('/analytics?days=14');
    expect(period!.status()).toBe(400);
    expect(await page.locator('.field.has-error', { has: page.getByLabel('Period') }).locator('.error').textContent()).toMatch(/7|30/);

    const hostile = await page.goto(`/analytics?days=${encodeURIComponent('<b>x</b>')}&domainId=${encodeURIComponent('<script>alert(1)</script>')}`);
    expect(hostile!.status()).toBe(400);
    expect(await page.locator('.field.has-error').count()).toBe(2);
    expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);
    expect(await page.locator('main script').count()).toBe(0);
    expect(dialogs).toEqual([]);
    await screenshot(page, 'analytics-bad-filter');
    await context.close();
  });

  it("isolation: a person of another team sees only their own team's (zero) numbers and none of this team's domains; this team's domain in the address is a 404", async () => {
    const stranger = await env.server.team('Stranger');
    const { context, page } = await signedIn(browser, env.server, stranger.teamId);
    await page.goto('/analytics');
    expect(await totals(page)).toEqual({ Sent: 0, Delivered: 0, Opened: 0, Clicked: 0, Bounced: 0, Complained: 0 });
    expect((await dayTable(page)).sums).toEqual({ Sent: 0, Delivered: 0, Opened: 0, Clicked: 0, Bounced: 0, Complained: 0 });
    // Only the stranger's own sandbox domain.
    expect(await page.getByLabel('Domain').locator('option').allTextContents()).toEqual(['All domains', 'sandbox.mailroom.localhost']);
    expect(await page.content()).not.toContain('stats-a.test');
    const theirs = await page.goto(`/analytics?domainId=${domainA.id}`);
    expect(theirs!.status()).toBe(404);
    expect(await page.content()).not.toContain('stats-a.test');
    await context.close();
  });

  it('at phone width the page fits the screen, the chart drawn to its width', async () => {
    const { context, page } = await signedIn(browser, env.server, team.teamId, { viewport: { width: 390, height: 844 } });
    await page.goto('/analytics');
    const chart = await drawnChart(page);
    expect(chart.width).toBeGreaterThan(250);
    expect(chart.width).toBeLessThan(390);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 'no sideways scrolling of the page').toBeLessThanOrEqual(0);
    await screenshot(page, 'analytics-phone');
    await context.close();
  });
});
