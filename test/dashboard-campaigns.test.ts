import { sql } from 'kysely';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReleaser } from '../src/campaigns/releaser.js';
import type { EmailStatus } from '../src/db/schema.js';
import { recordClick, recordOpen } from '../src/feedback/tracking.js';
import { screenshot, signedIn, type SignedIn } from './helpers/browser.js';
import { expectShownAsText, HOSTILE, postAs, submitted } from './helpers/dashboard-content.js';
import { dispatcherDone } from './helpers/emails.js';
import { expectOk, type TestServer } from './helpers/server.js';
import type { SmtpSink } from './helpers/smtp-sink.js';
import { startDashboardRig } from './helpers/dashboard-rig.js';
import { verifiedDomain } from './helpers/domains.js';
import { waitFor } from './helpers/wait.js';

let server: TestServer;
let sink: SmtpSink;
let key: string;
let teamId: number;
let from: string;
let stop: () => Promise<void>;
let browser: Browser;
let person: SignedIn;
let dialogs: string[];

beforeAll(async () => {
  ({ server, sink, key, teamId, from, browser, person, dialogs, stop } = await startDashboardRig({ domain: 'campaigns-ui.test', sender: 'News', env: { CAMPAIGN_POLL_MS: '20', SEND_RETRY_BASE_MS: '200' } }));
}, 30_000);
afterAll(() => stop?.());

const UNSUBSCRIBE = '<a href="{{unsubscribeUrl}}">Unsubscribe</a>';

const ok = (method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);

/** A book of `count` contacts, `tag`0@example.org and on, in that order of creation. */
async function bookOf(count: number, tag: string, name = `Book ${tag}`): Promise<string> {
  const book = await ok('POST', '/v1/contactBooks', { name });
  if (count > 0) await ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, Array.from({ length: count }, (_, i) => ({ email: `${tag}${i}@example.org`, firstName: `F${i}` })));
  return book.id;
}

const campaign = (id: string) => ok('GET', `/v1/campaigns/${id}`);
const sentCampaign = (id: string) => waitFor(`campaign ${id} SENT`, () => campaign(id), (c) => c.status === 'SENT');
const receivedBy = (address: RegExp) => sink.received.filter((message) => message.rcptTo.some((to) => address.test(to))).map((message) => message.rcptTo[0]!);

async function campaignEmails(campaignId: string) {
  const rows = await server.deps.db.selectFrom('emails').select(['id', 'to_addresses', 'status', 'send_at', 'claimed_by']).where('campaign_id', '=', campaignId).execute();
  return rows.map((row) => ({ ...row, to: (row.to_addresses as string[])[0]! }));
}

/** The chart's data as the page hands it to Chart.js. */
async function chartData(page: Page): Promise<{ labels: string[]; series: Record<string, number[]> }> {
  const spec = JSON.parse((await page.locator('script#campaign-chart').textContent())!);
  return { labels: spec.data.labels, series: Object.fromEntries(spec.data.datasets.map((set: { label: string; data: number[] }) => [set.label, set.data])) };
}

const chartDrawn = (page: Page) =>
  page.waitForFunction(() => {
    const chart = (window as unknown as { Chart?: { getChart(canvas: Element | null): unknown } }).Chart;
    return !!chart?.getChart(document.querySelector('canvas[data-chart]'));
  });

const fieldError = (page: Page, id: string) => page.locator(`.field:has(#f-${id}) .error`).textContent();

describe('dashboard: campaigns', () => {
  it('a person starts a campaign from a template in the browser, previews it, saves it as a draft and sends it; the API shows what the form said', async () => {
    const { page } = person;
    const template = await ok('POST', '/v1/templates', { name: 'Spring sale', subject: 'Spring is here, {{firstName,fallback=friend}}', html: `<h1>Spring</h1><p>Hi {{firstName}}</p>${UNSUBSCRIBE}` });
    const contactBookId = await bookOf(3, 'spring', 'Spring customers');

    await page.goto('/campaigns');
    expect(await page.locator('.empty').textContent()).toContain('No campaigns yet');
    await page.getByRole('link', { name: 'New campaign' }).click();
    await page.waitForURL(`${server.url}/campaigns/new`);
    await page.getByLabel('Template', { exact: true }).selectOption(template.id);
    await page.getByRole('button', { name: 'Use template' }).click();
    await page.waitForURL(/templateId=/);
    expect(await page.getByLabel('Subject').inputValue()).toBe(template.subject);
    expect(await page.getByLabel('HTML').inputValue()).toBe(template.html);

    await page.getByLabel('Name').fill('Spring launch');
    await page.getByLabel('From', { exact: true }).fill(from);
    await page.getByLabel('Contact book').selectOption(contactBookId);
    await page.getByLabel('Preview text').fill('Flowers inside');
    expect(await page.getByLabel('Contact book').locator('option:checked').textContent()).toContain('Spring customers (3 contacts)');

    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.frameLocator('iframe[name=preview]');
    await preview.locator('h1').waitFor();
    expect(await preview.locator('h1').textContent()).toBe('Spring');
    expect(page.url()).toMatch(/\/campaigns\/new\?templateId=/);
    await screenshot(page, 'campaign-new-preview');

    expect(await page.getByLabel('When to send').inputValue()).toBe('draft');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.waitForURL(/\/campaigns\/(?!new)[^/?]+$/);
    expect(await page.locator('.notice').textContent()).toBe('Campaign saved as a draft');
    const id = page.url().split('/').pop()!;
    expect(await campaign(id)).toMatchObject({
      name: 'Spring launch', subject: template.subject, html: template.html, previewText: 'Flowers inside', contactBookId,
      status: 'DRAFT', batchSize: 500, batchWindowMinutes: 0, scheduledAt: null,
    });
    expect((await campaign(id)).from).toContain('news@campaigns-ui.test');
    expect(await page.locator('.empty').textContent()).toContain('Nothing has been sent yet');

    await page.getByRole('button', { name: 'Send now' }).click();
    await page.waitForURL(`${server.url}/campaigns/${id}`);
    expect(dialogs.at(-1)).toBe('confirm: Send “Spring launch” to its contact book now?');
    expect(await page.locator('.notice').textContent()).toBe('Campaign scheduled to send now');
    await sentCampaign(id);
    expect(receivedBy(/^spring\d@/).sort()).toEqual(['spring0@example.org', 'spring1@example.org', 'spring2@example.org']);
    await page.reload();
    const card = (label: string) => page.locator('.card', { has: page.locator('.label', { hasText: new RegExp(`^${label}$`) }) }).locator('.value').textContent();
    expect(await card('Recipients')).toBe('3');
    expect(await card('Sent')).toBe('3');
    expect(await card('Delivered')).toBe('3');
    await chartDrawn(page);
    // One hour of sending has the empty hour before it (or, across an hour's turn, two of sending).
    const { labels, series } = await chartData(page);
    expect(labels).toHaveLength(2);
    expect(series.Sent![0]! + series.Sent![1]!).toBe(3);

    await page.goto('/campaigns?search=spring&status=SENT');
    expect(await page.locator('table tbody tr').count()).toBe(1);
    expect(await page.locator('table tbody tr a').textContent()).toBe('Spring launch');
    expect(await page.locator('table tbody tr progress').getAttribute('aria-label')).toBe('3 of 3 sent');
    await page.goto('/campaigns?search=spring&status=DRAFT');
    expect(await page.locator('.empty').textContent()).toContain('No campaign matches these filters');
  }, 60_000);

  it('a body without {{unsubscribeUrl}}, an unverified From and an unreadable time are each refused next to their field (400), and nothing is created', async () => {
    const { page } = person;
    const contactBookId = await bookOf(1, 'refused');
    const before = (await ok('GET', '/v1/campaigns')).campaigns.length;
    await page.goto('/campaigns/new');
    await page.getByLabel('Name').fill('No way out');
    await page.getByLabel('From', { exact: true }).fill('News <news@unverified.test>');
    await page.getByLabel('Contact book').selectOption(contactBookId);
    await page.getByLabel('Subject').fill('Hello');
    await page.getByLabel('HTML').fill('<p>There is no unsubscribe link here.</p>');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Create campaign' }).click())).toBe(400);
    expect(await fieldError(page, 'html')).toBe('must contain an unsubscribe link placeholder: {{unsubscribeUrl}}, {{usesend_unsubscribe_url}}, {{unsend_unsubscribe_url}}');
    expect(await fieldError(page, 'from')).toContain('unverified.test');
    // What the person typed is kept.
    expect(await page.getByLabel('HTML').inputValue()).toBe('<p>There is no unsubscribe link here.</p>');
    expect(await page.getByLabel('Contact book').inputValue()).toBe(contactBookId);
    await screenshot(page, 'campaign-new-errors');

    await page.getByLabel('From', { exact: true }).fill(from);
    await page.getByLabel('HTML').fill(`<p>Now with a way out.</p>${UNSUBSCRIBE}`);
    await page.getByLabel('When to send').selectOption('later');
    await page.getByLabel('Send at', { exact: true }).fill('whenever you like');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Create campaign' }).click())).toBe(400);
    expect(await fieldError(page, 'scheduledAt')).toContain('whenever you like');
    expect(await page.locator('.field.has-error').count()).toBe(1);
    expect(await page.getByLabel('When to send').inputValue()).toBe('later');

    await page.getByLabel('Send at', { exact: true }).fill('');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Create campaign' }).click())).toBe(400);
    expect(await fieldError(page, 'scheduledAt')).toBe('must not be empty');
    expect((await ok('GET', '/v1/campaigns')).campaigns.length).toBe(before);

    await page.getByLabel('Send at', { exact: true }).fill('tomorrow 9am');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.waitForURL(/\/campaigns\/(?!new)[^/?]+$/);
    expect(await page.locator('.notice').textContent()).toBe('Campaign scheduled');
    expect((await campaign(page.url().split('/').pop()!)).status).toBe('SCHEDULED');
  });

  it('the preview frame is sandboxed: scripts in the previewed HTML never run, and the preview answer forbids them', async () => {
    const { page } = person;
    await page.goto('/campaigns/new');
    expect(await page.locator('iframe[name=preview]').getAttribute('sandbox')).toBe('');
    await page.getByLabel('HTML').fill(
      `<p id="p">Preview me</p><script>document.getElementById('p').textContent = 'ran'; alert(1)</script><img src="data:," onerror="alert(2)">${UNSUBSCRIBE}`,
    );
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/campaigns/preview')), page.getByRole('button', { name: 'Preview' }).click()]);
    expect(answer.status()).toBe(200);
    expect(answer.headers()['content-security-policy']).toBe("sandbox; default-src 'none'; img-src data: https: http:; style-src 'unsafe-inline'; font-src data: https:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'");
    expect(answer.headers()['x-frame-options']).toBe('SAMEORIGIN');
    const frame = page.frameLocator('iframe[name=preview]');
    await frame.locator('#p').waitFor();
    await page.waitForTimeout(200);
    expect(await frame.locator('#p').textContent()).toBe('Preview me');
    expect(dialogs.filter((dialog) => dialog.startsWith('alert'))).toEqual([]);
  });

  it('a running campaign paused from its page is PAUSED and its remaining mail held; resumed, the held mail goes; deleted, it is gone', async () => {
    const { page } = person;
    const contactBookId = await bookOf(30, 'held');
    // The first batch's first five are deferred by the receiver, so they wait for a retry; the
    // hour between batches keeps the other twenty waiting to be released.
    sink.rule = { rcpt: (address) => (/^held[0-4]@/.test(address) ? { code: 451, message: '4.3.0 try later' } : null) };
    const created = await ok('POST', '/v1/campaigns', { name: 'Held', from, subject: 'Hi', contactBookId, html: `<p>Hi</p>${UNSUBSCRIBE}`, batchSize: 10, batchWindowMinutes: 60, sendNow: true });
    try {
      await waitFor('five delivered, five deferred', () => campaignEmails(created.id), (emails) => emails.filter((e) => e.status === 'DELIVERY_DELAYED').length === 5 && emails.filter((e) => e.status === 'DELIVERED').length === 5);
      await page.goto(`/campaigns/${created.id}`);
      expect(await page.locator('dl.facts .badge').textContent()).toBe('RUNNING');
      expect(await page.getByRole('button', { name: 'Resume' }).count()).toBe(0);
      await page.getByRole('button', { name: 'Pause' }).click();
      await page.waitForURL(`${server.url}/campaigns/${created.id}`);
      expect(await page.locator('.notice').textContent()).toContain('Campaign paused');
      expect(await page.locator('dl.facts .badge').textContent()).toBe('PAUSED');
      expect((await campaign(created.id)).status).toBe('PAUSED');
      await screenshot(page, 'campaign-paused');
    } finally {
      sink.rule = {};
    }
    // Held: the deferred mail has no send time, so no dispatcher takes it, and no batch is due even an hour on.
    const deferred = (await campaignEmails(created.id)).filter((e) => e.status === 'DELIVERY_DELAYED');
    expect(deferred).toHaveLength(5);
    await waitFor('the deferred mail held', () => campaignEmails(created.id), (emails) => emails.filter((e) => e.status === 'DELIVERY_DELAYED').every((e) => e.send_at === null && e.claimed_by === null));
    const releaser = startReleaser(server.deps, { now: () => new Date(Date.now() + 61 * 60_000), autostart: false });
    try {
      await releaser.tick();
    } finally {
      await releaser.stop();
    }
    await dispatcherDone(server, deferred.map((e) => e.id));
    expect(await campaignEmails(created.id)).toHaveLength(10);
    expect(receivedBy(/^held[0-4]@/)).toEqual([]);

    await page.getByRole('button', { name: 'Resume' }).click();
    await page.waitForURL(`${server.url}/campaigns/${created.id}`);
    expect(await page.locator('.notice').textContent()).toBe('Campaign resumed');
    expect((await campaign(created.id)).status).toBe('RUNNING');
    await waitFor('the held mail sent', async () => receivedBy(/^held[0-4]@/).length, (n) => n === 5);

    await page.getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(`${server.url}/campaigns`);
    expect(dialogs.at(-1)).toBe('confirm: Delete “Held”? Its mail not yet sent is cancelled.');
    expect(await page.locator('.notice').textContent()).toBe('Campaign “Held” deleted');
    expect((await server.call('GET', `/v1/campaigns/${created.id}`, { key })).status).toBe(404);
    expect((await page.goto(`/campaigns/${created.id}`))!.status()).toBe(404);
  }, 60_000);

  it('the chart counts the campaign’s emails per hour as the counters count them (each once per kind), and per day over a longer span', async () => {
    const { page } = person;
    const contactBookId = await bookOf(6, 'chart');
    sink.rule = { rcpt: (address) => (address === 'chart5@example.org' ? { code: 550, message: '5.1.1 no such user' } : null) };
    let created: { id: string };
    try {
      created = await ok('POST', '/v1/campaigns', { name: 'Charted', from, subject: 'Hi', contactBookId, html: `<p>Hi</p>${UNSUBSCRIBE}`, sendNow: true });
      await sentCampaign(created.id);
    } finally {
      sink.rule = {};
    }
    const ids = Object.fromEntries((await campaignEmails(created.id)).map((e) => [e.to.split('@')[0]!, e.id]));
    const reader = { userAgent: 'test', ip: '127.0.0.1' };
    for (const who of ['chart0', 'chart1', 'chart2']) await recordOpen(server.deps, ids[who]!, reader);
    await recordClick(server.deps, ids.chart0!, 'https://example.org/a', reader);
    await recordClick(server.deps, ids.chart0!, 'https://example.org/b', reader);

    // The events are moved to known hours of a day six days ago (10:10 UTC and on).
    const day = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() - 6, 10, 10));
    const at = (hours: number) => new Date(day.getTime() + hours * 3_600_000);
    const move = async (email: string, status: EmailStatus, when: Date, url?: string) => {
      let query = server.deps.db.updateTable('email_events').set({ created_at: when }).where('email_id', '=', email).where('status', '=', status);
      if (url) query = query.where(sql`data->>'url'`, '=', url);
      await query.execute();
    };
    for (const id of Object.values(ids)) for (const status of ['SENT', 'DELIVERED', 'BOUNCED'] as const) await move(id, status, at(0));
    await move(ids.chart0!, 'OPENED', at(1));
    await move(ids.chart1!, 'OPENED', at(1));
    await move(ids.chart2!, 'OPENED', at(2));
    await move(ids.chart0!, 'CLICKED', at(1), 'https://example.org/a');
    await move(ids.chart0!, 'CLICKED', at(3), 'https://example.org/b');

    await page.goto(`/campaigns/${created!.id}`);
    await chartDrawn(page);
    const date = day.toISOString().slice(0, 10);
    const hourly = await chartData(page);
    // The second click (13:10) is not counted again, so the chart ends at the last hour that counted.
    expect(hourly.labels).toEqual([`${date} 10:00`, `${date} 11:00`, `${date} 12:00`]);
    expect(hourly.series).toEqual({
      Sent: [5, 0, 0], Delivered: [5, 0, 0], Opened: [0, 2, 1], Clicked: [0, 1, 0],
      Bounced: [1, 0, 0], 'Hard bounced': [1, 0, 0], Complained: [0, 0, 0],
    });
    expect(await campaign(created!.id)).toMatchObject({ total: 6, sent: 5, delivered: 5, opened: 3, clicked: 1, bounced: 1, hardBounced: 1 });
    await screenshot(page, 'campaign-chart');

    await move(ids.chart2!, 'OPENED', at(5 * 24));
    await page.reload();
    const daily = await chartData(page);
    expect(daily.labels).toEqual([0, 1, 2, 3, 4, 5].map((n) => at(n * 24).toISOString().slice(0, 10)));
    expect(daily.series.Opened).toEqual([2, 0, 0, 0, 0, 1]);
    expect(daily.series.Sent).toEqual([5, 0, 0, 0, 0, 0]);
    expect(await page.locator('.chart + script + .hint').textContent()).toContain('per day');
  }, 60_000);

  it('names, subjects and reasons holding markup show as text on every campaigns page, and none of their script runs', async () => {
    const { page } = person;
    const contactBookId = await bookOf(0, 'hostile', HOSTILE);
    await ok('POST', '/v1/templates', { name: HOSTILE, subject: HOSTILE, html: `<p>${HOSTILE}</p>${UNSUBSCRIBE}` });
    const created = await ok('POST', '/v1/campaigns', { name: HOSTILE, from, subject: HOSTILE, previewText: HOSTILE, contactBookId, html: `<p>${HOSTILE}</p>${UNSUBSCRIBE}` });
    await server.deps.db.updateTable('campaigns').set({ status: 'PAUSED', paused_reason: HOSTILE }).where('id', '=', created.id).execute();
    for (const path of [`/campaigns?search=${encodeURIComponent('<script>')}`, `/campaigns/${created.id}`]) {
      await page.goto(path);
      await expectShownAsText(page, HOSTILE, dialogs);
    }
    expect(await page.locator('.form-error').textContent()).toBe(`Paused by the reputation guard: ${HOSTILE}`);
    await page.goto(`/campaigns?search=${encodeURIComponent('<b>x</b>')}`);
    expect(await page.getByLabel('Search').inputValue()).toBe('<b>x</b>');
    await expectShownAsText(page, HOSTILE, dialogs);
    await page.goto('/campaigns/new');
    expect(await page.getByLabel('Template', { exact: true }).locator('option', { hasText: HOSTILE }).count()).toBe(1);
    expect(await page.getByLabel('Contact book').locator('option', { hasText: HOSTILE }).count()).toBe(1);
    expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);
    expect(dialogs.filter((dialog) => dialog.startsWith('alert'))).toEqual([]);
  });

  it('a person of another team sees none of this team’s campaigns, gets 404 for their URLs and actions, and changes nothing', async () => {
    const contactBookId = await bookOf(0, 'private');
    const template = await ok('POST', '/v1/templates', { name: 'Private template', subject: 'Private subject', html: `<p>private body</p>${UNSUBSCRIBE}` });
    const later = new Date(Date.now() + 86_400_000).toISOString();
    const created = await ok('POST', '/v1/campaigns', { name: 'Private campaign', from, subject: 'Private subject', contactBookId, html: `<p>private body</p>${UNSUBSCRIBE}`, scheduledAt: later });
    const otherTeam = await server.team('Other team');
    const otherDomain = await verifiedDomain(server, otherTeam.apiKey, 'other-team.test');
    const other = await signedIn(browser, server, otherTeam.teamId);
    try {
      await other.page.goto('/campaigns');
      expect(await other.page.locator('.empty').textContent()).toContain('No campaigns yet');
      for (const path of [`/campaigns/${created.id}`, `/campaigns/${created.id}/body`]) {
        const response = await other.page.goto(path);
        expect(response!.status(), path).toBe(404);
        expect(await other.page.content()).not.toContain('private body');
      }
      const picked = await other.page.goto(`/campaigns/new?templateId=${template.id}`);
      expect(picked!.status()).toBe(404);
      expect(await fieldError(other.page, 'templateId')).toBe('No such template in this team');
      expect(await other.page.getByLabel('Subject').inputValue()).toBe('');
      expect(await other.page.getByLabel('Contact book').locator('option').allTextContents()).toEqual(['Choose a contact book']);

      for (const action of ['pause', 'resume', 'send', 'delete']) {
        const response = await postAs(other, `/campaigns/${created.id}/${action}`);
        expect(response.status(), action).toBe(404);
      }
      expect(await campaign(created.id)).toMatchObject({ status: 'SCHEDULED', name: 'Private campaign', scheduledAt: later });

      // This team's book is not one the other team can mail, even from a domain of its own.
      const stolen = await postAs(other, '/campaigns/new', { name: 'Stolen', from: `news@${otherDomain.name}`, subject: 'x', contactBookId, html: `<p>x</p>${UNSUBSCRIBE}`, when: 'now' });
      expect(stolen.status()).toBe(400);
      expect(await stolen.text()).toContain(`contact book ${contactBookId} not found in this team`);
      expect(await stolen.text()).not.toContain('Book private');
      const theirs = await other.context.request.get('/campaigns');
      expect(await theirs.text()).toContain('No campaigns yet');
    } finally {
      await other.context.close();
    }
  });

  it('the campaigns pages read well at 1280px and at phone width', async () => {
    await person.page.goto('/campaigns');
    expect(await person.page.locator('table tbody tr').count()).toBeGreaterThanOrEqual(4);
    await screenshot(person.page, 'campaigns-list');
    const phone = await signedIn(browser, server, teamId, { viewport: { width: 390, height: 844 } });
    try {
      const charted = (await ok('GET', '/v1/campaigns?search=Charted')).campaigns[0];
      await phone.page.goto(`/campaigns/${charted.id}`);
      await chartDrawn(phone.page);
      await screenshot(phone.page, 'campaign-phone');
      await phone.page.goto('/campaigns');
      await screenshot(phone.page, 'campaigns-list-phone');
      // Nothing but the table scrolls sideways.
      expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    } finally {
      await phone.context.close();
    }
  });
});
