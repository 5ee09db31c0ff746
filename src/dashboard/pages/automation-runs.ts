import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import type { Step } from '../../audience/automation-steps.js';
import { RUN_STATUSES } from '../../events/contract.js';
import { notFound } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import { callApi } from '../api-call.js';
import { badge, field, heading, page, pager, select, table, time } from '../layout.js';
import type { DashboardEnv } from '../session.js';
import { automationPath, getAutomation, STEP_LABELS, STYLES, type Automation } from './automation-step-form.js';
import { findStep } from './automation-tree.js';
import { breakableAddress, contactPath, pageNumberOf } from './contacts-book.js';
import type { Contact } from './contacts-common.js';

type C = Context<DashboardEnv>;
type Run = {
  id: string;
  contactId: string;
  contactBookId: string;
  email: string;
  status: (typeof RUN_STATUSES)[number];
  stepId: string | null;
  exitReason: string | null;
  startedAt: string;
  endedAt: string | null;
  nextAt: string | null;
  history: { stepId: string; type: string; at: string; outcome?: string; emailId?: string }[];
};

const PAGE_SIZE = 50;
const RUNS_ROUTE = '/automations/{automationId}/runs';
// A contact's runs of one automation: one, or one per reentry.
const CONTACT_RUNS = 100;

const runs = (c: C, deps: AppDeps, automationId: string, query: Record<string, string | undefined>) =>
  callApi<{ data: Run[]; total: number }>(c, deps, 'get', RUNS_ROUTE, { params: { automationId }, query });

const contactRunsPath = (automationId: string, contactId: string) => `${automationPath(automationId)}/contacts/${encodeURIComponent(contactId)}`;

/** The step a run is at, by its id and what kind it is ("removed" when the steps no longer have it). */
function stepCell(automation: Automation, stepId: string | null) {
  if (stepId === null) return html`<span class="muted">—</span>`;
  const step = findStep(automation.steps as Step[], stepId);
  return html`<code>${stepId}</code> <small class="muted">${step ? STEP_LABELS[step.type] : 'no longer a step'}</small>`;
}

const runStatus = (run: Run) => html`${badge(run.status)}${run.exitReason ? html` <small class="muted">${run.exitReason}</small>` : ''}`;

/** The contact of the book with this address, or null: the runs are filtered by contact id. */
async function contactByEmail(c: C, deps: AppDeps, bookId: string, email: string): Promise<Contact | null> {
  const found = await callApi<Contact[]>(c, deps, 'get', '/contactBooks/{contactBookId}/contacts', { params: { contactBookId: bookId }, query: { emails: email, limit: '1' } });
  return found[0] ?? null;
}

async function runsPage(c: C, deps: AppDeps) {
  const automation = await getAutomation(c, deps, c.req.param('id')!);
  const filters = { email: c.req.query('email')?.trim() || undefined, status: c.req.query('status') || undefined };
  const pageNumber = pageNumberOf(c);
  const contact = filters.email ? await contactByEmail(c, deps, automation.trigger.contactBookId, filters.email) : null;
  const list = filters.email && !contact
    ? { data: [], total: 0 }
    : await runs(c, deps, automation.id, { page: String(pageNumber), limit: String(PAGE_SIZE), status: filters.status, contactId: contact?.id });
  const base = `${automationPath(automation.id)}/runs`;
  return page(c, {
    title: `Runs of ${automation.name}`,
    section: 'Automations',
    body: html`<p><a href="${automationPath(automation.id)}">← ${automation.name}</a></p>
${heading('Runs')}
<form class="filters" method="get" action="${base}" role="search">
${field('email', 'Contact email', { type: 'search', value: filters.email, placeholder: 'ann@example.com' })}
${select('status', 'Status', [{ value: '', label: 'All statuses' }, ...RUN_STATUSES.map((status) => ({ value: status, label: status }))], { value: filters.status })}
<button type="submit" class="secondary">Filter</button>
</form>
<p class="muted" data-summary>${list.total.toLocaleString('en')} run${list.total === 1 ? '' : 's'}${filters.email || filters.status ? ' matching' : ''}, newest first.</p>
${table(
  list.data,
  [
    { label: 'Contact', className: 'words', cell: (run) => html`<a href="${contactRunsPath(automation.id, run.contactId)}">${breakableAddress(run.email)}</a>` },
    { label: 'Status', cell: runStatus },
    { label: 'Step', cell: (run) => stepCell(automation, run.stepId) },
    { label: 'Next', cell: (run) => time(run.nextAt) },
    { label: 'Started', cell: (run) => time(run.startedAt) },
  ],
  filters.email && !contact
    ? html`No contact ${filters.email} in the book. <a href="${base}">Show all runs</a>`
    : filters.status || filters.email
      ? html`No run matches these filters. <a href="${base}">Show all runs</a>`
      : 'No runs yet: a contact the trigger starts walks the steps as a run.',
)}
${pager(base, filters, pageNumber, pageNumber * PAGE_SIZE < list.total)}`,
  });
}

/** One run's history: each step it came to, when, and what came of it (the email a send step sent). */
function historyTable(run: Run) {
  return table(
    run.history,
    [
      { label: 'Step', cell: (entry) => html`<code>${entry.stepId}</code>` },
      { label: 'Type', cell: (entry) => entry.type },
      { label: 'At', cell: (entry) => time(entry.at) },
      { label: 'Outcome', cell: (entry) => entry.outcome ?? html`<span class="muted">—</span>` },
      { label: 'Email', className: 'words', cell: (entry) => (entry.emailId ? html`<a href="/emails/${encodeURIComponent(entry.emailId)}">${entry.emailId}</a>` : html`<span class="muted">—</span>`) },
    ],
    'Nothing yet: it is at its first step.',
  );
}

async function contactRunsPage(c: C, deps: AppDeps) {
  const automation = await getAutomation(c, deps, c.req.param('id')!);
  const contactId = c.req.param('contactId')!;
  const list = await runs(c, deps, automation.id, { contactId, limit: String(CONTACT_RUNS) });
  const [first] = list.data;
  if (!first) throw notFound('Run of this contact');
  return page(c, {
    title: `${first.email} in ${automation.name}`,
    section: 'Automations',
    body: html`${STYLES}<p><a href="${automationPath(automation.id)}/runs">← Runs of ${automation.name}</a></p>
${heading(first.email)}
<p class="muted"><a href="${contactPath(first.contactBookId, contactId)}">The contact in its book</a> · ${list.total} run${list.total === 1 ? '' : 's'} of this automation, newest first.</p>
${list.data.map(
  (run) => html`<section class="panel run" data-run="${run.id}">
<h2>Run ${run.id}</h2>
<dl class="facts">
<dt>Status</dt><dd>${runStatus(run)}</dd>
<dt>Step</dt><dd>${stepCell(automation, run.stepId)}</dd>
<dt>Next</dt><dd>${time(run.nextAt)}</dd>
<dt>Started</dt><dd>${time(run.startedAt)}</dd>
<dt>Ended</dt><dd>${time(run.endedAt)}</dd>
</dl>
<h3>History</h3>
${historyTable(run)}
</section>`,
)}`,
  });
}

/** An automation's runs, filtered and paged, and one contact's runs with their history. */
export function runPages(app: Hono<DashboardEnv>, deps: AppDeps) {
  app.get('/:id/runs', (c) => runsPage(c, deps));
  app.get('/:id/contacts/:contactId', (c) => contactRunsPage(c, deps));
}
