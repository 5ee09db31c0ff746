import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenshot, signedIn } from './helpers/browser.js';
import { expectShownAsText, HOSTILE, postAs, submitted } from './helpers/dashboard-content.js';
import { expectOk } from './helpers/server.js';
import { startDashboardRig, type DashboardRig } from './helpers/dashboard-rig.js';
import { waitFor } from './helpers/wait.js';

/**
 * The Automations pages in a browser: building an automation's steps (a send with its template
 * picked, a wait, a condition made with the segment filter builder, its branches), its status
 * moves, the counters of each step, and a contact's run with its history, its mail through an SMTP
 * sink; the same steps as plain form posts without JavaScript; the service's 400s on the page.
 */

let rig: DashboardRig;
let welcome: { id: string; name: string };

type Step = { id: string; type: string; then?: Step[]; else?: Step[]; [key: string]: unknown };

const ok = (method: string, path: string, body?: unknown) => expectOk(rig.server, rig.key, method, path, body);
const automation = (id: string) => ok('GET', `/v1/automations/${id}`);
const runsOf = async (id: string) => (await ok('GET', `/v1/automations/${id}/runs?limit=100`)).data as any[];
const heading = (page: Page) => page.getByRole('heading', { level: 1 }).textContent();
const stepItem = (page: Page, stepId: string) => page.locator(`li.step[data-step="${stepId}"]`);
const counter = (page: Page, stepId: string, name: string) => stepItem(page, stepId).locator(`> .step-counters [data-counter=${name}]`).textContent();
const ids = (steps: Step[]): string[] => steps.flatMap((step) => [step.id, ...ids(step.then ?? []), ...ids(step.else ?? [])]);
/** Waits for the automation's page again, after a change there (at its steps, for a change of them). */
const backOn = (page: Page, id: string) => page.waitForURL(new RegExp(`/automations/${id}(#steps)?$`));
const noSidewaysScroll = async (page: Page) => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

async function book(name: string): Promise<string> {
  return (await ok('POST', '/v1/contactBooks', { name })).id;
}

/** An automation made through the API, for the tests about its other pages. */
async function made(name: string, steps: object[], status = 'ACTIVE') {
  return ok('POST', '/v1/automations', { name, status, trigger: { type: 'contact.added', contactBookId: await book(`${name} book`) }, steps });
}

/** Picks a step type and a place on the automation's page and opens the new step's form. */
async function openNewStep(page: Page, type: string, where = 'at the end') {
  await page.getByLabel('Step', { exact: true }).selectOption({ label: type });
  await page.getByLabel('Where').selectOption({ label: where });
  await page.getByRole('button', { name: 'Add a step' }).click();
  await page.waitForURL(/\/steps\/new\?/);
}

beforeAll(async () => {
  rig = await startDashboardRig({ domain: 'automations-ui.test', sender: 'Hello', env: { AUTOMATION_POLL_MS: '20' } });
  welcome = await ok('POST', '/v1/templates', { name: 'Welcome', subject: 'Welcome, {{firstName,fallback=friend}}', html: '<p>Welcome</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>' });
  await ok('POST', '/v1/templates', { name: 'Another template', subject: 'Other', html: '<p>Other</p>' });
}, 60_000);
afterAll(() => rig?.stop());

describe('dashboard: automations', () => {
  it('a person builds an automation (a send with its template picked, a wait, a condition with branches), activates it, and sees a new contact’s run, its history and each step’s counters', async () => {
    const { page } = rig.person;
    const bookId = await book('Newcomers');
    await page.goto('/');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Automations' }).click();
    await page.waitForURL(`${rig.server.url}/automations`);
    expect(await page.locator('.empty').textContent()).toContain('No automations yet');

    await page.getByRole('link', { name: 'New automation' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Welcome series');
    await page.getByLabel('Contact book').selectOption(bookId);
    expect(await page.getByLabel('Trigger').inputValue()).toBe('contact.added');
    await page.getByRole('button', { name: 'Create automation' }).click();
    await page.waitForURL(/\/automations\/(?!new)[^/]+$/);
    expect(await page.getByRole('status').textContent()).toBe('Automation “Welcome series” created as a draft');
    const id = page.url().split('/').pop()!;
    const [wait] = (await automation(id)).steps as Step[];
    expect(wait).toMatchObject({ type: 'wait', duration: '1 day' });

    // A send step: its template picked from the team's.
    await openNewStep(page, 'Send an email');
    expect(await page.getByLabel('Template').locator('option').allTextContents()).toEqual(['Choose a template', 'Another template', 'Welcome']);
    await page.getByLabel('Template').selectOption({ label: 'Welcome' });
    await page.getByLabel('From', { exact: true }).fill(rig.from);
    await page.getByRole('button', { name: 'Add step' }).click();
    await backOn(page, id);
    expect(await page.getByRole('status').textContent()).toBe('Send an email step added');
    const send = ((await automation(id)).steps as Step[])[1]!;
    expect(send).toMatchObject({ type: 'send', templateId: welcome.id, from: rig.from });

    // First the welcome, then the wait.
    await stepItem(page, send.id).getByRole('button', { name: 'Move up' }).click();
    await backOn(page, id);
    expect(ids((await automation(id)).steps)).toEqual([send.id, wait!.id]);

    // A condition made with the segment filter builder: opened the welcome this run.
    await openNewStep(page, 'Condition');
    await page.locator('[data-live-count]', { hasText: 'match now' }).waitFor();
    await page.getByRole('button', { name: 'Add engagement' }).click();
    const engagement = page.locator('.filter-builder .filter-engagement');
    await engagement.getByLabel('Send step').selectOption({ label: `“Welcome” (${send.id})` });
    await page.locator('[data-live-count]', { hasText: 'Not counted now' }).waitFor();
    await screenshot(page, 'automation-condition');
    await page.getByRole('button', { name: 'Add step' }).click();
    await backOn(page, id);
    const condition = ((await automation(id)).steps as Step[])[2]!;
    expect(condition).toMatchObject({
      type: 'condition',
      filter: { all: [{ field: 'subscribed', op: 'eq', value: true }, { event: 'opened', within: '30 days', step: send.id }] },
      then: [],
      else: [],
    });

    // Its branches: a property set when it matches, the end otherwise.
    await stepItem(page, condition.id).locator('.branch-then').getByRole('link', { name: '+ Add a step here' }).click();
    await page.getByRole('link', { name: 'Update the contact' }).click();
    await page.getByLabel('Name 1').fill('stage');
    await page.getByLabel('Value 1').fill('engaged');
    await page.getByRole('button', { name: 'Add step' }).click();
    await backOn(page, id);
    await openNewStep(page, 'Exit', `at the end of “else” of condition ${condition.id}`);
    await page.getByRole('button', { name: 'Add step' }).click();
    await backOn(page, id);
    const built = await automation(id);
    expect(built.steps[2].then).toMatchObject([{ type: 'update_contact', properties: { stage: 'engaged' } }]);
    expect(built.steps[2].else).toMatchObject([{ type: 'exit' }]);
    expect(ids(built.steps).slice(0, 3), 'each step keeps its id across the edits').toEqual([send.id, wait!.id, condition.id]);
    expect(await stepItem(page, condition.id).locator('.branch-then li.step .step-type').textContent()).toBe('Update the contact');
    expect(await stepItem(page, condition.id).locator('.branch-else li.step .step-type').textContent()).toBe('Exit');

    await page.getByRole('button', { name: 'Activate' }).click();
    await backOn(page, id);
    expect(await page.getByRole('status').textContent()).toBe('Automation active: contacts it starts walk its steps');
    expect((await automation(id)).status).toBe('ACTIVE');

    await ok('POST', `/v1/contactBooks/${bookId}/contacts`, { email: 'ann@newcomers.test', firstName: 'Ann' });
    await waitFor('the run waiting after the welcome', () => runsOf(id), (runs) => runs.length === 1 && runs[0].stepId === wait!.id);
    await waitFor('the welcome delivered', async () => rig.sink.received.filter((m) => m.rcptTo.includes('ann@newcomers.test')).length, (n) => n === 1);

    await page.reload();
    for (const [stepId, counts] of [[send.id, ['1', '0', '1', '0']], [wait!.id, ['1', '1', '0', '0']], [condition.id, ['0', '0', '0', '0']]] as const) {
      expect(await Promise.all(['entered', 'waiting', 'completed', 'exited'].map((name) => counter(page, stepId, name))), stepId).toEqual(counts);
    }
    expect(await page.locator('.card', { hasText: 'Active runs' }).locator('.value').textContent()).toBe('1');
    await screenshot(page, 'automation');

    // The runs, filtered by contact and status; one contact's run with its history.
    await page.getByRole('link', { name: 'Runs', exact: true }).click();
    await page.waitForURL(`${rig.server.url}/automations/${id}/runs`);
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().locator('td').nth(1).textContent()).toBe('ACTIVE');
    expect(await rows.first().locator('td').nth(2).textContent()).toBe(`${wait!.id} Wait`);
    await page.getByLabel('Contact email').fill('nobody@newcomers.test');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/email=nobody/);
    expect(await page.locator('.empty').textContent()).toContain('No contact nobody@newcomers.test in the book');
    await page.getByLabel('Contact email').fill('ANN@newcomers.test');
    await page.getByLabel('Status').selectOption('COMPLETED');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=COMPLETED/);
    expect(await page.locator('.empty').textContent()).toContain('No run matches these filters');
    await page.getByLabel('Status').selectOption('ACTIVE');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=ACTIVE/);
    await page.getByRole('link', { name: 'ann@newcomers.test' }).click();
    await page.waitForURL(/\/contacts\/[^/]+$/);
    expect(await heading(page)).toBe('ann@newcomers.test');
    const [run] = await runsOf(id);
    const history = page.locator(`section[data-run="${run.id}"] tbody tr`);
    expect(await history.first().locator('td').allTextContents()).toEqual([send.id, 'send', expect.any(String), '—', run.history[0].emailId]);
    await screenshot(page, 'automation-run');
    await history.first().getByRole('link', { name: run.history[0].emailId }).click();
    await page.waitForURL(`${rig.server.url}/emails/${run.history[0].emailId}`);
    expect(await page.content()).toContain('ann@newcomers.test');
    expect(rig.dialogs.filter((dialog) => dialog.startsWith('alert'))).toEqual([]);
  }, 90_000);

  it('pausing holds a run where it is and the page offers Resume; resuming lets it go on', async () => {
    const { page } = rig.person;
    const paused = await made('Pausable', [{ id: 'hello', type: 'send', templateId: welcome.id, from: rig.from }]);
    await page.goto(`/automations/${paused.id}`);
    await page.getByRole('button', { name: 'Pause' }).click();
    await backOn(page, paused.id);
    expect(await page.getByRole('status').textContent()).toBe('Automation paused: its runs wait where they are until you resume it');
    expect((await automation(paused.id)).status).toBe('PAUSED');
    expect(await page.getByRole('button', { name: 'Pause' }).count()).toBe(0);

    await ok('POST', `/v1/contactBooks/${paused.trigger.contactBookId}/contacts`, { email: 'held@newcomers.test' });
    await waitFor('the run entered', () => runsOf(paused.id), (runs) => runs.length === 1);
    expect((await runsOf(paused.id))[0]).toMatchObject({ status: 'ACTIVE', stepId: 'hello' });
    await page.reload();
    expect(await counter(page, 'hello', 'waiting')).toBe('1');

    await page.getByRole('button', { name: 'Resume' }).click();
    await backOn(page, paused.id);
    expect((await automation(paused.id)).status).toBe('ACTIVE');
    await waitFor('the run completed', () => runsOf(paused.id), (runs) => runs[0].status === 'COMPLETED');
    await page.reload();
    expect(await counter(page, 'hello', 'completed')).toBe('1');
    expect(await page.getByRole('button', { name: 'Pause' }).count()).toBe(1);
  });

  it('an invalid step is refused with the service’s path and message on the page, and nothing is stored', async () => {
    const { page } = rig.person;
    const target = await made('Strict', [{ id: 'rest', type: 'wait', duration: '1 day' }], 'DRAFT');
    const before = (await automation(target.id)).steps;

    await page.goto(`/automations/${target.id}`);
    await openNewStep(page, 'Send an email');
    await page.getByLabel('Template').selectOption({ label: 'Welcome' });
    await page.getByLabel('From', { exact: true }).fill('someone@unverified.test');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Add step' }).click())).toBe(400);
    expect(await page.locator('.field:has(#f-from) .error').textContent()).toContain('unverified.test');
    expect(await page.getByLabel('From', { exact: true }).inputValue()).toBe('someone@unverified.test');

    await page.goto(`/automations/${target.id}/steps/rest`);
    await page.getByLabel('Duration').fill('400 days');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Save step' }).click())).toBe(400);
    expect(await page.locator('.field:has(#f-duration) .error').textContent()).toContain('from 1 second to 365 days');
    await screenshot(page, 'automation-step-error');

    // The whole list as JSON: a repeated id is named at its path.
    await page.goto(`/automations/${target.id}`);
    await page.getByText('Steps as JSON').click();
    await page.getByLabel('Steps', { exact: true }).fill(JSON.stringify([{ id: 'rest', type: 'wait', duration: '1 day' }, { id: 'rest', type: 'exit' }]));
    expect(await submitted(page, () => page.getByRole('button', { name: 'Save steps' }).click())).toBe(400);
    expect(await page.getByRole('alert').locator('li').first().textContent()).toMatch(/^steps\[1\]\.id repeats the id of steps\[0\]/);
    expect(await page.getByLabel('Steps', { exact: true }).inputValue()).toContain('"exit"');

    // A condition naming a step that is no earlier send step, typed as JSON in the builder's field.
    await openNewStep(page, 'Condition');
    await page.getByText('Filter as JSON').click();
    await page.getByLabel('Filter', { exact: true }).fill(JSON.stringify({ all: [{ event: 'opened', step: 'rest' }] }));
    expect(await submitted(page, () => page.getByRole('button', { name: 'Add step' }).click())).toBe(400);
    expect(await page.locator('.filter-errors li').first().textContent()).toBe('filter.all[0].step must name a send step before this condition, not "rest"');
    expect((await automation(target.id)).steps).toEqual(before);
  });

  it('without JavaScript, steps are added, edited, moved and removed with plain form posts, and the runs keep their step ids', async () => {
    const context = await rig.browser.newContext({ baseURL: rig.server.url, javaScriptEnabled: false, storageState: await rig.person.context.storageState() });
    const page = await context.newPage();
    const plain = await made('Plain', [{ id: 'first', type: 'wait', duration: '2 days' }]);
    await ok('POST', `/v1/contactBooks/${plain.trigger.contactBookId}/contacts`, { email: 'plain@newcomers.test' });
    await waitFor('the run waiting', () => runsOf(plain.id), (runs) => runs.length === 1 && runs[0].stepId === 'first');

    await page.goto(`/automations/${plain.id}`);
    await openNewStep(page, 'Wait');
    await page.getByLabel('Duration').fill('3 hours');
    await page.getByRole('button', { name: 'Add step' }).click();
    await page.waitForURL(`${rig.server.url}/automations/${plain.id}#steps`);
    const [, added] = (await automation(plain.id)).steps as Step[];
    await openNewStep(page, 'Condition');
    expect(await page.locator('.filter-builder').isVisible()).toBe(false);
    await page.getByLabel('Filter').fill(JSON.stringify({ any: [{ field: 'email', op: 'endsWith', value: '@newcomers.test' }] }));
    await page.getByRole('button', { name: 'Add step' }).click();
    await page.waitForURL(/#steps$/);

    await stepItem(page, added!.id).getByRole('link', { name: 'Edit' }).click();
    await page.getByLabel('Duration').fill('4 hours');
    await page.getByRole('button', { name: 'Save step' }).click();
    await page.waitForURL(/#steps$/);
    await stepItem(page, added!.id).getByRole('button', { name: 'Move up' }).click();
    await page.waitForURL(/#steps$/);
    await stepItem(page, 'first').getByRole('button', { name: 'Remove' }).click();
    await page.waitForURL(/#steps$/);
    const steps = (await automation(plain.id)).steps as Step[];
    expect(steps.map((step) => [step.id, step.type, step.duration ?? null])).toEqual([[added!.id, 'wait', '4 hours'], [steps[1]!.id, 'condition', null]]);
    // Its run was at the removed wait: it moved on to the next step kept.
    expect((await runsOf(plain.id))[0].stepId).not.toBe('first');
    await context.close();
  });

  it('another team’s automation id is a 404 page, its actions are 404s, and nothing of it changes', async () => {
    const target = await made('Private', [{ id: 'rest', type: 'wait', duration: '1 day' }]);
    const before = await automation(target.id);
    const otherTeam = await rig.server.team('Other team');
    const other = await signedIn(rig.browser, rig.server, otherTeam.teamId);
    const base = `/automations/${target.id}`;
    for (const path of [base, `${base}/runs`, `${base}/delete`, `${base}/steps/new?type=wait`, `${base}/steps/rest`, `${base}/contacts/nobody`]) {
      const response = await other.page.goto(path);
      expect(response!.status(), path).toBe(404);
      expect(await heading(other.page)).toBe('Not found');
      expect(await other.page.content()).not.toContain('Private');
    }
    await other.page.goto('/automations');
    expect(await other.page.locator('.empty').textContent()).toContain('No automations yet');
    for (const [path, form] of [
      [`${base}/status`, { status: 'PAUSED' }],
      [`${base}/settings`, { name: 'Mine now' }],
      [`${base}/steps`, { steps: '[{"type":"exit"}]', version: before.updatedAt }],
      [`${base}/steps/new`, { type: 'exit', place: 'top', version: before.updatedAt }],
      [`${base}/steps/rest/remove`, { version: before.updatedAt }],
      [`${base}/count`, { filter: '{"all":[]}' }],
      [`${base}/delete`, {}],
    ] as const) {
      const response = await postAs(other, path, form);
      expect(response.status(), path).toBe(404);
    }
    expect(await automation(target.id)).toEqual(before);
    await other.context.close();
  });

  it('a change of the steps made from a page loaded before the steps last changed is refused (409), and the steps stay as they are', async () => {
    const target = await made('Changed meanwhile', [{ id: 'rest', type: 'wait', duration: '1 day' }, { type: 'exit' }], 'DRAFT');
    await rig.person.page.goto(`/automations/${target.id}`);
    const changed = await ok('PATCH', `/v1/automations/${target.id}`, { steps: [{ id: 'rest', type: 'wait', duration: '2 days' }, { type: 'exit' }] });
    for (const [path, form] of [
      [`/automations/${target.id}/steps`, { steps: '[{"type":"exit"}]', version: target.updatedAt }],
      [`/automations/${target.id}/steps/rest/remove`, { version: target.updatedAt }],
    ] as const) {
      const response = await postAs(rig.person, path, form);
      expect(response.status(), path).toBe(409);
      expect(await response.text()).toContain('changed since this page was loaded');
    }
    expect((await automation(target.id)).steps).toEqual(changed.steps);
  });

  it('markup in an automation’s or a template’s name shows as text on its pages, and none of it runs', async () => {
    const { page } = rig.person;
    const template = await ok('POST', '/v1/templates', { name: HOSTILE, subject: 'x', html: '<p>x</p>' });
    const hostile = await made(HOSTILE, [{ id: 'mail', type: 'send', templateId: template.id, from: rig.from }, { type: 'update_contact', properties: { [HOSTILE]: HOSTILE } }], 'DRAFT');
    for (const path of ['/automations', `/automations/${hostile.id}`, `/automations/${hostile.id}/runs`, `/automations/${hostile.id}/delete`]) {
      await page.goto(path);
      await expectShownAsText(page, HOSTILE, rig.dialogs);
    }
    await page.goto(`/automations/${hostile.id}/steps/mail`);
    expect(await page.getByLabel('Template').locator('option:checked').textContent()).toBe(HOSTILE);
    await ok('DELETE', `/v1/automations/${hostile.id}`);
    await ok('DELETE', `/v1/templates/${template.id}`);
  });

  it('deleting asks on its own page, ends the runs, and the list no longer shows it', async () => {
    const { page } = rig.person;
    const doomed = await made('Doomed', [{ id: 'rest', type: 'wait', duration: '1 day' }]);
    await ok('POST', `/v1/contactBooks/${doomed.trigger.contactBookId}/contacts`, { email: 'doomed@newcomers.test' });
    await waitFor('the run entered', () => runsOf(doomed.id), (runs) => runs.length === 1);
    await page.goto(`/automations/${doomed.id}`);
    await page.getByRole('link', { name: 'Delete' }).click();
    expect(await page.locator('form p').first().textContent()).toContain('Its 1 active run end now');
    await page.getByRole('button', { name: 'Delete automation' }).click();
    await page.waitForURL(`${rig.server.url}/automations`);
    expect(await page.getByRole('status').textContent()).toBe('Automation “Doomed” deleted');
    expect(await page.getByRole('link', { name: 'Doomed' }).count()).toBe(0);
    expect((await rig.server.call('GET', `/v1/automations/${doomed.id}`, { key: rig.key })).status).toBe(404);
  });

  it('at phone width the list, an automation’s step tree and its runs do not scroll sideways', async () => {
    const nested = await made('A welcome series with a rather long name for a phone', [
      { id: 'hello', type: 'send', templateId: welcome.id, from: rig.from },
      { id: 'branch', type: 'condition', filter: { all: [{ event: 'opened', step: 'hello' }] }, then: [{ id: 'deeper', type: 'condition', filter: { all: [{ field: 'email', op: 'exists' }] }, then: [{ type: 'exit' }] }], else: [{ type: 'wait', duration: '2 days' }] },
    ], 'DRAFT');
    const { context, page } = await signedIn(rig.browser, rig.server, rig.teamId, { viewport: { width: 390, height: 844 } });
    for (const [path, name] of [['/automations', 'automations-phone'], [`/automations/${nested.id}`, 'automation-phone'], [`/automations/${nested.id}/runs`, null]] as const) {
      await page.goto(path);
      if (name) await screenshot(page, name);
      await noSidewaysScroll(page);
    }
    await context.close();
  });
});
