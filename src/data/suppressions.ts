import type { Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { SuppressionReason, SuppressionsTable } from '../db/schema.js';

export type SuppressionRow = Selectable<SuppressionsTable>;

/** Newest first; the primary key (team_id, email) keeps a team's rows together. */
export async function listSuppressions(db: Db, teamId: number, page: { offset: number; limit: number }) {
  const base = db.selectFrom('suppressions').where('team_id', '=', teamId);
  const [rows, total] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('email').offset(page.offset).limit(page.limit).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow(),
  ]);
  return { rows, count: Number(total.count) };
}

/** Adding an address already there keeps the first entry and its reason. */
export async function addSuppression(db: Db, teamId: number, email: string, reason: SuppressionReason): Promise<SuppressionRow> {
  await db.insertInto('suppressions').values({ team_id: teamId, email, reason }).onConflict((oc) => oc.doNothing()).execute();
  return db.selectFrom('suppressions').selectAll().where('team_id', '=', teamId).where('email', '=', email).executeTakeFirstOrThrow();
}

export async function removeSuppression(db: Db, teamId: number, email: string): Promise<boolean> {
  const result = await db.deleteFrom('suppressions').where('team_id', '=', teamId).where('email', '=', email).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
