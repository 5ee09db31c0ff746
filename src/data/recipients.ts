import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

/**
 * Unsubscribes a contact (contacts primary key). A bounce or complaint already recorded stays the
 * reason. Answers whether the contact exists.
 */
export async function unsubscribeContact(db: Db, key: { teamId: number; bookId: string; contactId: string }, now: Date): Promise<boolean> {
  const result = await sql`
    UPDATE contacts SET subscribed = false, pending_confirmation = false,
      unsubscribe_reason = COALESCE(unsubscribe_reason, 'UNSUBSCRIBED'), updated_at = ${now}
    WHERE team_id = ${key.teamId} AND contact_book_id = ${key.bookId} AND id = ${key.contactId}`.execute(db);
  return Number(result.numAffectedRows ?? 0) > 0;
}
