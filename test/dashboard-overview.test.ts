import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signedIn, watchDialogs } from './helpers/browser.js';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { waitFor } from './helpers/wait.js';

let env: Awaited<ReturnType<typeof startFeedbackServer>>;
let browser: Browser;
let team: FeedbackTeam;
let campaignId: string;

const HOSTILE = '<script>alert(1)</script><b>x</b>';

/**
 * Three emails delivered and one hard-bounced by the sink today; a campaign whose second batch waits
 * an hour, so it is still RUNNING with 2 of its 4 recipients sent.
 */
beforeAll(async () => {
  [env, browser] = await Promise.all([startFeedbackServer(), launchBrowser()]);
  team = await feedbackTeam(env.server, env.sink, 'overview.test');
  env.sink.rule = { rcpt: (address) => (address.startsWith('hard') ? { code: 550, message: '5.1.1 no such user' } : null) };
  for (const to of ['a@receiver.example', 'b@receiver.example', 'c@receiver.example', 'hard@receiver.example']) {
    const { emailId } = await team.ok('POST', '/v1/emails', { from: `hello@${team.domain.name}`, to, subject: 'Hello', html: '<p>Hello</p>' });
    await waitFor(`mail to ${to}`, () => team.email(emailId), (e) => ['DELIVERED', 'BOUNCED'].includes(e.latestStatus));
  }
  campaignId = await runningCampaign('Spring launch', 'r');
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await env?.stop();
});

/** A campaign to 4 contacts whose second batch of 2 waits an hour: RUNNING with 2 sent. */
async function runningCampaign(name: string, prefix: string): Promise<string> {
  const book = await team.ok('POST', '/v1/contactBooks', { name: `Readers of ${name}` });
  await team.ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, [1, 2, 3, 4].map((n) => ({ email: `${prefix}${n}@receiver.example` })));
  const campaign = await team.ok('POST', '/v1/campaigns', {
    name, from: `news@${team.domain.name}`, subject: 'News', contactBookId: book.id, html: '<p>News</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>',
    batchSize: 2, batchWindowMinutes: 60, sendNow: true,
  });
  await waitFor('the first batch sent', () => team.ok('GET', `/v1/campaigns/${campaign.id}`), (c) => c.status === 'RUNNING' && c.sent === 2);
  return campaign.id;
}

/** The cards under a heading, as label → value. */
async function cardsUnder(page: Page, heading: string) {
  const group = page.locator('h2', { hasText: new RegExp(`^${heading}$`) }).locator('xpath=following-sibling::div[1]');
  const labels = await group.locator('.card .label').allTextContents();
  const values = await group.locator('.card .value').allTextContents();
  return Object.fromEntries(labels.map((label, i) => [label, values[i]]));
}

describe('the overview', () => {
  it("shows today's and this week's mail, the rates (not judged below the guard's minimum volume), and the campaigns sending now", async () => {
    const { context, page } = await signedIn(browser, env.server, team.teamId);
    await page.goto('/');
    // 3 delivered + 2 campaign mails sent; the hard bounce at RCPT is not counted as sent.
    const expected = { Sent: '5', Delivered: '5', Bounced: '1', Complained: '0' };
    expect(await cardsUnder(page, 'Today')).toEqual(expected);
    expect(await cardsUnder(page, 'Last 7 days')).toEqual(expected);
    expect(await cardsUnder(page, 'Reputation, last 7 days')).toEqual({ 'Hard-bounce rate': '20%', 'Complaint rate': '0%', Delivered: '5' });
    // Five delivered is far below the 1,000 the guard waits for (REPUTATION_MIN_DELIVERED): one bounce
    // is not "over the limit" yet, and the cards say how far there is to go instead.
    expect(await page.locator('.card .value.over').count()).toBe(0);
    const rates = page.locator('.card', { has: page.locator('.label', { hasText: /rate$/ }) }).locator('.sub');
    expect(await rates.allTextContents()).toEqual(['limit 5% Not enough mail yet 5 of 1,000 delivered', 'limit 0.1% Not enough mail yet 5 of 1,000 delivered']);
    expect(await page.getByText('Over the limit').count()).toBe(0);

    const row = page.locator('table tbody tr');
    expect(await row.count()).toBe(1);
    expect(await row.getByRole('link').textContent()).toBe('Spring launch');
    expect(await row.getByRole('link').getAttribute('href')).toBe(`/campaigns/${campaignId}`);
    expect(await row.locator('progress').getAttribute('value')).toBe('2');
    expect(await row.locator('progress').getAttribute('max')).toBe('4');
    expect(await row.locator('small').textContent()).toBe('2 of 4');
    await screenshot(page, 'overview-with-mail');
    await context.close();
  });

  it('a campaign name holding markup shows as text, and its script never runs', async () => {
    const hostileId = await runningCampaign(HOSTILE, 'h');
    const { context, page } = await signedIn(browser, env.server, team.teamId);
    const dialogs = watchDialogs(page);
    await page.goto('/');
    const link = page.locator(`a[href="/campaigns/${hostileId}"]`);
    expect(await link.textContent()).toBe(HOSTILE);
    expect(await page.locator('main b').count()).toBe(0);
    expect(await page.locator('main script').count()).toBe(0);
    expect(dialogs).toEqual([]);
    await context.close();
  });

  it("a person of another team sees none of this team's mail or campaigns", async () => {
    const other = await env.server.team('Other');
    const { context, page } = await signedIn(browser, env.server, other.teamId);
    await page.goto('/');
    expect(await cardsUnder(page, 'Today')).toEqual({ Sent: '0', Delivered: '0', Bounced: '0', Complained: '0' });
    expect(await page.locator('table').count()).toBe(0);
    expect(await page.locator('.empty').textContent()).toContain('No campaign is sending right now');
    await context.close();
  });
});
