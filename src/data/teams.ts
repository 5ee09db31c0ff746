import type { Db } from '../db/connection.js';

export async function insertTeam(db: Db, name: string) {
  return db.insertInto('teams').values({ name }).returningAll().executeTakeFirstOrThrow();
}

export async function findTeam(db: Db, id: number) {
  return db.selectFrom('teams').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function updateTeamRateLimit(db: Db, id: number, perSecond: number | null) {
  return db
    .updateTable('teams')
    .set({ rate_limit_per_second: perSecond, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}
