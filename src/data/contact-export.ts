import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

/** Where a page of an export ended: the last contact's place in contacts_book_order. */
export type ExportCursor = { createdAt: string; id: string };

/**
 * The next `limit` contacts of a book in creation order after `after`, read along
 * contacts_book_order, so every page costs the same however deep into the book it starts. The
 * cursor keeps created_at as Postgres' own text: a JavaScript Date drops the microseconds, and
 * contacts created within one millisecond would be skipped or repeated.
 */
export async function contactsAfter(db: Db, teamId: number, bookId: string, after: ExportCursor | null, limit: number) {
  let query = db
    .selectFrom('contacts')
    .select(['id', 'email', 'first_name', 'last_name', 'subscribed', sql<string>`created_at::text`.as('created_at_text')])
    .where('team_id', '=', teamId)
    .where('contact_book_id', '=', bookId);
  if (after) query = query.where(sql`(created_at, id)`, '>', sql`(${after.createdAt}::timestamptz, ${after.id})`);
  return query.orderBy('created_at').orderBy('id').limit(limit).execute();
}
