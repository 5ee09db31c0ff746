import { sql } from 'kysely';
import { REUSED } from '../db/reused-statements.js';
import type { Db } from '../db/connection.js';
import type { CampaignStatus } from '../db/schema.js';

/** What rendering a campaign's mail needs of the campaign: its state, its body and its book's variables. */
export type CampaignState = {
  id: string;
  team_id: number;
  status: CampaignStatus;
  subject: string;
  html: string;
  preview_text: string | null;
  contact_book_id: string | null;
  variables: string[] | null;
};

/** A recipient as personalisation reads it. */
export type RecipientValues = { id: string; email: string; first_name: string | null; last_name: string | null; properties: Record<string, string>; subscribed: boolean };

/** The campaigns' state as it is now; a deleted campaign is simply absent. Uses campaigns_id, then the contact_books primary key. */
export async function findCampaignStates(db: Db, ids: string[]): Promise<CampaignState[]> {
  const { rows } = await sql<CampaignState>`${sql.raw(REUSED)}
    SELECT c.id, c.team_id, c.status, c.subject, c.html, c.preview_text, c.contact_book_id, b.variables
    FROM campaigns c LEFT JOIN contact_books b ON b.team_id = c.team_id AND b.id = c.contact_book_id
    WHERE c.id = ANY(${ids}::text[])`.execute(db);
  return rows;
}

/** The recipients' data as it is now; a deleted contact is absent. Uses the contacts primary key, one probe each. */
export async function findRecipientValues(db: Db, book: { teamId: number; bookId: string }, contactIds: string[]): Promise<RecipientValues[]> {
  const { rows } = await sql<RecipientValues>`${sql.raw(REUSED)}
    SELECT id, email, first_name, last_name, properties, subscribed FROM contacts
    WHERE team_id = ${book.teamId} AND contact_book_id = ${book.bookId} AND id = ANY(${contactIds}::text[])`.execute(db);
  return rows;
}
