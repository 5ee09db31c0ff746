import { sql, type Selectable } from 'kysely';
import type { Step } from '../audience/automation-steps.js';
import type { Db } from '../db/connection.js';
import type { AutomationsTable } from '../db/schema.js';

export type AutomationRow = Omit<Selectable<AutomationsTable>, 'steps'> & { steps: Step[] };
export type AutomationStatus = AutomationRow['status'];

export type AutomationWrite = {
  name: string;
  status: AutomationStatus;
  trigger_type: AutomationRow['trigger_type'];
  trigger_event: string | null;
  contact_book_id: string;
  allow_reentry: boolean;
  steps: Step[];
  template_ids: string[];
};

export async function insertAutomation(db: Db, row: AutomationWrite & { teamId: number; id: string; now: Date }): Promise<AutomationRow> {
  const { teamId, id, now, steps, ...fields } = row;
  return (await db
    .insertInto('automations')
    .values({ ...fields, team_id: teamId, id, steps: JSON.stringify(steps), created_at: now, updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow()) as AutomationRow;
}

/** The team's automation; `update` holds it until the caller's transaction ends (an edit, a deletion). */
export async function findAutomation(db: Db, teamId: number, id: string, forUpdate = false): Promise<AutomationRow | undefined> {
  let query = db.selectFrom('automations').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return (await query.executeTakeFirst()) as AutomationRow | undefined;
}

export async function listAutomations(db: Db, teamId: number, page: { offset: number; limit: number }): Promise<{ rows: AutomationRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    db.selectFrom('automations').selectAll().where('team_id', '=', teamId).orderBy('created_at', 'desc').orderBy('id', 'desc').offset(page.offset).limit(page.limit).execute(),
    db.selectFrom('automations').select((eb) => eb.fn.countAll<string>().as('n')).where('team_id', '=', teamId).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows as AutomationRow[], total: Number(count.n) };
}

export async function updateAutomation(db: Db, teamId: number, id: string, set: Partial<AutomationWrite> & { now: Date }): Promise<AutomationRow> {
  const { now, steps, ...fields } = set;
  return (await db
    .updateTable('automations')
    .set({ ...fields, ...(steps !== undefined && { steps: JSON.stringify(steps) }), updated_at: now })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()) as AutomationRow;
}

/** Deletes it with its runs and counters (their keys cascade). */
export async function deleteAutomation(db: Db, teamId: number, id: string): Promise<boolean> {
  const result = await db.deleteFrom('automations').where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The first automation of the team whose send steps use the template, if any. */
export async function automationUsingTemplate(db: Db, teamId: number, templateId: string): Promise<{ id: string; name: string } | undefined> {
  const { rows } = await sql<{ id: string; name: string }>`
    SELECT id, name FROM automations WHERE team_id = ${teamId} AND template_ids @> ARRAY[${templateId}]::text[] ORDER BY created_at LIMIT 1`.execute(db);
  return rows[0];
}

/** Per step: runs that went past it, ended at it, and (live) wait at it now. */
export type StepCounts = { step_id: string; completed: number; exited: number; waiting: number };

export async function stepCounts(db: Db, teamId: number, automationId: string): Promise<StepCounts[]> {
  const { rows } = await sql<StepCounts>`
    SELECT coalesce(k.step_id, w.step_id) AS step_id, coalesce(k.completed, 0)::int AS completed,
      coalesce(k.exited, 0)::int AS exited, coalesce(w.waiting, 0)::int AS waiting
    FROM (SELECT step_id, completed, exited FROM automation_step_counts WHERE team_id = ${teamId} AND automation_id = ${automationId}) k
    FULL JOIN (
      SELECT step_id, count(*) AS waiting FROM automation_runs
      WHERE team_id = ${teamId} AND automation_id = ${automationId} AND status = 'ACTIVE' GROUP BY step_id
    ) w ON w.step_id = k.step_id`.execute(db);
  return rows;
}

/** How the automation's runs stand: active, completed, exited. */
export async function runTotals(db: Db, teamId: number, automationId: string): Promise<Record<'ACTIVE' | 'COMPLETED' | 'EXITED', number>> {
  const { rows } = await sql<{ status: 'ACTIVE' | 'COMPLETED' | 'EXITED'; n: number }>`
    SELECT status, count(*)::int AS n FROM automation_runs WHERE team_id = ${teamId} AND automation_id = ${automationId} GROUP BY status`.execute(db);
  return { ACTIVE: 0, COMPLETED: 0, EXITED: 0, ...Object.fromEntries(rows.map((row) => [row.status, row.n])) };
}
