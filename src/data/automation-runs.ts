import { sql, type Selectable } from 'kysely';
import type { Filter } from '../audience/segment-filter.js';
import type { Db } from '../db/connection.js';
import type { AutomationRunsTable, RunHistoryEntry } from '../db/schema.js';
import { filterSql } from './segment-sql.js';
import { sortableIdSql } from './sql-values.js';

export type RunRow = Selectable<AutomationRunsTable>;
export type RunStatus = RunRow['status'];

/** A run that started or ended, as its webhook event tells of it. */
export type RunChange = Pick<RunRow, 'team_id' | 'id' | 'automation_id' | 'contact_book_id' | 'contact_id' | 'status' | 'step_id' | 'exit_reason' | 'started_at' | 'ended_at'> & {
  email: string;
};

const CHANGE_COLUMNS = sql`r.team_id, r.id, r.automation_id, r.contact_book_id, r.contact_id, r.status, r.step_id, r.exit_reason, r.started_at, r.ended_at`;

/**
 * Starts a run of every automation of the book that this trigger sets off (ACTIVE or PAUSED; a
 * paused one holds its new runs at the first step) for each of these contacts still subscribed,
 * in one statement whatever their number, each contact found by its primary key. A contact already
 * in a run of one, or ever in one that takes no reentry, is left out (the unique entry key).
 * Answers the runs started.
 */
export async function enterRuns(
  tx: Db,
  entry: { teamId: number; bookId: string; contactIds: string[]; trigger: { type: 'contact.added' } | { type: 'event'; name: string }; properties: Record<string, string>; now: Date },
): Promise<RunKey[]> {
  if (entry.contactIds.length === 0) return [];
  const { teamId, bookId, trigger, now } = entry;
  const { rows } = await sql<RunKey>`
    INSERT INTO automation_runs (team_id, id, automation_id, contact_book_id, contact_id, entry_key, status, step_id, next_at, properties, started_at)
    SELECT a.team_id, ${sortableIdSql}, a.id, a.contact_book_id, c.id, c.id, 'ACTIVE', a.steps -> 0 ->> 'id', ${now}, ${JSON.stringify(entry.properties)}::jsonb, ${now}
    FROM automations a
    CROSS JOIN unnest(${entry.contactIds}::text[]) AS n(id)
    CROSS JOIN LATERAL (
      SELECT c.id FROM contacts c
      WHERE c.team_id = a.team_id AND c.contact_book_id = a.contact_book_id AND c.id = n.id AND c.subscribed OFFSET 0
    ) c
    WHERE a.team_id = ${teamId} AND a.contact_book_id = ${bookId} AND a.status <> 'DRAFT' AND a.trigger_type = ${trigger.type}
      ${trigger.type === 'event' ? sql`AND a.trigger_event = ${trigger.name}` : sql``}
    ORDER BY a.id, c.id
    ON CONFLICT (team_id, automation_id, entry_key) DO NOTHING
    RETURNING team_id, id`.execute(tx);
  return rows;
}

/** A run as a statement that changed it names it. */
export type RunKey = { team_id: number; id: string };

/** These runs as their events tell of them, each with its contact's address (primary key probes). */
export async function runChanges(tx: Db, keys: RunKey[]): Promise<RunChange[]> {
  if (keys.length === 0) return [];
  const { rows } = await sql<RunChange>`
    SELECT ${CHANGE_COLUMNS}, c.email FROM unnest(${keys.map((key) => key.team_id)}::int[], ${keys.map((key) => key.id)}::text[]) AS n(team_id, id)
    CROSS JOIN LATERAL (SELECT * FROM automation_runs r WHERE r.team_id = n.team_id AND r.id = n.id OFFSET 0) r
    CROSS JOIN LATERAL (
      SELECT c.email FROM contacts c WHERE c.team_id = r.team_id AND c.contact_book_id = r.contact_book_id AND c.id = r.contact_id OFFSET 0
    ) c`.execute(tx);
  return rows;
}

/**
 * A runner stalled inside its batch (a frozen process, a cut network) loses its transaction, and
 * so its runs, after `seconds` idle in it: PostgreSQL's own watchdog over runners.
 */
export async function endBatchIfStalled(tx: Db, seconds: number): Promise<void> {
  await sql`SET LOCAL idle_in_transaction_session_timeout = ${sql.lit(`${seconds}s`)}`.execute(tx);
}

/** A due run as the runner takes it. */
export type DueRun = Pick<RunRow, 'team_id' | 'id' | 'automation_id' | 'contact_book_id' | 'contact_id' | 'step_id' | 'waiting' | 'properties' | 'started_at'>;

/**
 * Locks up to `limit` runs due by `now` of active automations, oldest due first, skipping those
 * another runner holds; the caller's transaction keeps them until it commits, and a runner that
 * dies lets them go with its connection. The active automations are listed first, so that the
 * planner walks automation_runs_due in order and stops at the limit, however many runs are due
 * (a semi-join would have it read and sort every due run for each batch). lockAutomations checks
 * each one's team and status again.
 */
export async function claimDueRuns(tx: Db, now: Date, limit: number): Promise<DueRun[]> {
  const { rows } = await sql<DueRun>`
    SELECT r.team_id, r.id, r.automation_id, r.contact_book_id, r.contact_id, r.step_id, r.waiting, r.properties, r.started_at
    FROM automation_runs r
    WHERE r.status = 'ACTIVE' AND r.next_at <= ${now}
      AND r.automation_id = ANY (ARRAY(SELECT a.id FROM automations a WHERE a.status = 'ACTIVE'))
    ORDER BY r.next_at
    LIMIT ${limit}
    FOR UPDATE OF r SKIP LOCKED`.execute(tx);
  return rows;
}

/**
 * The automations of these runs, each locked against edits, pauses and deletion until the
 * caller's transaction ends; one an edit holds now is skipped (its runs wait for the next pass).
 */
export async function lockAutomations(tx: Db, keys: { teamId: number; id: string }[]) {
  const { rows } = await sql<{ team_id: number; id: string; steps: unknown; allow_reentry: boolean; status: string }>`
    SELECT a.team_id, a.id, a.steps, a.allow_reentry, a.status FROM automations a
    JOIN jsonb_to_recordset(${JSON.stringify(keys.map((key) => ({ team_id: key.teamId, id: key.id })))}::jsonb) AS k(team_id integer, id text)
      ON a.team_id = k.team_id AND a.id = k.id
    FOR KEY SHARE OF a SKIP LOCKED`.execute(tx);
  return rows;
}

/**
 * Which of these runs' contacts the filter matches now, the run's own mail read for `step`
 * conditions. Driven by the batch's ids (a probe of each run's and contact's primary key), never by
 * the team's runs.
 */
export async function runsMatching(tx: Db, teamId: number, runIds: string[], filter: Filter, now: Date): Promise<Set<string>> {
  const { rows } = await sql<{ id: string }>`
    SELECT r.id FROM unnest(${runIds}::text[]) AS b(id)
    JOIN automation_runs r ON r.team_id = ${teamId} AND r.id = b.id
    JOIN contacts c ON c.team_id = r.team_id AND c.contact_book_id = r.contact_book_id AND c.id = r.contact_id
    WHERE ${filterSql(filter, now, sql.ref('r.id'))}`.execute(tx);
  return new Set(rows.map((row) => row.id));
}

/** Sets these properties on the contacts (the others kept); answers the ids changed. */
export async function setContactProperties(tx: Db, book: { teamId: number; bookId: string }, contactIds: string[], properties: Record<string, string>, now: Date) {
  const { rows } = await sql<{ id: string }>`
    UPDATE contacts SET properties = properties || ${JSON.stringify(properties)}::jsonb, updated_at = ${now}
    WHERE team_id = ${book.teamId} AND contact_book_id = ${book.bookId} AND id = ANY(${contactIds}::text[])
      AND NOT properties @> ${JSON.stringify(properties)}::jsonb
    RETURNING id`.execute(tx);
  return rows.map((row) => row.id);
}

/** Where a run goes after a pass: its next step and when it is due, or its end. */
export type RunMove = {
  teamId: number;
  id: string;
  stepId: string | null;
  nextAt: Date | null;
  /** It sits out a wait step until nextAt. */
  waiting: boolean;
  status: RunStatus;
  exitReason: string | null;
  /** The contact may enter again once it ended. */
  reentry: boolean;
  history: RunHistoryEntry[];
};

/** Moves the runs, each with what it did appended to its history, in one statement; answers those that ended. */
export async function moveRuns(tx: Db, moves: RunMove[], now: Date): Promise<RunKey[]> {
  if (moves.length === 0) return [];
  const json = JSON.stringify(
    moves.map((move) => ({
      team_id: move.teamId, id: move.id, step_id: move.stepId, next_ms: move.nextAt?.getTime() ?? null, waiting: move.waiting, status: move.status,
      exit_reason: move.exitReason, reentry: move.reentry, history: move.history,
    })),
  );
  const { rows } = await sql<RunKey & { status: string }>`
    UPDATE automation_runs r SET
      step_id = m.step_id,
      next_at = timestamptz 'epoch' + m.next_ms * interval '1 millisecond',
      waiting = m.waiting,
      status = m.status,
      exit_reason = m.exit_reason,
      history = r.history || m.history,
      ended_at = CASE WHEN m.status <> 'ACTIVE' THEN ${now}::timestamptz END,
      entry_key = CASE WHEN m.status <> 'ACTIVE' AND m.reentry THEN r.id ELSE r.entry_key END
    FROM jsonb_to_recordset(${json}::jsonb) AS m(team_id integer, id text, step_id text, next_ms bigint, waiting boolean, status text, exit_reason text, reentry boolean, history jsonb)
    WHERE r.team_id = m.team_id AND r.id = m.id
    RETURNING r.team_id, r.id, r.status`.execute(tx);
  return rows.filter((row) => row.status !== 'ACTIVE');
}

/** Whose active runs to end: these contacts' (in every automation of their book), one automation's, or these runs. */
export type RunScope = { teamId: number; bookId: string; contactIds: string[] } | { teamId: number; automationId: string } | { teamId: number; runIds: string[] };

/**
 * Ends the active runs in scope (the contacts unsubscribed, bounced or complained; the automation
 * is being deleted; a run failed), each at the step it was at, counted there as exited, in one statement.
 * Answers the runs ended.
 */
export async function exitRuns(tx: Db, scope: RunScope, reason: string, now: Date): Promise<RunKey[]> {
  if ('contactIds' in scope && scope.contactIds.length === 0) return [];
  const inScope =
    'contactIds' in scope
      ? sql`r.team_id = ${scope.teamId} AND r.contact_book_id = ${scope.bookId} AND r.contact_id = ANY(${scope.contactIds}::text[])`
      : 'runIds' in scope
        ? sql`r.team_id = ${scope.teamId} AND r.id = ANY(${scope.runIds}::text[])`
        : sql`r.team_id = ${scope.teamId} AND r.automation_id = ${scope.automationId}`;
  const entry = sql`jsonb_build_array(jsonb_build_object('stepId', r.step_id, 'type', 'exit', 'at', ${now.toISOString()}::text, 'outcome', ${reason}::text))`;
  const { rows } = await sql<RunKey>`
    WITH ended AS (
      UPDATE automation_runs r SET status = 'EXITED', exit_reason = ${reason}, next_at = NULL, waiting = false, ended_at = ${now}, history = r.history || ${entry},
        entry_key = CASE WHEN a.allow_reentry THEN r.id ELSE r.entry_key END
      FROM automations a
      WHERE a.team_id = r.team_id AND a.id = r.automation_id
        AND ${inScope} AND r.status = 'ACTIVE'
      RETURNING r.team_id, r.id, r.automation_id, r.step_id
    ), counted AS (
      ${countsUpsert(sql`SELECT team_id, automation_id, step_id, 0 AS completed, count(*) AS exited FROM ended WHERE step_id IS NOT NULL GROUP BY 1, 2, 3`)}
    )
    SELECT team_id, id FROM ended`.execute(tx);
  return rows;
}

/** Adds to the step counters from `source` (team_id, automation_id, step_id, completed, exited), in key order. */
const countsUpsert = (source: ReturnType<typeof sql>) => sql`
  INSERT INTO automation_step_counts AS k (team_id, automation_id, step_id, completed, exited)
  SELECT * FROM (${source}) s ORDER BY 1, 2, 3
  ON CONFLICT (team_id, automation_id, step_id) DO UPDATE SET completed = k.completed + excluded.completed, exited = k.exited + excluded.exited`;

/** Adds to the step counters: runs that went past a step, and runs that ended at it. */
export async function addStepCounts(tx: Db, counts: { teamId: number; automationId: string; stepId: string; completed: number; exited: number }[]): Promise<void> {
  if (counts.length === 0) return;
  const json = JSON.stringify(counts.map((c) => ({ team_id: c.teamId, automation_id: c.automationId, step_id: c.stepId, completed: c.completed, exited: c.exited })));
  await sql`${countsUpsert(sql`SELECT * FROM jsonb_to_recordset(${json}::jsonb) AS x(team_id integer, automation_id text, step_id text, completed bigint, exited bigint)`)}`.execute(tx);
}

/** Moves the active runs at removed steps to where an edit sends them (null: the end, as completed). */
export async function moveRunsOffSteps(tx: Db, automation: { teamId: number; id: string; reentry: boolean }, moved: Map<string, string | null>, now: Date): Promise<RunKey[]> {
  if (moved.size === 0) return [];
  const json = JSON.stringify([...moved].map(([from, to]) => ({ from_step: from, to_step: to })));
  const { rows } = await sql<RunKey & { status: string }>`
    UPDATE automation_runs r SET
      step_id = m.to_step,
      next_at = CASE WHEN m.to_step IS NULL THEN NULL ELSE LEAST(r.next_at, ${now}::timestamptz) END,
      waiting = false,
      status = CASE WHEN m.to_step IS NULL THEN 'COMPLETED' ELSE 'ACTIVE' END,
      ended_at = CASE WHEN m.to_step IS NULL THEN ${now}::timestamptz END,
      entry_key = CASE WHEN m.to_step IS NULL AND ${automation.reentry} THEN r.id ELSE r.entry_key END,
      history = r.history || jsonb_build_array(jsonb_build_object('stepId', r.step_id, 'type', 'removed', 'at', ${now.toISOString()}::text, 'outcome', 'step removed by an edit'))
    FROM jsonb_to_recordset(${json}::jsonb) AS m(from_step text, to_step text)
    WHERE r.team_id = ${automation.teamId} AND r.automation_id = ${automation.id} AND r.status = 'ACTIVE' AND r.step_id = m.from_step
    RETURNING r.team_id, r.id, r.status`.execute(tx);
  return rows.filter((row) => row.status !== 'ACTIVE');
}

export type RunListing = RunRow & { email: string };

/** A page of the automation's runs, newest first, optionally of one contact or one status. */
export async function listRuns(
  db: Db,
  teamId: number,
  automationId: string,
  filter: { contactId?: string; status?: RunStatus },
  page: { offset: number; limit: number },
): Promise<{ rows: RunListing[]; total: number }> {
  const where = sql`r.team_id = ${teamId} AND r.automation_id = ${automationId}
    ${filter.contactId ? sql`AND r.contact_id = ${filter.contactId}` : sql``}
    ${filter.status ? sql`AND r.status = ${filter.status}` : sql``}`;
  const [list, count] = await Promise.all([
    sql<RunListing>`
      SELECT r.*, c.email FROM automation_runs r
      JOIN contacts c ON c.team_id = r.team_id AND c.contact_book_id = r.contact_book_id AND c.id = r.contact_id
      WHERE ${where} ORDER BY r.started_at DESC, r.id DESC OFFSET ${page.offset} LIMIT ${page.limit}`.execute(db),
    sql<{ n: number }>`SELECT count(*)::int AS n FROM automation_runs r WHERE ${where}`.execute(db),
  ]);
  return { rows: list.rows, total: count.rows[0]!.n };
}
