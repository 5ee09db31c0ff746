import type { Context } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { STEP_TYPES, type Step, type StepInput, type StepType } from '../../audience/automation-steps.js';
import { namedSteps, type Filter } from '../../audience/segment-filter.js';
import { ApiError, notFound, type ErrorDetail } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import { callApi } from '../api-call.js';
import { assertMayChange, formValues, invalidInput, mayChange, verifiedDomains } from '../forms.js';
import { actionButton, badge, card, copyable, csrfField, done, field, formError, heading, page, pager, select, table, textArea, time, type Html } from '../layout.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';
import { runPages } from './automation-runs.js';
import {
  AUTOMATION_ROUTE as ROUTE,
  automationPath,
  getAutomation,
  STEP_LABELS,
  STYLES,
  stepErrors,
  stepForm,
  stepFromValues,
  stepValues,
  type Automation,
  type StepErrors,
  type StepFormState,
  type Template,
} from './automation-step-form.js';
import { addStep, branchPlace, findStep, moveStep, pathOf, placeExists, placesOf, removeStep, replaceStep, sendStepsBefore, TOP, type Place } from './automation-tree.js';
import { getBook, type Book } from './contacts-common.js';
import { countTyped, countWords, mistakes } from './segment-form.js';
import { filterInWords } from './segment-words.js';

type C = Context<DashboardEnv>;

const TRIGGERS = [
  { value: 'contact.added', label: 'A contact is added to the book (in a double opt-in book: confirms)' },
  { value: 'event', label: 'An event of a contact (POST /v1/events)' },
] as const;
/** A new automation's one step until the person builds on it: a draft starts no runs, so it never runs as is. */
const FIRST_STEP: StepInput = { type: 'wait', duration: '1 day' };
const count = (n: number) => n.toLocaleString('en');

const books = (c: C, deps: AppDeps) => callApi<Book[]>(c, deps, 'get', '/contactBooks');
const templates = async (c: C, deps: AppDeps) => (await callApi<{ data: Template[] }>(c, deps, 'get', '/templates', { query: { limit: '100' } })).data;

export const triggerWords = (automation: Automation) =>
  automation.trigger.type === 'event' ? html`the event <code>${automation.trigger.name}</code>` : 'a contact added';

const bookName = (all: Book[], bookId: string) => {
  const book = all.find((each) => each.id === bookId);
  return book ? `${book.emoji} ${book.name}` : bookId;
};

function listPage(deps: AppDeps) {
  return async (c: C) => {
    const current = Math.max(1, Number.parseInt(c.req.query('page') ?? '', 10) || 1);
    const [list, allBooks] = await Promise.all([callApi<{ data: Automation[]; totalPage: number }>(c, deps, 'get', '/automations', { query: { page: String(current) } }), books(c, deps)]);
    const creates = mayChange(c, 'automations');
    return page(c, {
      title: 'Automations',
      section: 'Automations',
      body: html`${heading('Automations', creates ? html`<a class="button" href="/automations/new">New automation</a>` : undefined)}
<p class="muted">Each contact a trigger starts walks the steps on its own: waits, emails from templates, conditions on a segment filter, property changes.</p>
${table(
  list.data,
  [
    { label: 'Automation', className: 'words', cell: (row) => html`<a href="${automationPath(row.id)}">${row.name}</a>` },
    { label: 'Trigger', className: 'words', cell: (row) => html`${triggerWords(row)} <span class="muted">in</span> ${bookName(allBooks, row.trigger.contactBookId)}` },
    { label: 'Status', cell: (row) => badge(row.status) },
    { label: 'Active', className: 'num', cell: (row) => count(row.runs.active) },
    { label: 'Completed', className: 'num', cell: (row) => count(row.runs.completed) },
    { label: 'Exited', className: 'num', cell: (row) => count(row.runs.exited) },
  ],
  creates ? html`No automations yet. <a href="/automations/new">Make one</a> to welcome new contacts or answer their events.` : 'No automations yet.',
)}
${pager('/automations', {}, current, current < list.totalPage)}`,
    });
  };
}

const NEW_FIELDS: Record<string, string> = { name: 'name', 'trigger.type': 'triggerType', 'trigger.name': 'eventName', 'trigger.contactBookId': 'contactBookId', trigger: 'triggerType' };

/** A refused new automation's errors by its form's fields; the rest with their paths above the form. */
function newErrors(details: readonly ErrorDetail[]) {
  const fields: Record<string, string> = {};
  const rest = details.filter((detail) => {
    const name = NEW_FIELDS[detail.path];
    if (name) fields[name] ??= detail.message;
    return !name;
  });
  return { fields, form: rest.length > 0 ? rest.map((detail) => `${detail.path} ${detail.message}`).join('; ') : undefined };
}

async function newPage(c: C, deps: AppDeps, options: { values: Record<string, string>; errors?: ReturnType<typeof newErrors>; status?: ContentfulStatusCode }) {
  const { values } = options;
  const errors = options.errors?.fields ?? {};
  const allBooks = await books(c, deps);
  return page(c, {
    title: 'New automation',
    section: 'Automations',
    status: options.status,
    body: html`<p><a href="/automations">← Automations</a></p>
${heading('New automation')}
<form class="stack panel" method="post" action="/automations/new">${csrfField(c)}
${formError(options.errors?.form)}
${field('name', 'Name', { value: values.name, error: errors.name, required: true, placeholder: 'Welcome series' })}
${select('contactBookId', 'Contact book', [{ value: '', label: 'Choose a contact book' }, ...allBooks.map((book) => ({ value: book.id, label: `${book.emoji} ${book.name}` }))], { value: values.contactBookId, error: errors.contactBookId })}
${select('triggerType', 'Trigger', TRIGGERS, { value: values.triggerType ?? 'contact.added', error: errors.triggerType })}
${field('eventName', 'Event name', { value: values.eventName, error: errors.eventName, placeholder: 'trial.started', hint: 'For an event trigger: the name POST /v1/events gives.' })}
<label class="check"><input type="checkbox" name="allowReentry" value="true"${values.allowReentry ? html` checked` : ''}> Let a contact walk it again once a run of theirs ends</label>
<p class="hint">It starts as a draft with one step, a one-day wait: build its steps, then activate it. A draft starts no runs.</p>
<div class="row-actions"><button type="submit">Create automation</button><a class="button secondary" href="/automations">Cancel</a></div>
</form>`,
  });
}

async function createAutomation(c: C, deps: AppDeps) {
  const values = await formValues(c);
  const contactBookId = values.contactBookId ?? '';
  const trigger = values.triggerType === 'event' ? { type: 'event', name: values.eventName ?? '', contactBookId } : { type: values.triggerType ?? '', contactBookId };
  try {
    const body = { name: values.name ?? '', trigger, steps: [FIRST_STEP], allowReentry: values.allowReentry === 'true' };
    const created = await callApi<Automation>(c, deps, 'post', '/automations', { body });
    return done(c, automationPath(created.id), `Automation “${created.name}” created as a draft`);
  } catch (error) {
    return newPage(c, deps, { values, errors: newErrors(mistakes(error)), status: 400 });
  }
}

/** A step in a line of words: what it does, with the names of the templates it sends. */
function stepWords(step: Step, names: Map<string, string>): Html {
  switch (step.type) {
    case 'wait':
      return html`Wait ${step.duration}`;
    case 'send':
      return html`Send “${names.get(step.templateId) ?? step.templateId}” from ${step.from}${step.subject ? html` with the subject “${step.subject}”` : ''}`;
    case 'condition':
      return html`If the contact matches: <div class="filter-words">${filterInWords(step.filter)}</div>`;
    case 'update_contact':
      return html`Set ${Object.entries(step.properties).map(([name, value], i) => html`${i ? ', ' : ''}<code>${name}</code> to “${value}”`)}`;
    case 'exit':
      return html`Exit: the run ends here`;
  }
}

type Counter = Automation['counters'][number];
const COUNTERS = ['entered', 'waiting', 'completed', 'exited'] as const;

const counters = (counter: Counter | undefined) =>
  html`<p class="step-counters">${COUNTERS.map((key) => html`<span>${key} <strong data-counter="${key}">${count(counter?.[key] ?? 0)}</strong></span>`)}</p>`;

/** What the step tree is drawn with; `changes`: whether the person may change the steps (and so gets their buttons). */
type TreeContext = { c: C; automation: Automation; names: Map<string, string>; byStep: Map<string, Counter>; changes: boolean };

function stepActions(tree: TreeContext, step: Step, index: number, length: number) {
  const { c, automation } = tree;
  const base = `${automationPath(automation.id)}/steps/${encodeURIComponent(step.id)}`;
  const fields = { version: automation.updatedAt };
  return html`<div class="row-actions step-actions"><a class="button secondary" href="${base}">Edit</a>${index > 0 ? actionButton(c, `${base}/up`, 'Move up', { kind: 'secondary', fields }) : ''}${
    index < length - 1 ? actionButton(c, `${base}/down`, 'Move down', { kind: 'secondary', fields }) : ''
  }${actionButton(c, `${base}/remove`, 'Remove', {
    kind: 'danger',
    fields,
    confirm: step.type === 'condition' ? 'Remove this condition and the steps under it? Runs at them go on to the next step kept.' : 'Remove this step? Runs at it go on to the next step.',
  })}</div>`;
}

const addHere = (automation: Automation, place: Place) =>
  html`<a class="add-step" href="${automationPath(automation.id)}/steps/new?${new URLSearchParams({ place })}">+ Add a step here</a>`;

/** The steps as nested lists, a condition's branches under it, each step with its counters and its actions. */
function stepTree(tree: TreeContext, steps: Step[], place: Place): Html {
  return html`<ol class="steps">${steps.map(
    (step, index) => html`<li class="step step-${step.type}" data-step="${step.id}">
<div class="step-head"><span class="step-type">${STEP_LABELS[step.type]}</span> <code class="step-id">${step.id}</code></div>
<div class="step-words">${stepWords(step, tree.names)}</div>
${counters(tree.byStep.get(step.id))}
${tree.changes ? stepActions(tree, step, index, steps.length) : ''}
${step.type === 'condition'
  ? html`<div class="branches">${(['then', 'else'] as const).map(
      (branch) => html`<div class="branch branch-${branch}"><p class="branch-head">${branch === 'then' ? 'Then (it matches)' : 'Else (it does not)'}</p>${
        step[branch].length ? stepTree(tree, step[branch], branchPlace(step.id, branch)) : html`<p class="muted">No steps: the run goes on after the condition.</p>`
      }${tree.changes ? addHere(tree.automation, branchPlace(step.id, branch)) : ''}</div>`,
    )}</div>`
  : ''}
</li>`,
  )}</ol>${place === TOP && tree.changes ? addHere(tree.automation, TOP) : ''}`;
}

/** Where a new step goes, in words. */
function placeWords(place: Place): string {
  if (place === TOP) return 'at the end';
  const [id, branch] = place.split(':');
  return `at the end of “${branch === 'then' ? 'then' : 'else'}” of condition ${id}`;
}

const STATUS_MOVES = {
  DRAFT: [{ label: 'Activate', status: 'ACTIVE' }],
  ACTIVE: [{ label: 'Pause', status: 'PAUSED' }],
  PAUSED: [{ label: 'Resume', status: 'ACTIVE' }],
} as const;

type PageProblems = { errors?: readonly ErrorDetail[]; stepsText?: string; status?: ContentfulStatusCode };

async function automationPage(c: C, deps: AppDeps, automationId: string, problems: PageProblems = {}) {
  const automation = await getAutomation(c, deps, automationId);
  const [allBooks, allTemplates] = await Promise.all([books(c, deps), templates(c, deps)]);
  const base = automationPath(automation.id);
  const changes = mayChange(c, 'automations');
  const tree: TreeContext = { c, automation, names: new Map(allTemplates.map((t) => [t.id, t.name])), byStep: new Map(automation.counters.map((counter) => [counter.stepId, counter])), changes };
  const errors = problems.errors ?? [];
  const runs = html`<a class="button secondary" href="${base}/runs">Runs</a>`;
  const actions = !changes
    ? runs
    : html`${STATUS_MOVES[automation.status].map((move) => actionButton(c, `${base}/status`, move.label, { kind: move.status === 'PAUSED' ? 'secondary' : undefined, fields: { status: move.status } }))}
${runs}<a class="button secondary danger-link" href="${base}/delete">Delete</a>`;
  return page(c, {
    title: automation.name,
    section: 'Automations',
    status: problems.status,
    body: html`${STYLES}<p><a href="/automations">← Automations</a></p>
${heading(automation.name, actions)}
<div class="cards">${card('Status', automation.status)}${card('Active runs', count(automation.runs.active), 'at a step now')}${card('Completed', count(automation.runs.completed), 'walked to the end')}${card('Exited', count(automation.runs.exited), 'left before the end')}</div>
<div class="grid-2">
<section class="panel">
<h2>Details</h2>
<dl class="facts">
<dt>Status</dt><dd>${badge(automation.status)}${automation.status === 'PAUSED' ? html` <small class="muted">its runs wait where they are; new contacts wait at the first step</small>` : ''}</dd>
<dt>Trigger</dt><dd>${triggerWords(automation)}</dd>
<dt>Contact book</dt><dd>${bookName(allBooks, automation.trigger.contactBookId)}</dd>
<dt>Reentry</dt><dd>${automation.allowReentry ? 'a contact may walk it again once a run ends' : 'a contact walks it once'}</dd>
<dt>Created</dt><dd>${time(automation.createdAt)}</dd>
<dt>Updated</dt><dd>${time(automation.updatedAt)}</dd>
<dt>ID</dt><dd>${copyable(automation.id)}</dd>
</dl>
</section>
${changes ? settingsForm(c, automation) : ''}
</div>
<h2 id="steps">Steps</h2>
${errors.length > 0 ? html`<div class="form-error" role="alert">The steps were not saved:${problemList(errors)}</div>` : ''}
<div class="panel step-tree">${stepTree(tree, automation.steps as Step[], TOP)}</div>
${changes ? stepForms(c, automation, problems) : ''}`,
  });
}

/** The automation's name and reentry, to change. */
function settingsForm(c: C, automation: Automation) {
  return html`<section class="panel">
<h2>Settings</h2>
<form class="stack" method="post" action="${automationPath(automation.id)}/settings">${csrfField(c)}
${field('name', 'Name', { value: automation.name, required: true })}
<label class="check"><input type="checkbox" name="allowReentry" value="true"${automation.allowReentry ? html` checked` : ''}> Let a contact walk it again once a run of theirs ends</label>
<div class="row-actions"><button type="submit" class="secondary">Save settings</button></div>
</form>
</section>`;
}

/** Adding a step where the person chooses, and the whole list as JSON. */
function stepForms(c: C, automation: Automation, problems: PageProblems) {
  const base = automationPath(automation.id);
  return html`<form class="filters panel" method="get" action="${base}/steps/new">
${select('type', 'Step', STEP_TYPES.map((type) => ({ value: type, label: STEP_LABELS[type] })), { value: 'send' })}
${select('place', 'Where', placesOf(automation.steps as Step[]).map((place) => ({ value: place.value, label: placeWords(place.value) })), { value: TOP })}
<button type="submit" class="secondary">Add a step</button>
</form>
<details class="panel"${problems.stepsText === undefined ? '' : html` open`}><summary>Steps as JSON</summary>
<form class="stack" method="post" action="${base}/steps">${csrfField(c)}<input type="hidden" name="version" value="${automation.updatedAt}">
${textArea('steps', 'Steps', { value: problems.stepsText ?? JSON.stringify(automation.steps, null, 2), rows: 16, hint: 'The whole list as the API takes it. Keep each step’s id to keep its runs on it; a step without one is new.' })}
<div class="row-actions"><button type="submit" class="secondary">Save steps</button></div>
</form>
</details>`;
}

const problemList = (errors: readonly ErrorDetail[]) => html`<ul>${errors.map((error) => html`<li>${error.path ? html`<code>${error.path}</code> ` : ''}${error.message}</li>`)}</ul>`;

/** A change to refuse: the page was loaded before the steps last changed, so its edit would undo that one. */
const STALE = 'the automation changed since this page was loaded: here it is as it is now, to make the change again';

/** PATCHes the steps, unless they changed since the form was loaded (the service refuses it: 409). */
async function saveSteps(c: C, deps: AppDeps, automation: Automation, version: string | undefined, steps: StepInput[]) {
  try {
    return await callApi<Automation>(c, deps, 'patch', ROUTE, { params: { automationId: automation.id }, body: { steps, ifUpdatedAt: version ?? '' } });
  } catch (error) {
    if (error instanceof ApiError && error.code === 'CONFLICT') throw new ApiError('CONFLICT', STALE);
    throw error;
  }
}

/** A refusal of the steps' change to show: the service's details, or the conflict; anything else is thrown on. */
function refusal(error: unknown): ErrorDetail[] {
  if (error instanceof ApiError && error.code === 'CONFLICT') return [{ path: '', message: error.message }];
  return mistakes(error);
}

async function stepFormState(c: C, deps: AppDeps, automation: Automation, state: Omit<StepFormState, 'automation' | 'templates' | 'verifiedDomains'>): Promise<StepFormState> {
  const [allTemplates, verified] = await Promise.all([templates(c, deps), verifiedDomains(c, deps)]);
  return { ...state, automation, templates: allTemplates, verifiedDomains: verified };
}

const stepTypeOf = (value: string | undefined): StepType => {
  if (STEP_TYPES.includes(value as StepType)) return value as StepType;
  throw new ApiError('BAD_REQUEST', `No step type “${value ?? ''}”: one of ${STEP_TYPES.join(', ')}`);
};

const sendStepChoices = (steps: StepInput[], step: StepInput, names: Map<string, string>) =>
  sendStepsBefore(steps, step).map((send) => ({ id: send.id, label: `“${names.get(send.templateId) ?? send.templateId}” (${send.id})` }));

/** The step form again with what the service said of the steps, each error beside the part of the step it names. */
async function refusedStep(c: C, deps: AppDeps, automation: Automation, form: { type: StepType; values: Record<string, string>; place?: Place; step?: Step }, errors: StepErrors, edited: StepInput[] | null, draft: StepInput | null) {
  const names = new Map((await templates(c, deps)).map((t) => [t.id, t.name]));
  const state = await stepFormState(c, deps, automation, {
    type: form.type,
    values: form.values,
    errors,
    status: errors.others.some((e) => e.message === STALE) ? 409 : 400,
    step: form.step,
    place: form.place === undefined ? undefined : { value: form.place, words: placeWords(form.place) },
    sendSteps: edited && draft ? sendStepChoices(edited, draft, names) : [],
  });
  return stepForm(c, state);
}

/** Saves a new or changed step (the whole list with it), or shows its form again with the service's errors. */
async function submitStep(c: C, deps: AppDeps, stepId?: string) {
  // Refused before the step is read, as the API would refuse the call.
  assertMayChange(c, 'automations');
  const automation = await getAutomation(c, deps, c.req.param('id')!);
  const values = await formValues(c);
  const type = stepTypeOf(values.type);
  const current = automation.steps as Step[];
  const step = stepId === undefined ? undefined : (findStep(current, stepId) ?? undefined);
  if (stepId !== undefined && !step) throw notFound('Step');
  const place = stepId === undefined ? (values.place ?? TOP) : undefined;
  if (place !== undefined && !placeExists(current, place)) throw notFound('Place for the step');
  const form = { type, values, place, step };
  let edit: ReturnType<typeof addStep> = null;
  try {
    const draft = stepFromValues(type, values);
    edit = step ? replaceStep(current, step.id, draft) : addStep(current, place!, draft);
    await saveSteps(c, deps, automation, values.version, edit!.steps);
  } catch (error) {
    const details = refusal(error);
    // A filter that is not JSON is refused before there is a list: its path is the step's own.
    const errors = edit ? stepErrors(details, pathOf(edit.steps, edit.step)) : stepErrors(details, null);
    return refusedStep(c, deps, automation, form, errors, edit?.steps ?? null, edit?.step ?? null);
  }
  return done(c, `${automationPath(automation.id)}#steps`, step ? `Step ${step.id} saved` : `${STEP_LABELS[type]} step added`);
}

async function stepPage(c: C, deps: AppDeps, automation: Automation, form: { type: StepType; step?: Step; place?: Place }) {
  const current = automation.steps as Step[];
  const names = new Map((await templates(c, deps)).map((t) => [t.id, t.name]));
  // The send steps a condition may name are those before it: where it is, or where it would go.
  const located = form.step ? { steps: current as StepInput[], step: findStep(current, form.step.id) as StepInput } : addStep(current, form.place!, { type: 'exit' });
  const state = await stepFormState(c, deps, automation, {
    type: form.type,
    values: form.step ? stepValues(form.step) : form.type === 'condition' ? { filter: JSON.stringify({ all: [{ field: 'subscribed', op: 'eq', value: true }] }, null, 2) } : {},
    step: form.step,
    place: form.place === undefined ? undefined : { value: form.place, words: placeWords(form.place) },
    sendSteps: located ? sendStepChoices(located.steps, located.step, names) : [],
  });
  return stepForm(c, state);
}

/** A change made on the automation's page (a move, a removal, the JSON): saved, or the page again with the service's errors. */
async function changeSteps(c: C, deps: AppDeps, change: (steps: Step[], values: Record<string, string>) => StepInput[] | null, stepsText?: (values: Record<string, string>) => string) {
  assertMayChange(c, 'automations');
  const automation = await getAutomation(c, deps, c.req.param('id')!);
  const values = await formValues(c);
  try {
    const steps = change(automation.steps as Step[], values);
    if (!steps) throw notFound('Step');
    await saveSteps(c, deps, automation, values.version, steps);
  } catch (error) {
    if (error instanceof ApiError && error.code === 'NOT_FOUND') throw error;
    const errors = refusal(error);
    const status = errors.some((e) => e.message === STALE) ? 409 : 400;
    return automationPage(c, deps, automation.id, { errors, status, stepsText: stepsText?.(values) });
  }
  return done(c, `${automationPath(automation.id)}#steps`, 'Steps saved');
}

/** The JSON box's steps, or a 400 at `steps` when it is not JSON. */
function typedSteps(values: Record<string, string>): StepInput[] {
  try {
    return JSON.parse(values.steps ?? '') as StepInput[];
  } catch (error) {
    throw new ApiError('VALIDATION_ERROR', 'Invalid input', [{ path: 'steps', message: `must be JSON: ${(error as Error).message}` }]);
  }
}

/** What kind of step to add at `place`: each kind a link to its form. */
function typeChooser(c: C, automation: Automation, place: Place) {
  const base = automationPath(automation.id);
  return page(c, {
    title: 'New step',
    section: 'Automations',
    body: html`${STYLES}<p><a href="${base}">← ${automation.name}</a></p>
${heading('New step')}
<div class="panel"><p class="muted">A step ${placeWords(place)}:</p>
<ul class="step-kinds">${STEP_TYPES.map((type) => html`<li><a class="button secondary" href="${base}/steps/new?${new URLSearchParams({ type, place })}">${STEP_LABELS[type]}</a></li>`)}</ul></div>`,
  });
}

const MOVES = {
  up: (steps: Step[], stepId: string) => moveStep(steps, stepId, -1),
  down: (steps: Step[], stepId: string) => moveStep(steps, stepId, 1),
  remove: (steps: Step[], stepId: string) => removeStep(steps, stepId),
} as const;

function deletePage(c: C, automation: Automation) {
  const base = automationPath(automation.id);
  return page(c, {
    title: `Delete ${automation.name}`,
    section: 'Automations',
    body: html`<p><a href="${base}">← ${automation.name}</a></p>
${heading(`Delete “${automation.name}”?`)}
<form class="stack panel" method="post" action="${base}/delete">${csrfField(c)}
<p>Its ${count(automation.runs.active)} active run${automation.runs.active === 1 ? '' : 's'} end now (EXITED, each reported to webhooks), and the automation and its runs are gone. Mail it already sent stays under Emails.</p>
<div class="row-actions"><button type="submit" class="danger">Delete automation</button><a class="button secondary" href="${base}">Cancel</a></div>
</form>`,
  });
}

/** The builder's live count of a condition: JSON for segments.js, as the segment form's count answers. */
async function countCondition(c: C, deps: AppDeps) {
  const automation = await getAutomation(c, deps, c.req.param('id')!);
  const { filter } = await formValues(c);
  try {
    const parsed = JSON.parse(filter ?? '') as Filter;
    if (parsed && typeof parsed === 'object' && namedSteps(parsed).length > 0) return c.json({ text: 'Not counted now: it reads the mail a send step sent in each run' });
  } catch {
    // Not JSON: counting it says so, at its path.
  }
  try {
    const book = await getBook(c, deps, automation.trigger.contactBookId);
    const matched = await countTyped(c, deps, book.id, filter ?? '');
    return c.json({ count: matched, text: countWords(matched, book) });
  } catch (error) {
    return c.json({ errors: mistakes(error) }, 400);
  }
}

/**
 * Automations: the list with their runs, a new one (a trigger on a contact book), and one
 * automation with its status moves, settings, step tree with counters, step editor and its runs.
 * Every read and change is the API's own call as the person's team; the step editor sends the
 * whole list, each step with its id, as PATCH takes it.
 */
export function automationsPages(deps: AppDeps) {
  const app = section(deps, '/automations');
  app.get('/', listPage(deps));
  app.get('/new', (c) => {
    assertMayChange(c, 'automations');
    return newPage(c, deps, { values: {} });
  });
  app.post('/new', (c) => createAutomation(c, deps));

  app.get('/:id', (c) => automationPage(c, deps, c.req.param('id')));

  app.post('/:id/status', async (c) => {
    const automationId = c.req.param('id');
    const { status } = await formValues(c);
    const saved = await callApi<Automation>(c, deps, 'patch', ROUTE, { params: { automationId }, body: { status } });
    return done(c, automationPath(automationId), saved.status === 'PAUSED' ? 'Automation paused: its runs wait where they are until you resume it' : 'Automation active: contacts it starts walk its steps');
  });

  app.post('/:id/settings', async (c) => {
    const automationId = c.req.param('id');
    const values = await formValues(c);
    try {
      await callApi(c, deps, 'patch', ROUTE, { params: { automationId }, body: { name: values.name ?? '', allowReentry: values.allowReentry === 'true' } });
    } catch (error) {
      return automationPage(c, deps, automationId, { errors: invalidInput(error).details, status: 400 });
    }
    return done(c, automationPath(automationId), 'Settings saved');
  });

  app.get('/:id/delete', async (c) => {
    assertMayChange(c, 'automations');
    return deletePage(c, await getAutomation(c, deps, c.req.param('id')));
  });
  app.post('/:id/delete', async (c) => {
    const automation = await getAutomation(c, deps, c.req.param('id'));
    await callApi(c, deps, 'delete', ROUTE, { params: { automationId: automation.id } });
    return done(c, '/automations', `Automation “${automation.name}” deleted`);
  });

  app.post('/:id/count', (c) => countCondition(c, deps));

  app.get('/:id/steps/new', async (c) => {
    assertMayChange(c, 'automations');
    const automation = await getAutomation(c, deps, c.req.param('id'));
    const place = c.req.query('place') || TOP;
    if (!placeExists(automation.steps as Step[], place)) throw notFound('Place for the step');
    const type = c.req.query('type');
    if (!type) return typeChooser(c, automation, place);
    return stepPage(c, deps, automation, { type: stepTypeOf(type), place });
  });
  app.post('/:id/steps/new', (c) => submitStep(c, deps));
  app.post('/:id/steps', (c) => changeSteps(c, deps, (_, values) => typedSteps(values), (values) => values.steps ?? ''));

  app.get('/:id/steps/:stepId', async (c) => {
    assertMayChange(c, 'automations');
    const automation = await getAutomation(c, deps, c.req.param('id'));
    const step = findStep(automation.steps as Step[], c.req.param('stepId'));
    if (!step) throw notFound('Step');
    return stepPage(c, deps, automation, { type: step.type, step });
  });
  app.post('/:id/steps/:stepId', (c) => submitStep(c, deps, c.req.param('stepId')));
  app.post('/:id/steps/:stepId/:move{up|down|remove}', (c) =>
    changeSteps(c, deps, (steps) => MOVES[c.req.param('move') as keyof typeof MOVES](steps, c.req.param('stepId'))),
  );

  runPages(app, deps);
  return app;
}
