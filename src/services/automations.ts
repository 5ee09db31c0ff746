import { completeSteps, movedSteps, planOf, templateIdsOf, walkSteps, type Step, type StepInput, type Trigger } from '../audience/automation-steps.js';
import * as runs from '../data/automation-runs.js';
import * as definitions from '../data/automations.js';
import type { AutomationRow, AutomationStatus } from '../data/automations.js';
import { findContact } from '../data/contacts.js';
import { findTemplates } from '../data/templates.js';
import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import { audit } from '../events/audit.js';
import { contactEvent, reportRuns, runsEnded } from '../events/automations.js';
import { runData } from '../events/payloads.js';
import { ApiError, conflict, notFound, type ErrorDetail } from '../errors.js';
import { newId } from '../ids.js';
import { fieldPath, validationError } from '../validation.js';
import { assertBookInScope, assertTeamWide, type Caller } from './caller.js';
import { createContact, requireBook, type ContactDeps } from './contacts.js';
import { assertVerifiedSender } from './verified-sender.js';

export type AutomationDeps = ContactDeps & Pick<Deps, 'signals'>;

export const PAGE_SIZE = 30;
const TEAM_WIDE = 'automations serve a contact book of the whole team, so only a key for the whole team may reach them';

export type CreateAutomationInput = { name: string; trigger: Trigger; steps: StepInput[]; status?: 'DRAFT' | 'ACTIVE'; allowReentry?: boolean };
export type UpdateAutomationInput = { name?: string; steps?: StepInput[]; status?: 'ACTIVE' | 'PAUSED'; allowReentry?: boolean; ifUpdatedAt?: string };

function toAutomation(row: AutomationRow) {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    trigger: row.trigger_type === 'event'
      ? { type: 'event' as const, name: row.trigger_event!, contactBookId: row.contact_book_id }
      : { type: 'contact.added' as const, contactBookId: row.contact_book_id },
    allowReentry: row.allow_reentry,
    steps: row.steps,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The automation with its counters per step (in step order) and its runs by status. */
async function withCounters(db: Db, row: AutomationRow) {
  const [counts, totals] = await Promise.all([definitions.stepCounts(db, row.team_id, row.id), definitions.runTotals(db, row.team_id, row.id)]);
  const byStep = new Map(counts.map((count) => [count.step_id, count]));
  const counters = [...planOf(row.steps).keys()].map((stepId) => {
    const { completed = 0, exited = 0, waiting = 0 } = byStep.get(stepId) ?? {};
    // A run at a step waits there, went past it, or ended at it: those that came to it are the three.
    return { stepId, entered: waiting + completed + exited, waiting, completed, exited };
  });
  return { ...toAutomation(row), counters, runs: { active: totals.ACTIVE, completed: totals.COMPLETED, exited: totals.EXITED } };
}

async function requireAutomation(db: Db, caller: Caller, automationId: string, forUpdate = false) {
  assertTeamWide(caller, TEAM_WIDE);
  const row = await definitions.findAutomation(db, caller.teamId, automationId, forUpdate);
  if (!row) throw notFound('Automation');
  return row;
}

/**
 * The steps with their ids, every rule checked: each template one of the team's, each sender a
 * verified domain of the team, and the shape's own rules (ids, nesting, the steps conditions name).
 * A 400 naming every problem's path otherwise.
 */
async function checkedSteps(db: Db, deps: AutomationDeps, caller: Caller, input: StepInput[]): Promise<Step[]> {
  const { steps, problems } = completeSteps(input, () => newId(10));
  const issues: ErrorDetail[] = problems.map((problem) => ({ path: fieldPath(problem.path), message: problem.message }));
  const templates = new Set((await findTemplates(db, caller.teamId, templateIdsOf(steps))).map((row) => row.id));
  for (const { step, path } of walkSteps(steps)) {
    if (step.type !== 'send') continue;
    if (!templates.has(step.templateId)) issues.push({ path: fieldPath([...path, 'templateId']), message: `no template ${step.templateId} in this team` });
    try {
      await assertVerifiedSender({ ...deps, db }, caller.teamId, step.from, fieldPath([...path, 'from']));
    } catch (error) {
      if (!(error instanceof ApiError) || !error.details) throw error;
      issues.push(...error.details);
    }
  }
  if (issues.length > 0) throw validationError(issues);
  return steps;
}

export async function createAutomation(deps: AutomationDeps, caller: Caller, input: CreateAutomationInput) {
  assertTeamWide(caller, TEAM_WIDE);
  const row = await deps.db.transaction().execute(async (tx) => {
    const book = await findBook(tx, caller, input.trigger.contactBookId);
    const steps = await checkedSteps(tx, deps, caller, input.steps);
    const created = await definitions.insertAutomation(tx, {
      teamId: caller.teamId, id: newId(), now: new Date(),
      name: input.name, status: input.status ?? 'DRAFT', contact_book_id: book.id,
      trigger_type: input.trigger.type, trigger_event: input.trigger.type === 'event' ? input.trigger.name : null,
      allow_reentry: input.allowReentry ?? false, steps, template_ids: templateIdsOf(steps),
    });
    await audit(tx, caller, { action: 'automation.created', targetType: 'automation', targetId: created.id });
    return created;
  });
  return withCounters(deps.db, row);
}

/** The trigger's book: one of the team's (400 naming trigger.contactBookId otherwise), kept until the automation is stored. */
async function findBook(tx: Db, caller: Caller, bookId: string) {
  try {
    return await requireBook(tx, caller.teamId, bookId, 'keyShare');
  } catch (error) {
    if (error instanceof ApiError && error.code === 'NOT_FOUND') throw validationError([{ path: 'trigger.contactBookId', message: `no contact book ${bookId} in this team` }]);
    throw error;
  }
}

export async function listAutomations(deps: AutomationDeps, caller: Caller, query: { page: number }) {
  assertTeamWide(caller, TEAM_WIDE);
  const { rows, total } = await definitions.listAutomations(deps.db, caller.teamId, { offset: (query.page - 1) * PAGE_SIZE, limit: PAGE_SIZE });
  return { data: await Promise.all(rows.map((row) => withCounters(deps.db, row))), totalPage: Math.ceil(total / PAGE_SIZE) };
}

export async function getAutomation(deps: AutomationDeps, caller: Caller, { automationId }: { automationId: string }) {
  return withCounters(deps.db, await requireAutomation(deps.db, caller, automationId));
}

/**
 * Renames it, changes its steps, activates, pauses or resumes it, unless it changed since
 * `ifUpdatedAt` (409). New steps keep the runs at every
 * step whose id they keep; a run at a step they drop goes on to the first step after it (in the
 * steps it was walking) that they keep, or completes. All in one transaction, which waits for a
 * runner's batch of its runs to commit.
 */
export async function updateAutomation(deps: AutomationDeps, caller: Caller, { automationId, ...changes }: { automationId: string } & UpdateAutomationInput) {
  const row = await deps.db.transaction().execute(async (tx) => {
    const current = await requireAutomation(tx, caller, automationId, true);
    // Checked under the row's lock: a change made against what another change replaced is refused whole.
    if (changes.ifUpdatedAt !== undefined && changes.ifUpdatedAt !== current.updated_at.toISOString()) {
      throw conflict(`Automation ${automationId} changed at ${current.updated_at.toISOString()}, after ifUpdatedAt: read it again and make the change again`);
    }
    const now = new Date();
    const set: Partial<definitions.AutomationWrite> = {};
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.allowReentry !== undefined) set.allow_reentry = changes.allowReentry;
    if (changes.status !== undefined) set.status = changes.status satisfies AutomationStatus;
    if (changes.steps !== undefined) {
      const steps = await checkedSteps(tx, deps, caller, changes.steps);
      const ended = await runs.moveRunsOffSteps(tx, { teamId: caller.teamId, id: automationId, reentry: changes.allowReentry ?? current.allow_reentry }, movedSteps(current.steps, steps), now);
      await reportRuns(tx, 'automation.run_completed', ended, now);
      Object.assign(set, { steps, template_ids: templateIdsOf(steps) });
    }
    const updated = await definitions.updateAutomation(tx, caller.teamId, automationId, { ...set, now });
    await audit(tx, caller, { action: 'automation.updated', targetType: 'automation', targetId: automationId });
    return updated;
  });
  if (row.status === 'ACTIVE') deps.signals.emit('automationsDue');
  return withCounters(deps.db, row);
}

/** Deletes it; its active runs end first (EXITED, each reported), then go with it. */
export async function deleteAutomation(deps: AutomationDeps, caller: Caller, { automationId }: { automationId: string }) {
  return deps.db.transaction().execute(async (tx) => {
    await requireAutomation(tx, caller, automationId, true);
    await runsEnded(tx, { teamId: caller.teamId, automationId }, 'automation deleted', new Date());
    await definitions.deleteAutomation(tx, caller.teamId, automationId);
    await audit(tx, caller, { action: 'automation.deleted', targetType: 'automation', targetId: automationId });
    return { id: automationId, success: true };
  });
}

export async function listRuns(
  deps: AutomationDeps,
  caller: Caller,
  query: { automationId: string; page: number; limit: number; contactId?: string; status?: runs.RunStatus },
) {
  const { automationId, page, limit, ...filter } = query;
  await requireAutomation(deps.db, caller, automationId);
  const { rows, total } = await runs.listRuns(deps.db, caller.teamId, automationId, filter, { offset: (page - 1) * limit, limit });
  return {
    data: rows.map((row) => ({ ...runData(row), nextAt: row.next_at?.toISOString() ?? null, history: row.history })),
    total,
  };
}

export type EventInput = { name: string; contactBookId: string; email?: string; contactId?: string; properties?: Record<string, string> };

/**
 * An event of a contact of the book (by id, or by address: a new address becomes a contact, as
 * POST contacts makes one, which may itself start the book's contact.added automations). The
 * automations waiting for this event start a run for the contact, the event's properties theirs.
 */
export async function recordEvent(deps: AutomationDeps, caller: Caller, input: EventInput) {
  const { contactBookId: bookId } = input;
  // An event is data the team's application reports, not a change made to the account: the contact
  // it brings is data too, and stays out of the audit log as the event does.
  const unrecorded = { ...caller, actor: undefined };
  const contactId = input.contactId ?? (await createContact(deps, unrecorded, { contactBookId: bookId, contact: { email: input.email! } })).contactId;
  const started = await deps.db.transaction().execute(async (tx) => {
    const book = await requireBook(tx, caller.teamId, bookId, 'keyShare');
    await assertBookInScope(tx, caller, book);
    const contact = await findContact(tx, caller.teamId, bookId, { id: contactId });
    if (!contact) throw notFound('Contact');
    return contactEvent(tx, { teamId: caller.teamId, bookId, contactId, name: input.name, properties: input.properties ?? {} }, new Date());
  });
  if (started > 0) deps.signals.emit('automationsDue');
  return { id: newId(), contactId, runsStarted: started };
}
