import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenshot, signedIn, watchDialogs, type SignedIn } from './helpers/browser.js';
import { expectShownAsText, HOSTILE, postAs, submitted } from './helpers/dashboard-content.js';
import { expectOk, type TestServer } from './helpers/server.js';
import type { SmtpSink } from './helpers/smtp-sink.js';
import { startDashboardRig } from './helpers/dashboard-rig.js';
import { waitFor } from './helpers/wait.js';

/**
 * The segment pages under a contact book, in a browser: the filter builder (segments.js) and its
 * live count, the JSON fallback without the script, the contacts a segment matches, and a campaign
 * sent to a segment from the campaign form, through an SMTP sink.
 */

let server: TestServer;
let sink: SmtpSink;
let key: string;
let teamId: number;
let from: string;
let stop: () => Promise<void>;
let browser: Browser;
let person: SignedIn;
let dialogs: string[];
let bookId: string;

const UNSUBSCRIBE = '<a href="{{unsubscribeUrl}}">Unsubscribe</a>';
// Oldest first. Cat is unsubscribed; Dan's address is not at vip.test; Eve has no plan.
const READERS = [
  { email: 'ann@vip.test', firstName: 'Ann', properties: { plan: 'gold' } },
  { email: 'bob@vip.test', firstName: 'Bob', properties: { plan: 'silver' } },
  { email: 'cat@vip.test', firstName: 'Cat', properties: { plan: 'gold' }, subscribed: false },
  { email: 'dan@other.test', firstName: 'Dan', properties: { plan: 'gold' } },
  { email: 'eve@vip.test', firstName: 'Eve' },
];
// What the builder test makes: vip.test addresses, on the gold plan or named Eve.
const VIP_GOLD = {
  all: [
    { field: 'email', op: 'endsWith', value: '@vip.test' },
    { any: [{ field: 'properties.plan', op: 'eq', value: 'gold' }, { field: 'firstName', op: 'eq', value: 'eve' }] },
  ],
};

const ok = (method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);
const segmentsOf = async (book: string) => (await ok('GET', `/v1/contactBooks/${book}/segments`)).data as { id: string; name: string; filter: unknown; count: number }[];
const liveCount = (page: Page, text: string) => page.locator('[data-live-count]', { hasText: text }).waitFor();
const conditions = (page: Page) => page.locator('.filter-builder .filter-condition');
const heading = (page: Page) => page.getByRole('heading', { level: 1 }).textContent();
const noSidewaysScroll = async (page: Page) => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

async function book(name: string, contacts: object[]): Promise<string> {
  const created = await ok('POST', '/v1/contactBooks', { name });
  if (contacts.length > 0) await ok('POST', `/v1/contactBooks/${created.id}/contacts/bulk`, contacts);
  return created.id;
}

/** Sets one condition row of the builder: its field (and property name), op and value. */
async function setCondition(row: Locator, condition: { field: string; property?: string; op: string; value?: string }) {
  await row.getByLabel('Field').selectOption({ label: condition.field });
  if (condition.property !== undefined) await row.getByLabel('Property name').fill(condition.property);
  await row.getByLabel('Operator').selectOption({ label: condition.op });
  if (condition.value !== undefined) await row.getByLabel('Value').fill(condition.value);
}

beforeAll(async () => {
  ({ server, sink, key, teamId, from, browser, person, dialogs, stop } = await startDashboardRig({ domain: 'segments-ui.test', sender: 'News', env: { CAMPAIGN_POLL_MS: '20' } }));
  bookId = await book('Readers', READERS);
}, 60_000);
afterAll(() => stop?.());

describe('dashboard: segments', () => {
  it('a person builds a segment with the filter builder, sees its count as it changes, saves it, and sees the contacts it matches', async () => {
    const { page } = person;
    await page.goto(`/contacts/${bookId}`);
    await page.getByRole('link', { name: 'Segments' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}/segments`);
    expect(await page.locator('.empty').textContent()).toContain('No segments yet');
    await page.getByRole('link', { name: 'New segment' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}/segments/new`);

    // A new segment starts as the subscribed contacts, counted at once.
    expect(await conditions(page).count()).toBe(1);
    await liveCount(page, '4 of 5 contacts match now');

    await setCondition(conditions(page).first(), { field: 'Email', op: 'ends with', value: '@vip.test' });
    await liveCount(page, '4 of 5 contacts match now');
    await page.getByRole('button', { name: 'Add group' }).click();
    const group = page.locator('.filter-builder .filter-group .filter-group');
    await group.getByLabel('Match').selectOption('any');
    await setCondition(group.locator('.filter-condition').first(), { field: 'Property…', property: 'plan', op: 'is', value: 'Gold' });
    await liveCount(page, '2 of 5 contacts match now');
    await group.getByRole('button', { name: 'Add condition' }).click();
    await setCondition(group.locator('.filter-condition').nth(1), { field: 'First name', op: 'is', value: 'eve' });
    await liveCount(page, '3 of 5 contacts match now');
    await screenshot(page, 'segment-builder');

    // The builder writes the JSON the form sends.
    await page.getByText('Filter as JSON').click();
    expect(JSON.parse(await page.getByLabel('Filter', { exact: true }).inputValue())).toEqual({
      all: [
        { field: 'email', op: 'endsWith', value: '@vip.test' },
        { any: [{ field: 'properties.plan', op: 'eq', value: 'Gold' }, { field: 'firstName', op: 'eq', value: 'eve' }] },
      ],
    });

    await page.getByLabel('Name', { exact: true }).fill('VIP gold');
    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.waitForURL(/\/segments\/(?!new)[^/]+$/);
    expect(await page.getByRole('status').textContent()).toBe('Segment “VIP gold” saved: 3 of 5 contacts match now');
    expect(await heading(page)).toBe('VIP gold');
    expect(await page.locator('.card .value').textContent()).toBe('3');
    expect(await page.locator('tbody tr td:first-child a').allTextContents()).toEqual(['ann@vip.test', 'cat@vip.test', 'eve@vip.test']);
    expect(await page.locator('.filter-words').first().textContent()).toBe('All of:Email ends with “@vip.test”Any of:Property “plan” is “Gold”First name is “eve”');
    const [saved] = await segmentsOf(bookId);
    expect(saved).toMatchObject({ name: 'VIP gold', count: 3 });

    // The edit page shows the saved filter in the builder, and saves a change to it.
    await page.getByRole('link', { name: 'Edit' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}/segments/${saved!.id}/edit`);
    await liveCount(page, '3 of 5 contacts match now');
    expect(await conditions(page).count()).toBe(3);
    await page.locator('.filter-builder .filter-group .filter-group .filter-condition').first().getByLabel('Value').fill('gold');
    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}/segments/${saved!.id}`);
    expect((await segmentsOf(bookId))[0]!.filter).toEqual(VIP_GOLD);

    await page.getByRole('link', { name: /← Segments of/ }).click();
    const row = page.locator('tbody tr', { has: page.getByRole('link', { name: 'VIP gold' }) });
    expect(await row.locator('.segment-count').textContent()).toBe('3');
    expect(dialogs).toEqual([]);
  });

  it('a mistake in a filter is shown at its path (filter.all[2].op), in the builder and beside the form, and nothing is saved', async () => {
    const { page } = person;
    const before = (await segmentsOf(bookId)).length;
    await page.goto(`/contacts/${bookId}/segments/new`);
    await liveCount(page, 'match now');

    // Made in the builder: an empty value, named where it is as the count runs.
    await page.getByRole('button', { name: 'Add condition' }).first().click();
    await liveCount(page, 'Not counted: the filter has a mistake, shown above');
    expect(await conditions(page).nth(1).locator('.builder-error').textContent()).toBe('filter.all[1].value must not be empty');
    expect(await conditions(page).nth(1).getByLabel('Value').getAttribute('aria-invalid')).toBe('true');

    // Typed as JSON: an op the field does not take, and one the language does not have.
    await page.getByText('Filter as JSON').click();
    await page.getByLabel('Filter', { exact: true }).fill(
      JSON.stringify({ all: [{ field: 'email', op: 'contains', value: 'a' }, { field: 'createdAt', op: 'eq', value: '30 days ago' }, { field: 'email', op: 'like', value: 'x' }] }),
    );
    await page.getByLabel('Name', { exact: true }).fill('Broken');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Save segment' }).click())).toBe(400);
    const listed = await page.locator('.filter-errors li').allTextContents();
    expect(listed).toContain('filter.all[1].op must be one of: gt, gte, lt, lte for createdAt');
    expect(listed.some((error) => error.startsWith('filter.all[2].op '))).toBe(true);
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('Broken');
    expect(JSON.parse(await page.getByLabel('Filter', { exact: true }).inputValue()).all[2].op).toBe('like');
    await screenshot(page, 'segment-errors');

    // Not JSON at all.
    await page.getByLabel('Filter', { exact: true }).fill('{"all": [');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Save segment' }).click())).toBe(400);
    expect(await page.locator('.filter-errors li').first().textContent()).toMatch(/^filter must be JSON: /);
    expect((await segmentsOf(bookId)).length).toBe(before);
  });

  it('without JavaScript the filter is typed as JSON, counted without being saved, then saved', async () => {
    const context = await browser.newContext({ baseURL: server.url, javaScriptEnabled: false, storageState: await person.context.storageState() });
    const page = await context.newPage();
    const before = (await segmentsOf(bookId)).length;
    await page.goto(`/contacts/${bookId}/segments/new`);
    expect(await page.locator('.filter-builder').isVisible()).toBe(false);
    await page.getByLabel('Name', { exact: true }).fill('Silver');
    await page.getByLabel('Filter').fill(JSON.stringify({ any: [{ field: 'properties.plan', op: 'in', value: ['silver', 'bronze'] }] }));
    expect(await submitted(page, () => page.getByRole('button', { name: 'Count matches' }).click())).toBe(200);
    expect(await page.locator('[data-live-count]').textContent()).toBe('1 of 5 contacts match now');
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('Silver');
    expect((await segmentsOf(bookId)).length).toBe(before);

    await page.getByLabel('Filter').fill('{"any": [{"field": "email", "op": "gt", "value": "soon"}]}');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Count matches' }).click())).toBe(400);
    expect(await page.locator('.filter-errors li').first().textContent()).toBe('filter.any[0].op must be one of: eq, neq, in, contains, startsWith, endsWith, exists, notExists for email');

    await page.getByLabel('Filter').fill(JSON.stringify({ any: [{ field: 'properties.plan', op: 'in', value: ['silver', 'bronze'] }] }));
    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.waitForURL(/\/segments\/(?!new)[^/]+$/);
    expect(await page.locator('tbody tr td:first-child a').allTextContents()).toEqual(['bob@vip.test']);
    expect((await segmentsOf(bookId)).length).toBe(before + 1);
    await context.close();
  });

  it('a segment’s contacts page 50 at a time, each matching contact on exactly one page', async () => {
    const paged = await book('Many', Array.from({ length: 60 }, (_, i) => ({ email: `m${String(i).padStart(2, '0')}@${i % 10 === 9 ? 'elsewhere' : 'many'}.test` })));
    const segment = await ok('POST', `/v1/contactBooks/${paged}/segments`, { name: 'Many', filter: { all: [{ field: 'email', op: 'endsWith', value: '@many.test' }] } });
    const { page } = person;
    await page.goto(`/contacts/${paged}/segments/${segment.id}`);
    expect(await page.locator('[data-summary]').textContent()).toBe('Showing 1–50 of 54');
    const first = await page.locator('tbody tr td:first-child a').allTextContents();
    expect(first).toHaveLength(50);
    await page.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL(/page=2/);
    expect(await page.locator('[data-summary]').textContent()).toBe('Showing 51–54 of 54');
    const second = await page.locator('tbody tr td:first-child a').allTextContents();
    expect(await page.getByRole('link', { name: 'Next →' }).count()).toBe(0);
    const matching = Array.from({ length: 60 }, (_, i) => `m${String(i).padStart(2, '0')}@many.test`).filter((_, i) => i % 10 !== 9);
    expect([...first, ...second].sort()).toEqual(matching);
  });

  it('a campaign sent from the campaign form to a segment reaches only the subscribed contacts the segment matches', async () => {
    const { page } = person;
    const other = await book('Other book', [{ email: 'zed@vip.test' }]);
    await ok('POST', `/v1/contactBooks/${other}/segments`, { name: 'Other segment', filter: { all: [{ field: 'subscribed', op: 'eq', value: true }] } });
    const segment = (await segmentsOf(bookId)).find((s) => s.name === 'VIP gold')!;
    await page.goto(`/contacts/${bookId}/segments/${segment.id}`);
    await page.getByRole('link', { name: 'Send a campaign' }).click();
    await page.waitForURL(/\/campaigns\/new\?/);
    expect(await page.getByLabel('Contact book').inputValue()).toBe(bookId);
    expect(await page.getByLabel('Segment').inputValue()).toBe(segment.id);

    // Only the chosen book's segments can be picked.
    const offered = () =>
      page.$$eval('#f-segmentId option', (options) => options.filter((option) => !(option.parentElement as HTMLOptGroupElement).disabled).map((option) => option.textContent));
    expect(await offered()).toEqual(['The whole book', 'VIP gold', 'Silver']);
    await page.getByLabel('Contact book').selectOption(other);
    expect(await page.getByLabel('Segment').inputValue()).toBe('');
    expect(await offered()).toEqual(['The whole book', 'Other segment']);
    await page.getByLabel('Contact book').selectOption(bookId);
    await page.getByLabel('Segment').selectOption({ label: 'VIP gold' });
    await screenshot(page, 'campaign-new-segment');

    await page.getByLabel('Name', { exact: true }).fill('Gold news');
    await page.getByLabel('From', { exact: true }).fill(from);
    await page.getByLabel('Subject').fill('For our gold readers');
    await page.getByLabel('HTML').fill(`<p>Hello</p>${UNSUBSCRIBE}`);
    await page.getByLabel('When to send').selectOption('now');
    await page.getByRole('button', { name: 'Create campaign' }).click();
    await page.waitForURL(/\/campaigns\/(?!new)[^/?]+$/);
    const id = page.url().split('/').pop()!;
    expect(await page.locator('dl.facts dt:text-is("Segment") + dd a').textContent()).toBe('VIP gold');
    expect((await ok('GET', `/v1/campaigns/${id}`)).segmentId).toBe(segment.id);
    await waitFor('the campaign sent', () => ok('GET', `/v1/campaigns/${id}`), (c) => c.status === 'SENT');
    expect(sink.received.flatMap((message) => message.rcptTo).sort()).toEqual(['ann@vip.test', 'eve@vip.test']);

    // A segment of another book is refused next to its field, and nothing is created.
    const before = (await ok('GET', '/v1/campaigns')).campaigns.length;
    await page.goto('/campaigns/new');
    await page.getByLabel('Name', { exact: true }).fill('Mixed up');
    await page.getByLabel('From', { exact: true }).fill(from);
    await page.getByLabel('Subject').fill('Hi');
    await page.getByLabel('HTML').fill(`<p>Hi</p>${UNSUBSCRIBE}`);
    await page.getByLabel('Contact book').selectOption(other);
    await page.evaluate((segmentId) => {
      const picker = document.querySelector<HTMLSelectElement>('#f-segmentId')!;
      picker.querySelectorAll('optgroup').forEach((group) => (group.disabled = false));
      picker.value = segmentId;
    }, segment.id);
    expect(await submitted(page, () => page.getByRole('button', { name: 'Create campaign' }).click())).toBe(400);
    expect(await page.locator('.field:has(#f-segmentId) .error').textContent()).toBe(`segment ${segment.id} not found in contact book ${other}`);
    expect((await ok('GET', '/v1/campaigns')).campaigns.length).toBe(before);
  }, 60_000);

  it('deleting a segment asks first and keeps the contacts; one a campaign not yet sent goes to is kept, saying which', async () => {
    const { page } = person;
    const used = await ok('POST', `/v1/contactBooks/${bookId}/segments`, { name: 'Drafted', filter: { all: [{ field: 'firstName', op: 'eq', value: 'ann' }] } });
    const draft = await ok('POST', '/v1/campaigns', { name: 'Draft to it', from, subject: 'Hi', contactBookId: bookId, segmentId: used.id, html: `<p>Hi</p>${UNSUBSCRIBE}` });
    await page.goto(`/contacts/${bookId}/segments`);
    const rowOf = (name: string) => page.locator('tbody tr', { has: page.getByRole('link', { name, exact: true }) });
    const seen = dialogs.length;
    expect(await submitted(page, () => rowOf('Drafted').getByRole('button', { name: 'Delete' }).click())).toBe(409);
    expect(dialogs.slice(seen)).toEqual(['confirm: Delete the segment “Drafted”? Its contacts stay in the book.']);
    expect(await page.getByRole('alert').textContent()).toContain(`used by campaign ${draft.id}`);
    expect((await segmentsOf(bookId)).some((s) => s.id === used.id)).toBe(true);

    await page.goto(`/contacts/${bookId}/segments`);
    await rowOf('Silver').getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}/segments`);
    expect(await page.getByRole('status').textContent()).toBe('Segment deleted');
    expect((await segmentsOf(bookId)).map((s) => s.name)).not.toContain('Silver');
    expect((await ok('GET', `/v1/contactBooks/${bookId}`))._count.contacts).toBe(READERS.length);
    dialogs.splice(seen);
  });

  it('a person of another team gets 404 for the segment pages and actions, sees none of the segments, and changes nothing', async () => {
    const [segment] = await segmentsOf(bookId);
    const before = await segmentsOf(bookId);
    const otherTeam = await server.team('Other team');
    const other = await signedIn(browser, server, otherTeam.teamId);
    const otherDialogs = watchDialogs(other.page);
    const base = `/contacts/${bookId}/segments`;
    for (const path of [base, `${base}/new`, `${base}/${segment!.id}`, `${base}/${segment!.id}/edit`]) {
      const response = await other.page.goto(path);
      expect(response!.status(), path).toBe(404);
      expect(await heading(other.page)).toBe('Not found');
      expect(await other.page.content()).not.toContain(segment!.name);
    }
    await other.page.goto('/contacts');
    const filter = JSON.stringify({ all: [{ field: 'email', op: 'exists' }] });
    for (const [path, form] of [
      [`${base}/new`, { name: 'Mine now', filter }],
      [`${base}/count`, { filter }],
      [`${base}/${segment!.id}/edit`, { name: 'Renamed', filter }],
      [`${base}/${segment!.id}/delete`, {}],
    ] as const) {
      const response = await postAs(other, path, form);
      expect(response.status(), path).toBe(404);
      expect(await response.text()).not.toContain('vip.test');
    }
    expect(await segmentsOf(bookId)).toEqual(before);
    await other.page.goto('/campaigns/new');
    expect(await other.page.getByLabel('Segment').locator('option').allTextContents()).toEqual(['The whole book']);
    expect(otherDialogs).toEqual([]);
    await other.context.close();
  });

  it('markup in a segment’s name shows as text on every page that names it, and none of its script runs', async () => {
    const { page } = person;
    const hostile = await ok('POST', `/v1/contactBooks/${bookId}/segments`, { name: HOSTILE, filter: { all: [{ field: 'email', op: 'contains', value: HOSTILE }] } });
    const sent = await ok('POST', '/v1/campaigns', { name: 'To the hostile one', from, subject: 'Hi', contactBookId: bookId, segmentId: hostile.id, html: `<p>Hi</p>${UNSUBSCRIBE}` });
    const base = `/contacts/${bookId}/segments`;
    for (const path of [base, `${base}/${hostile.id}`, `/campaigns/${sent.id}`]) {
      await page.goto(path);
      await expectShownAsText(page, HOSTILE, dialogs);
    }
    await page.goto(`${base}/${hostile.id}/edit`);
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe(HOSTILE);
    await liveCount(page, 'match now');
    expect(await conditions(page).first().getByLabel('Value').inputValue()).toBe(HOSTILE);
    await page.goto('/campaigns/new');
    expect(await page.getByLabel('Segment').locator('option', { hasText: HOSTILE }).count()).toBe(1);
    expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);
    expect(dialogs.filter((dialog) => dialog.startsWith('alert'))).toEqual([]);
    await ok('DELETE', `/v1/campaigns/${sent.id}`);
  });

  it('at phone width the segment list, a segment and its builder do not scroll sideways', async () => {
    const segment = await ok('POST', `/v1/contactBooks/${bookId}/segments`, { name: 'A segment with a rather long name for a phone', filter: VIP_GOLD });
    const { context, page } = await signedIn(browser, server, teamId, { viewport: { width: 390, height: 844 } });
    await page.goto(`/contacts/${bookId}/segments`);
    await screenshot(page, 'segments-phone');
    await noSidewaysScroll(page);
    await page.goto(`/contacts/${bookId}/segments/${segment.id}`);
    await screenshot(page, 'segment-phone');
    await noSidewaysScroll(page);
    await page.goto(`/contacts/${bookId}/segments/${segment.id}/edit`);
    await liveCount(page, 'match now');
    // Nested as deep as the language allows, with an engagement condition at the bottom.
    const deepest = page.locator('.filter-group').last();
    while ((await deepest.getByRole('button', { name: 'Add group' }).count()) > 0) await deepest.getByRole('button', { name: 'Add group' }).click();
    expect(await page.locator('.filter-group '.repeat(5).trim()).count()).toBe(1);
    await deepest.getByRole('button', { name: 'Add engagement' }).click();
    await screenshot(page, 'segment-builder-phone');
    await noSidewaysScroll(page);
    await context.close();
  });
});
