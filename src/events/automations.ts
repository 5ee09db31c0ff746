import type { Db } from '../db/connection.js';
import { enterRuns, exitRuns, type RunChange, type RunScope } from '../data/automation-runs.js';
import { listening, report } from './outbox.js';
import { runEvent, type RunEventType } from './payloads.js';

/** Reports a run event for each run, in the caller's transaction, to the webhooks that hear it. */
export async function reportRuns(tx: Db, type: RunEventType, runs: RunChange[], now: Date): Promise<void> {
  if (runs.length === 0) return;
  const heard = await listening(tx, [...new Set(runs.map((run) => run.team_id))]);
  await report(
    tx,
    runs.filter((run) => heard(run.team_id, type, null)).map((run) => ({ teamId: run.team_id, subjectKey: run.id, domainId: null, at: now, event: runEvent(type, run) })),
  );
}

/**
 * Contacts just added to a book (subscribed, or confirmed in a double opt-in book) enter the
 * automations it triggers, in the caller's transaction: one statement for all of them. Answers
 * how many runs started.
 */
export async function contactsAdded(tx: Db, added: { teamId: number; bookId: string; contactIds: string[] }, now: Date): Promise<number> {
  const started = await enterRuns(tx, { ...added, trigger: { type: 'contact.added' }, properties: {}, now });
  await reportRuns(tx, 'automation.run_started', started, now);
  return started.length;
}

/** A contact's event (POST /v1/events) starts the automations of its book that wait for it. */
export async function contactEvent(tx: Db, event: { teamId: number; bookId: string; contactId: string; name: string; properties: Record<string, string> }, now: Date) {
  const { teamId, bookId, contactId, name, properties } = event;
  const started = await enterRuns(tx, { teamId, bookId, contactIds: [contactId], trigger: { type: 'event', name }, properties, now });
  await reportRuns(tx, 'automation.run_started', started, now);
  return started.length;
}

/**
 * The active runs in scope end (EXITED, for `reason`: the contacts unsubscribed, bounced or
 * complained; the automation is deleted), each reported, in the caller's transaction.
 */
export async function runsEnded(tx: Db, scope: RunScope, reason: string, now: Date): Promise<void> {
  await reportRuns(tx, 'automation.run_completed', await exitRuns(tx, scope, reason, now), now);
}
