import PostalMime from 'postal-mime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDueRuns, endBatchIfStalled } from '../src/data/automation-runs.js';
import { EVENT_PAYLOADS } from '../src/events/contract.js';
import { expectApiError } from './helpers/api-error.js';
import { usingPostgres } from './helpers/database.js';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { sleep, waitFor } from './helpers/wait.js';

/**
 * Automations on real parts: runs walk their steps in the runner of a real server, on the
 * database of this run's kind, and their mail goes through the dispatcher to a loopback SMTP sink.
 * Days pass on the service's clock (deps.clock), which the runner and the dispatcher both read.
 */

const DAY = 86_400_000;
const METRICS = 'automation-metrics-token';
let env: Awaited<ReturnType<typeof startFeedbackServer>>;
let team: FeedbackTeam;
let welcome: string;
let followA: string;
let followB: string;
let offset = 0;

beforeAll(async () => {
  env = await startFeedbackServer({ AUTOMATION_POLL_MS: '20', METRICS_TOKEN: METRICS });
  team = await feedbackTeam(env.server, env.sink, 'automations.test');
  await team.ok('PATCH', `/v1/domains/${team.domain.id}`, { openTracking: true });
  env.sink.rule = { rcpt: (address) => (address.startsWith('gone') ? { code: 550, message: '5.1.1 no such mailbox' } : null) };
  const template = async (name: string, html: string) => (await team.ok('POST', '/v1/templates', { name, subject: `${name} for {{firstName,fallback=you}}`, html })).id as string;
  welcome = await template('Welcome', '<p>Welcome {{firstName,fallback=friend}} on {{plan,fallback=no plan}}</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>');
  followA = await template('Thanks for reading', '<p>Glad you read it</p>');
  followB = await template('Did you miss it', '<p>Here it is again</p>');
}, 60_000);
afterAll(() => env?.stop());

/** Moves the service's clock on (the runner's and the dispatcher's), and wakes the runner. */
function later(ms: number) {
  offset += ms;
  env.server.deps.clock = () => new Date(Date.now() + offset);
  env.server.deps.signals.emit('automationsDue');
}

const from = () => `Hello <hello@${team.domain.name}>`;
const newBook = async (name: string, extra: object = {}) => (await team.ok('POST', '/v1/contactBooks', { name, ...extra })).id as string;
const addContact = async (bookId: string, email: string, extra: object = {}) =>
  (await team.ok('POST', `/v1/contactBooks/${bookId}/contacts`, { email, ...extra })).contactId as string;
const runsOf = async (automationId: string, query = '') => (await team.ok('GET', `/v1/automations/${automationId}/runs?limit=100${query}`)).data as any[];
/** POST /v1/events, answered 202. */
async function postEvent(body: object) {
  const res = await env.server.call('POST', '/v1/events', { key: team.key, body });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body;
}
const mailTo = (address: string) => env.sink.received.filter((message) => message.rcptTo.includes(address));
const subjectsTo = async (address: string) => Promise.all(mailTo(address).map(async (message) => (await PostalMime.parse(message.raw)).subject));

/** An ACTIVE automation that every contact added to the book walks. */
const activeOn = (bookId: string, name: string, steps: object[]) =>
  team.ok('POST', '/v1/automations', { name, status: 'ACTIVE', trigger: { type: 'contact.added', contactBookId: bookId }, steps });

/** Whether a run sits out this wait step of `ms`: its next time is that far on from when it got there (the clock may have moved on since it started). */
const sittingOut = (stepId: string, ms: number) => (run: any) => run.stepId === stepId && Date.parse(run.nextAt) - Date.parse(run.startedAt) >= ms;

/** Waits until every run of the automation satisfies `done`. */
const runsWhere = (automationId: string, count: number, done: (run: any) => boolean, what: string) =>
  waitFor(what, () => runsOf(automationId), (runs) => runs.length === count && runs.every(done));

describe('a welcome series', () => {
  it('walks every new contact exactly once: a welcome, two days, then one of two follow-ups by whether the welcome was opened', async () => {
    const bookId = await newBook('Welcome series');
    const automation = await team.ok('POST', '/v1/automations', {
      name: 'Welcome series',
      status: 'ACTIVE',
      trigger: { type: 'contact.added', contactBookId: bookId },
      steps: [
        { id: 'welcome', type: 'send', templateId: welcome, from: from() },
        { id: 'pause', type: 'wait', duration: '2 days' },
        {
          id: 'opened', type: 'condition', filter: { all: [{ event: 'opened', step: 'welcome' }] },
          then: [{ id: 'thanks', type: 'send', templateId: followA, from: from() }],
          else: [{ id: 'again', type: 'send', templateId: followB, from: from() }],
        },
      ],
    });
    expect(automation.steps.map((step: { id: string }) => step.id)).toEqual(['welcome', 'pause', 'opened']);
    const people = ['ann@readers.test', 'bob@readers.test', 'cyd@readers.test'];
    await addContact(bookId, people[0]!, { firstName: 'Ann' });
    await team.ok('POST', `/v1/contactBooks/${bookId}/contacts/bulk`, people.slice(1).map((email) => ({ email })));

    await runsWhere(automation.id, 3, sittingOut('pause', 2 * DAY), 'every run waiting after the welcome');
    await waitFor('three welcomes delivered', async () => people.flatMap(mailTo).length, (n) => n === 3);
    expect(await subjectsTo(people[0]!)).toEqual(['Welcome for Ann']);
    const welcomeMail = await PostalMime.parse(mailTo(people[0]!)[0]!.raw);
    expect(welcomeMail.html).toContain('Welcome Ann on no plan');
    expect(welcomeMail.headers.find((h) => h.key === 'list-unsubscribe')?.value).toContain('/unsubscribe/');
    const pixel = /<img\b[^>]*src="([^"]*\/track\/open\/[^"]*)"/.exec(welcomeMail.html!)![1]!;
    expect((await fetch(env.server.url + new URL(pixel.replaceAll('&amp;', '&')).pathname)).status).toBe(200);
    const [annRun] = await runsOf(automation.id, `&contactId=${(await team.contact(bookId, people[0]!)).id}`);
    await waitFor('the open recorded', () => team.email(annRun.history[0].emailId), (email) => email.latestStatus === 'OPENED');

    later(DAY);
    await sleep(200);
    expect(people.flatMap(mailTo), 'nothing is sent before the wait is over').toHaveLength(3);
    later(DAY + 60_000);
    await runsWhere(automation.id, 3, (run) => run.status === 'COMPLETED', 'every run COMPLETED');
    await waitFor('every follow-up delivered', async () => people.flatMap(mailTo).length, (n) => n === 6);
    expect(await subjectsTo(people[0]!)).toEqual(['Welcome for Ann', 'Thanks for reading for Ann']);
    for (const other of people.slice(1)) expect(await subjectsTo(other)).toEqual(['Welcome for you', 'Did you miss it for you']);

    const [ann] = await runsOf(automation.id, `&contactId=${annRun.contactId}`);
    expect(ann.history.map((entry: { stepId: string; type: string; outcome?: string }) => [entry.stepId, entry.type, entry.outcome ?? null])).toEqual([
      ['welcome', 'send', null], ['pause', 'wait', 'waited'], ['opened', 'condition', 'then'], ['thanks', 'send', null], ['thanks', 'end', null],
    ]);
    const counters = (await team.ok('GET', `/v1/automations/${automation.id}`)).counters;
    expect(counters).toEqual([
      { stepId: 'welcome', entered: 3, waiting: 0, completed: 3, exited: 0 },
      { stepId: 'pause', entered: 3, waiting: 0, completed: 3, exited: 0 },
      { stepId: 'opened', entered: 3, waiting: 0, completed: 3, exited: 0 },
      { stepId: 'thanks', entered: 1, waiting: 0, completed: 1, exited: 0 },
      { stepId: 'again', entered: 2, waiting: 0, completed: 2, exited: 0 },
    ]);
    const metrics = (await env.server.call('GET', '/metrics', { key: METRICS })).body as string;
    const stepsOf = (type: string) => Number(new RegExp(`^mailroom_automation_steps_total\\{type="${type}"\\} (\\d+)`, 'm').exec(metrics)?.[1]);
    expect([stepsOf('send'), stepsOf('wait'), stepsOf('condition')]).toEqual([6, 3, 3]);
    expect(metrics).toMatch(/^mailroom_automation_runs_due \d+$/m);
    // A contact added again (an update) enters nothing a second time.
    await addContact(bookId, people[1]!, { firstName: 'Bob' });
    await sleep(200);
    expect(await runsOf(automation.id)).toHaveLength(3);
  }, 90_000);
});

describe('triggers', () => {
  it('in a double opt-in book, a contact enters on confirmation, not when added', async () => {
    const bookId = await newBook('Confirmed', { doubleOptInEnabled: true, doubleOptInFrom: `Lists <lists@${team.domain.name}>`, doubleOptInSubject: 'Confirm, please' });
    const automation = await activeOn(bookId, 'After confirming', [{ id: 'hello', type: 'send', templateId: welcome, from: from() }]);
    const contactId = await addContact(bookId, 'pending@readers.test');
    await sleep(200);
    expect(await runsOf(automation.id), 'no run while the contact is pending').toEqual([]);
    const token = env.server.deps.tokens.sign('confirm', { teamId: team.teamId, bookId, contactId, expiresAt: Date.now() + 60_000 });
    expect((await fetch(`${env.server.url}/confirm/${token}`, { method: 'POST' })).status).toBe(200);
    await runsWhere(automation.id, 1, (run) => run.status === 'COMPLETED', 'the confirmed contact walked it');
    await waitFor('its welcome delivered', async () => (await subjectsTo('pending@readers.test')).filter((s) => s?.startsWith('Welcome')), (found) => found.length === 1);
  }, 60_000);

  it("an event starts a run for its contact (made when new), its properties the mail's variables, and the run waits seconds on the real clock", async () => {
    const bookId = await newBook('Events');
    const automation = await team.ok('POST', '/v1/automations', {
      name: 'Trial started', status: 'ACTIVE', trigger: { type: 'event', name: 'trial.started', contactBookId: bookId },
      steps: [
        { id: 'breath', type: 'wait', duration: '1 second' },
        { id: 'hello', type: 'send', templateId: welcome, from: from(), subject: 'Your {{plan}} trial' },
      ],
    });
    const other = await postEvent({ name: 'something.else', contactBookId: bookId, email: 'evan@readers.test' });
    expect(other.runsStarted).toBe(0);
    expect((await team.contact(bookId, 'evan@readers.test')).id, 'the new address became a contact').toBe(other.contactId);
    const started = await postEvent({ name: 'trial.started', contactBookId: bookId, email: 'evan@readers.test', properties: { plan: 'Pro' } });
    expect(started).toMatchObject({ contactId: other.contactId, runsStarted: 1 });
    expect(typeof started.id).toBe('string');
    await runsWhere(automation.id, 1, (run) => run.status === 'COMPLETED', 'the run completed');
    await waitFor('its mail delivered', async () => subjectsTo('evan@readers.test'), (found) => found.length === 1);
    expect(await subjectsTo('evan@readers.test')).toEqual(['Your Pro trial']);
    expect((await PostalMime.parse(mailTo('evan@readers.test')[0]!.raw)).html).toContain('on Pro');
    const [run] = await runsOf(automation.id);
    expect(new Date(run.endedAt).getTime() - new Date(run.startedAt).getTime(), 'the wait lasted').toBeGreaterThanOrEqual(1000);

    const byId = await env.server.call('POST', '/v1/events', { key: team.key, body: { name: 'trial.started', contactBookId: bookId, contactId: 'nobody' } });
    expectApiError(byId, 404, 'NOT_FOUND');
    const neither = await env.server.call('POST', '/v1/events', { key: team.key, body: { name: 'trial.started', contactBookId: bookId } });
    expectApiError(neither, 400, 'VALIDATION_ERROR');
  }, 60_000);

  it('a run reports automation.run_started and automation.run_completed to the webhooks that take them, in the contract\'s shape', async () => {
    const bookId = await newBook('Reported');
    const automation = await team.ok('POST', '/v1/automations', {
      name: 'Reported', status: 'ACTIVE', trigger: { type: 'event', name: 'reported', contactBookId: bookId }, steps: [{ id: 'bye', type: 'exit' }],
    });
    // Port 1 of loopback refuses: the calls stay in the outbox, as written, for the test to read.
    const webhook = await team.ok('POST', '/v1/webhooks', { url: 'http://127.0.0.1:1/automations', events: ['automation.run_started', 'automation.run_completed'] });
    const { contactId } = await postEvent({ name: 'reported', contactBookId: bookId, email: 'rita@readers.test' });
    const [run] = await runsWhere(automation.id, 1, (r) => r.status === 'EXITED', 'the run ended');
    const calls = await env.server.deps.db.selectFrom('webhook_calls').select(['type', 'data']).where('team_id', '=', team.teamId).where('webhook_id', '=', webhook.id).orderBy('seq').execute();
    expect(calls.map((call) => call.type)).toEqual(['automation.run_started', 'automation.run_completed']);
    for (const call of calls) EVENT_PAYLOADS[call.type as 'automation.run_started'].parse(call.data);
    expect(calls[0]!.data).toMatchObject({ id: run.id, automationId: automation.id, contactId, email: 'rita@readers.test', status: 'ACTIVE', endedAt: null });
    expect(calls[1]!.data).toMatchObject({ id: run.id, status: 'EXITED', stepId: 'bye', exitReason: 'exit step' });
    await team.ok('DELETE', `/v1/webhooks/${webhook.id}`);
  }, 60_000);

  it('reentry off: a contact walks an automation once; on: again once each run ends', async () => {
    const bookId = await newBook('Reentry');
    const steps = [{ id: 'hello', type: 'send', templateId: welcome, from: from() }];
    const once = await team.ok('POST', '/v1/automations', { name: 'Once', status: 'ACTIVE', trigger: { type: 'event', name: 'visit', contactBookId: bookId }, steps });
    const again = await team.ok('POST', '/v1/automations', {
      name: 'Each time', status: 'ACTIVE', allowReentry: true, trigger: { type: 'event', name: 'visit', contactBookId: bookId }, steps,
    });
    const visit = () => postEvent({ name: 'visit', contactBookId: bookId, email: 'vera@readers.test' });
    expect((await visit()).runsStarted).toBe(2);
    await runsWhere(again.id, 1, (run) => run.status === 'COMPLETED', 'the first run of each completed');
    await runsWhere(once.id, 1, (run) => run.status === 'COMPLETED', 'the first run of each completed');
    expect((await visit()).runsStarted).toBe(1);
    await runsWhere(again.id, 2, (run) => run.status === 'COMPLETED', 'the second run completed');
    expect(await runsOf(once.id)).toHaveLength(1);
    await waitFor('three mails delivered', async () => mailTo('vera@readers.test').length, (n) => n === 3);
  }, 60_000);
});

describe('steps', () => {
  it('update_contact sets properties, a later send reads them, and an exit step ends the run there', async () => {
    const bookId = await newBook('Stages');
    const automation = await activeOn(bookId, 'Stages', [
        { id: 'stage', type: 'update_contact', properties: { stage: 'onboarded', plan: 'Team' } },
        { id: 'pro', type: 'condition', filter: { all: [{ field: 'properties.plan', op: 'eq', value: 'team' }] }, then: [{ id: 'hello', type: 'send', templateId: welcome, from: from() }, { id: 'stop', type: 'exit' }] },
        { id: 'never', type: 'send', templateId: followB, from: from() },
      ]);
    await addContact(bookId, 'stan@readers.test', { properties: { plan: 'Free', keep: 'me' } });
    const [run] = await runsWhere(automation.id, 1, (r) => r.status === 'EXITED', 'the run exited');
    expect(run).toMatchObject({ stepId: 'stop', exitReason: 'exit step' });
    expect((await team.contact(bookId, 'stan@readers.test')).properties).toEqual({ plan: 'Team', keep: 'me', stage: 'onboarded' });
    await waitFor('its one mail delivered', async () => subjectsTo('stan@readers.test'), (found) => found.length === 1);
    expect((await PostalMime.parse(mailTo('stan@readers.test')[0]!.raw)).html).toContain('on Team');
    const counters = (await team.ok('GET', `/v1/automations/${automation.id}`)).counters;
    expect(counters.find((c: { stepId: string }) => c.stepId === 'stop')).toEqual({ stepId: 'stop', entered: 1, waiting: 0, completed: 0, exited: 1 });
    expect(counters.find((c: { stepId: string }) => c.stepId === 'never')).toEqual({ stepId: 'never', entered: 0, waiting: 0, completed: 0, exited: 0 });
  }, 60_000);

  it('a contact who unsubscribes mid-wait leaves the run at once, and its next mail is never sent', async () => {
    const bookId = await newBook('Leavers');
    const automation = await activeOn(bookId, 'Drip', [{ id: 'rest', type: 'wait', duration: '1 day' }, { id: 'hello', type: 'send', templateId: welcome, from: from() }]);
    const stays = await addContact(bookId, 'stays@readers.test');
    const leaves = await addContact(bookId, 'leaves@readers.test');
    await runsWhere(automation.id, 2, sittingOut('rest', DAY), 'both waiting');
    await team.ok('PATCH', `/v1/contactBooks/${bookId}/contacts/${leaves}`, { subscribed: false });
    const [left] = await runsOf(automation.id, `&contactId=${leaves}`);
    expect(left).toMatchObject({ status: 'EXITED', stepId: 'rest', exitReason: 'unsubscribed', nextAt: null });
    later(DAY + 60_000);
    await waitFor('the one who stayed completed', async () => (await runsOf(automation.id, `&contactId=${stays}`))[0], (run) => run.status === 'COMPLETED');
    await waitFor('its mail delivered', async () => mailTo('stays@readers.test').length, (n) => n === 1);
    expect(mailTo('leaves@readers.test')).toEqual([]);
    expect((await team.ok('GET', `/v1/automations/${automation.id}`)).counters[0]).toEqual({ stepId: 'rest', entered: 2, waiting: 0, completed: 1, exited: 1 });
  }, 60_000);

  it('a contact deleted mid-wait leaves its runs with it, and nothing is sent to it', async () => {
    const bookId = await newBook('Deleted');
    const automation = await activeOn(bookId, 'Drip', [{ id: 'rest', type: 'wait', duration: '1 day' }, { id: 'hello', type: 'send', templateId: welcome, from: from() }]);
    const contactId = await addContact(bookId, 'deleted@readers.test');
    await runsWhere(automation.id, 1, sittingOut('rest', DAY), 'waiting');
    await team.ok('DELETE', `/v1/contactBooks/${bookId}/contacts/${contactId}`);
    expect(await runsOf(automation.id)).toEqual([]);
    expect((await team.ok('GET', `/v1/automations/${automation.id}`)).runs).toEqual({ active: 0, completed: 0, exited: 0 });
    later(DAY + 60_000);
    await sleep(300);
    expect(mailTo('deleted@readers.test')).toEqual([]);
  }, 60_000);

  it("a hard bounce of an automation's mail takes its contact out of the book's mailing and out of its runs", async () => {
    const bookId = await newBook('Bouncers');
    const automation = await activeOn(bookId, 'Bouncing', [{ id: 'hello', type: 'send', templateId: welcome, from: from() }, { id: 'rest', type: 'wait', duration: '1 day' }, { id: 'again', type: 'send', templateId: followB, from: from() }]);
    await addContact(bookId, 'gone@readers.test');
    const [run] = await runsWhere(automation.id, 1, (r) => r.status === 'EXITED', 'the run exited');
    expect(run).toMatchObject({ stepId: 'rest', exitReason: 'bounced' });
    expect((await team.contact(bookId, 'gone@readers.test')).subscribed).toBe(false);
  }, 60_000);

  it('a run whose step fails every time leaves its automation with the error as its reason, and the runs due with it go on', async () => {
    const bookId = await newBook('Poisoned');
    const condition = { id: 'check', type: 'condition', filter: { all: [{ field: 'properties.plan', op: 'in', value: ['pro'] }] }, then: [{ id: 'tag', type: 'update_contact', properties: { checked: 'yes' } }] };
    const poisoned = await team.ok('POST', '/v1/automations', { name: 'Poisoned', status: 'ACTIVE', trigger: { type: 'contact.added', contactBookId: bookId }, steps: [condition] });
    const healthy = await team.ok('POST', '/v1/automations', { name: 'Healthy', status: 'ACTIVE', trigger: { type: 'contact.added', contactBookId: bookId }, steps: [{ id: 'hello', type: 'send', templateId: welcome, from: from() }] });
    // A definition no request could store now (an older version's, say): its filter fails as it is compiled.
    const broken = [{ ...condition, else: [], filter: { all: [{ field: 'properties.plan', op: 'in', value: 'pro' }] } }];
    await env.server.deps.db.updateTable('automations').set({ steps: JSON.stringify(broken) }).where('team_id', '=', team.teamId).where('id', '=', poisoned.id).execute();
    await addContact(bookId, 'pat@readers.test', { properties: { plan: 'pro' } });
    const [failed] = await runsWhere(poisoned.id, 1, (run) => run.status === 'EXITED', 'the failing run left');
    expect(failed.stepId).toBe('check');
    expect(failed.exitReason).toMatch(/^failed: /);
    await runsWhere(healthy.id, 1, (run) => run.status === 'COMPLETED', 'the healthy run completed');
    await waitFor('its mail delivered', async () => mailTo('pat@readers.test').length, (n) => n === 1);
    expect(env.logs.entries.some((entry) => entry.level === 'error' && entry.msg.includes('left its automation'))).toBe(true);
  }, 60_000);

  it.runIf(usingPostgres())('a runner stalled inside its batch loses its runs to the others once the database ends its idle transaction', async () => {
    const bookId = await newBook('Stalled');
    const automation = await activeOn(bookId, 'Stalled', [{ id: 'rest', type: 'wait', duration: '1 hour' }, { id: 'hello', type: 'send', templateId: welcome, from: from() }]);
    await addContact(bookId, 'stalled@readers.test');
    const [run] = await runsWhere(automation.id, 1, sittingOut('rest', 3_600_000), 'waiting');
    let claimed: (ids: string[]) => void;
    const claim = new Promise<string[]>((resolve) => (claimed = resolve));
    // A runner that claims the run as its hour ends, then stops answering inside its batch.
    const stalled = env.server.deps.db.transaction().execute(async (tx) => {
      await endBatchIfStalled(tx, 1);
      claimed((await claimDueRuns(tx, new Date(Date.now() + offset + 2 * 3_600_000), 100)).map((due) => due.id));
      await sleep(4000);
      await claimDueRuns(tx, new Date(), 1);
    });
    expect(await claim).toContain(run.id);
    later(2 * 3_600_000);
    await sleep(300);
    expect(mailTo('stalled@readers.test'), 'held while the stalled runner has it').toEqual([]);
    await expect(stalled).rejects.toThrow();
    await runsWhere(automation.id, 1, (r) => r.status === 'COMPLETED', 'taken over and completed');
    await waitFor('its mail delivered', async () => mailTo('stalled@readers.test').length, (n) => n === 1);
  }, 60_000);

  it('pausing holds runs where they are, new contacts included; resuming moves them on', async () => {
    const bookId = await newBook('Paused');
    const automation = await activeOn(bookId, 'Pausable', [{ id: 'rest', type: 'wait', duration: '1 hour' }, { id: 'hello', type: 'send', templateId: welcome, from: from() }]);
    await addContact(bookId, 'early@readers.test');
    await runsWhere(automation.id, 1, sittingOut('rest', 3_600_000), 'the first sitting out its hour');
    expect((await team.ok('PATCH', `/v1/automations/${automation.id}`, { status: 'PAUSED' })).status).toBe('PAUSED');
    await addContact(bookId, 'late@readers.test');
    later(2 * 3_600_000);
    await sleep(300);
    const held = await runsOf(automation.id);
    expect(held.map((run) => [run.status, run.stepId])).toEqual([['ACTIVE', 'rest'], ['ACTIVE', 'rest']]);
    expect([...mailTo('early@readers.test'), ...mailTo('late@readers.test')]).toEqual([]);
    await team.ok('PATCH', `/v1/automations/${automation.id}`, { status: 'ACTIVE' });
    // The late one starts its hour now: on resuming, the early one's is over.
    await waitFor('the early one mailed', async () => mailTo('early@readers.test').length, (n) => n === 1);
    later(2 * 3_600_000);
    await runsWhere(automation.id, 2, (run) => run.status === 'COMPLETED', 'both completed');
    await waitFor('the late one mailed', async () => mailTo('late@readers.test').length, (n) => n === 1);
  }, 60_000);

  it('editing an active automation keeps runs on their step ids, and a removed step moves its runs to the next one kept', async () => {
    const bookId = await newBook('Edited');
    const send = (id: string, templateId: string) => ({ id, type: 'send', templateId, from: from() });
    const automation = await activeOn(bookId, 'Editable', [{ id: 'first', type: 'wait', duration: '3 days' }, send('one', welcome), { id: 'second', type: 'wait', duration: '3 days' }, send('two', followA)]);
    await addContact(bookId, 'edie@readers.test');
    await runsWhere(automation.id, 1, sittingOut('first', 3 * DAY), 'waiting at the first wait');
    const edited = await team.ok('PATCH', `/v1/automations/${automation.id}`, {
      steps: [send('one', welcome), { id: 'second', type: 'wait', duration: '3 days' }, { type: 'update_contact', properties: { edited: 'yes' } }, send('two', followA)],
    });
    expect(edited.steps[2].id).toMatch(/^s_/);
    // A change made against the steps before that edit is refused whole; one against the edit is taken.
    const stale = await env.server.call('PATCH', `/v1/automations/${automation.id}`, { key: team.key, body: { name: 'Stale', steps: [send('one', welcome)], ifUpdatedAt: automation.updatedAt } });
    expectApiError(stale, 409, 'CONFLICT');
    expect(await team.ok('GET', `/v1/automations/${automation.id}`)).toMatchObject({ name: 'Editable', steps: edited.steps });
    expect((await team.ok('PATCH', `/v1/automations/${automation.id}`, { name: 'Edited', ifUpdatedAt: edited.updatedAt })).name).toBe('Edited');
    const [run] = await runsWhere(automation.id, 1, sittingOut('second', 3 * DAY), 'moved on to the second wait');
    expect(run.history.map((entry: { stepId: string; type: string }) => `${entry.stepId}:${entry.type}`)).toEqual(['first:removed', 'one:send']);
    await waitFor('the first mail delivered', async () => mailTo('edie@readers.test').length, (n) => n === 1);
    later(4 * DAY);
    await runsWhere(automation.id, 1, (r) => r.status === 'COMPLETED', 'completed on the edited steps');
    expect((await team.contact(bookId, 'edie@readers.test')).properties).toEqual({ edited: 'yes' });
  }, 60_000);
});

describe('definitions', () => {
  it('an invalid definition is a 400 naming each path, and nothing is stored', async () => {
    const bookId = await newBook('Invalid');
    const other = await env.server.team('Other');
    const theirs = await expectOkAs(other.apiKey, 'POST', '/v1/templates', { name: 'Theirs', subject: 'Theirs', html: '<p>x</p>' });
    const send = (templateId: string, id?: string) => ({ ...(id && { id }), type: 'send', templateId, from: from() });
    const before = await team.ok('GET', '/v1/automations');
    const nested = (depth: number): object => ({ type: 'condition', filter: { all: [{ field: 'email', op: 'exists' }] }, then: depth > 1 ? [nested(depth - 1)] : [{ type: 'exit' }] });
    const cases: [unknown, string][] = [
      [[send('nope')], 'steps[0].templateId'],
      [[send(theirs.id)], 'steps[0].templateId'],
      [[{ type: 'send', templateId: welcome, from: 'someone@unverified.test' }], 'steps[0].from'],
      [[send(welcome, 'a'), { id: 'a', type: 'exit' }], 'steps[1].id'],
      [[{ id: 'w', type: 'wait', duration: '1 day' }, { type: 'condition', filter: { all: [{ event: 'opened', step: 'w' }] } }], 'steps[1].filter.all[0].step'],
      [[{ type: 'condition', filter: { all: [{ event: 'opened', step: 'later' }] } }, send(welcome, 'later')], 'steps[0].filter.all[0].step'],
      [[nested(6)], 'steps[0].then[0].then[0].then[0].then[0]'],
      [[{ type: 'wait', duration: '400 days' }], 'steps[0].duration'],
      [[{ type: 'jump' }], 'steps[0].type'],
      [[], 'steps'],
    ];
    for (const [steps, path] of cases) {
      const res = await env.server.call('POST', '/v1/automations', { key: team.key, body: { name: 'Bad', trigger: { type: 'contact.added', contactBookId: bookId }, steps } });
      expectApiError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.error.details.map((detail: { path: string }) => detail.path), JSON.stringify(steps)).toContain(path);
    }
    const theirBook = await expectOkAs(other.apiKey, 'POST', '/v1/contactBooks', { name: 'Theirs' });
    const res = await env.server.call('POST', '/v1/automations', { key: team.key, body: { name: 'Bad', trigger: { type: 'contact.added', contactBookId: theirBook.id }, steps: [send(welcome)] } });
    expectApiError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.error.details.map((detail: { path: string }) => detail.path)).toEqual(['trigger.contactBookId']);
    expect(await team.ok('GET', '/v1/automations')).toEqual(before);
  });

  it('a template an automation sends cannot be deleted (409) until no automation sends it', async () => {
    const bookId = await newBook('Templates in use');
    const template = await team.ok('POST', '/v1/templates', { name: 'In use', subject: 'x', html: '<p>x</p>' });
    const automation = await team.ok('POST', '/v1/automations', { name: 'Uses it', trigger: { type: 'contact.added', contactBookId: bookId }, steps: [{ type: 'send', templateId: template.id, from: from() }] });
    expectApiError(await env.server.call('DELETE', `/v1/templates/${template.id}`, { key: team.key }), 409, 'CONFLICT');
    await team.ok('DELETE', `/v1/automations/${automation.id}`);
    await team.ok('DELETE', `/v1/templates/${template.id}`);
  });

  it("another team's key finds none of a team's automations, runs or books", async () => {
    const bookId = await newBook('Private');
    const automation = await team.ok('POST', '/v1/automations', {
      name: 'Private', status: 'ACTIVE', trigger: { type: 'event', name: 'x', contactBookId: bookId }, steps: [{ type: 'exit' }],
    });
    const other = await env.server.team('Stranger');
    for (const [method, path, body] of [
      ['GET', `/v1/automations/${automation.id}`],
      ['GET', `/v1/automations/${automation.id}/runs`],
      ['PATCH', `/v1/automations/${automation.id}`, { status: 'PAUSED' }],
      ['DELETE', `/v1/automations/${automation.id}`],
      ['POST', '/v1/events', { name: 'x', contactBookId: bookId, email: 'spy@readers.test' }],
    ] as const) {
      expectApiError(await env.server.call(method, path, { key: other.apiKey, body }), 404, 'NOT_FOUND');
    }
    expect((await expectOkAs(other.apiKey, 'GET', '/v1/automations')).data).toEqual([]);
    expect((await team.ok('GET', `/v1/automations/${automation.id}`)).status).toBe('ACTIVE');
    expect(await runsOf(automation.id)).toEqual([]);
  });
});

async function expectOkAs(key: string, method: string, path: string, body?: unknown) {
  const res = await env.server.call(method, path, { key, body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}
