import type { Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { TemplatesTable } from '../db/schema.js';

export type TemplateRow = Selectable<TemplatesTable>;
export type TemplateFields = Pick<TemplateRow, 'name' | 'subject' | 'html' | 'text' | 'content'>;

export async function insertTemplate(db: Db, teamId: number, id: string, fields: TemplateFields, now: Date): Promise<TemplateRow> {
  return db
    .insertInto('templates')
    .values({ team_id: teamId, id, ...fields, created_at: now, updated_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Uses the templates primary key. */
export async function findTemplate(db: Db, teamId: number, id: string): Promise<TemplateRow | undefined> {
  return db.selectFrom('templates').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

/** The templates of these ids the team has (the templates primary key, one probe each). */
export async function findTemplates(db: Db, teamId: number, ids: string[]): Promise<TemplateRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('templates').selectAll().where('team_id', '=', teamId).where('id', 'in', ids).execute();
}

/** Newest first; uses templates_team_created. */
export async function listTemplates(db: Db, teamId: number, page: { offset: number; limit: number }) {
  const query = db.selectFrom('templates').where('team_id', '=', teamId);
  const [rows, total] = await Promise.all([
    query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').offset(page.offset).limit(page.limit).execute(),
    query.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow(),
  ]);
  return { rows, count: Number(total.count) };
}

/** Undefined when the team has no such template. */
export async function updateTemplate(db: Db, teamId: number, id: string, fields: Partial<TemplateFields>, now: Date): Promise<TemplateRow | undefined> {
  return db
    .updateTable('templates')
    .set({ ...fields, updated_at: now })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Whether the team had such a template. Emails rendered from it keep its id and what was rendered. */
export async function deleteTemplate(db: Db, teamId: number, id: string): Promise<boolean> {
  const result = await db.deleteFrom('templates').where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
