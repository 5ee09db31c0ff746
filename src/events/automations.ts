import type { Db } from '../db/connection.js';
import { enterRuns, exitRuns, runChanges, type RunKey, type RunScope } from '../data/automation-runs.js';
import { listening, report } from './outbox.js';
import { runEvent, type RunEventType } from './payloads.js';

/**
 * Reports a run event for each run a statement of the caller's transaction changed, to the
 * webhooks that hear it; the runs are read back (with their contacts' addresses) only for those.
 */
export async function reportRuns(tx: Db, type: RunEventType, runs: RunKey[], now: Date): Promise<void> {
  if (runs.length === 0) return;
  const heard = await listening(tx, [...new Set(runs.map((run) => run.team_id))]);
  const changes = await runChanges(tx, runs.filter((run) => heard(run.team_id, type, null)));
  await report(tx, changes.map((run) => ({ teamId: run.team_id, subjectKey: run.id, domainId: null, at: now, event: runEvent(type, run) })));
}

/**
 * Contacts just added to a book (subscribed, or confirmed in a double opt-in book) enter the
 * automations it triggers, in the caller's transaction: one statement for all of them. Answers
 * how many runs started.
 */
export async function contactsAdded(tx: Db, added: { teamId: number; bookId: string; contactIds: string[] }, now: Date): Promise<number> {
  return reportStarted(tx, await enterRuns(tx, { ...added, trigger: { type: 'contact.added' }, properties: {}, now }), now);
}

async function reportStarted(tx: Db, started: RunKey[], now: Date): Promise<number> {
  await reportRuns(tx, 'automation.run_started', started, now);
  return started.length;
}

/** A contact's event (POST /v1/events) starts the automations of its book that wait for it. */
export async function contactEvent(tx: Db, event: { teamId: number; bookId: string; contactId: string; name: string; properties: Record<string, string> }, now: Date) {
  const { teamId, bookId, contactId, name, properties } = event;
  return reportStarted(tx, await enterRuns(tx, { teamId, bookId, contactIds: [contactId], trigger: { type: 'event', name }, properties, now }), now);
}

/**
 * The active runs in scope end (EXITED, for `reason`: the contacts unsubscribed, bounced or
 * complained; the automation is deleted), each reported, in the caller's transaction.
 */
export async function runsEnded(tx: Db, scope: RunScope, reason: string, now: Date): Promise<void> {
  await reportRuns(tx, 'automation.run_completed', await exitRuns(tx, scope, reason, now), now);
}
