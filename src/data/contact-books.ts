import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { ContactBooksTable } from '../db/schema.js';

export type ContactBookRow = Selectable<ContactBooksTable> & { contact_count: number };

export type ContactBookFields = {
  name: string;
  emoji: string;
  properties: Record<string, string>;
  variables: string[];
  doubleOptInEnabled: boolean;
  doubleOptInFrom: string | null;
  doubleOptInSubject: string | null;
  doubleOptInContent: string | null;
};

// Uses the contacts primary key (team_id, contact_book_id, …): an index-only count per book.
const contactCount = sql<number>`(
  SELECT count(*)::int FROM contacts c WHERE c.team_id = contact_books.team_id AND c.contact_book_id = contact_books.id
)`.as('contact_count');

function columns(fields: Partial<ContactBookFields>) {
  return {
    name: fields.name,
    emoji: fields.emoji,
    properties: fields.properties && JSON.stringify(fields.properties),
    variables: fields.variables && JSON.stringify(fields.variables),
    double_opt_in_enabled: fields.doubleOptInEnabled,
    double_opt_in_from: fields.doubleOptInFrom,
    double_opt_in_subject: fields.doubleOptInSubject,
    double_opt_in_content: fields.doubleOptInContent,
  };
}

export async function insertContactBook(db: Db, teamId: number, id: string, fields: ContactBookFields) {
  await db
    .insertInto('contact_books')
    .values({ team_id: teamId, id, ...columns(fields) } as never)
    .execute();
}

export async function listContactBooks(db: Db, teamId: number): Promise<ContactBookRow[]> {
  return db
    .selectFrom('contact_books')
    .selectAll()
    .select(contactCount)
    .where('team_id', '=', teamId)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
}

export async function findContactBook(db: Db, teamId: number, id: string, forUpdate = false) {
  let query = db
    .selectFrom('contact_books')
    .selectAll()
    .select(contactCount)
    .where('team_id', '=', teamId)
    .where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst() as Promise<ContactBookRow | undefined>;
}

export async function updateContactBook(db: Db, teamId: number, id: string, fields: Partial<ContactBookFields>) {
  await db
    .updateTable('contact_books')
    .set({ ...columns(fields), updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .execute();
}

/** Deletes the book and its contacts; the caller's transaction makes it one change. */
export async function deleteContactBook(db: Db, teamId: number, id: string) {
  await db.deleteFrom('contacts').where('team_id', '=', teamId).where('contact_book_id', '=', id).execute();
  const result = await db.deleteFrom('contact_books').where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
