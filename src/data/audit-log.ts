import type { Db } from '../db/connection.js';
import type { ActorType, AuditLogTable } from '../db/schema.js';

export type AuditRow = AuditLogTable;

export async function insertAuditRows(db: Db, rows: AuditRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('audit_log').values(rows).execute();
}

/** What the log may be narrowed to: an actor (by type, and id within it), actions, and a time window. */
export type AuditFilter = { actorType?: ActorType; actorId?: string; actions?: string[]; from?: Date; to?: Date };

/** A page of a team's log, newest first, and how many rows the filter matches. */
export async function listAuditRows(db: Db, teamId: number, filter: AuditFilter, page: { offset: number; limit: number }) {
  let query = db.selectFrom('audit_log').where('team_id', '=', teamId);
  if (filter.actorType !== undefined) query = query.where('actor_type', '=', filter.actorType);
  if (filter.actorId !== undefined) query = query.where('actor_id', '=', filter.actorId);
  if (filter.actions !== undefined && filter.actions.length > 0) query = query.where('action', 'in', filter.actions);
  if (filter.from !== undefined) query = query.where('at', '>=', filter.from);
  if (filter.to !== undefined) query = query.where('at', '<', filter.to);
  const [rows, total] = await Promise.all([
    query.selectAll().orderBy('at', 'desc').orderBy('id', 'desc').offset(page.offset).limit(page.limit).execute(),
    query.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow(),
  ]);
  return { rows, count: Number(total.count) };
}
