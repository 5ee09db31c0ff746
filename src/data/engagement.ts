import { sql } from 'kysely';
import type { Db } from '../db/connection.js';
import type { EmailStatus } from '../db/schema.js';

/**
 * The events a contact's row keeps the last time of, and the column of each: when one of the
 * campaign emails it got was first opened, and a link in one first clicked. Segments read them
 * from the row (src/data/segment-sql.ts), so counting or releasing one probes no other table per
 * contact.
 */
export const ENGAGED_AT = { OPENED: 'last_opened_at', CLICKED: 'last_clicked_at' } as const satisfies Partial<Record<EmailStatus, string>>;

export const engages = (status: EmailStatus): status is keyof typeof ENGAGED_AT => status in ENGAGED_AT;

/**
 * Moves the last-engaged times of the contacts whose campaign mail got these events to `now`
 * (never back: a transaction with an earlier clock may commit later). Mail that is no campaign's
 * (a double opt-in confirmation) engages no contact. Uses the emails, campaigns and contacts
 * primary keys.
 */
export async function recordEngagement(tx: Db, events: { teamId: number; emailId: string; status: keyof typeof ENGAGED_AT }[], now: Date): Promise<void> {
  if (events.length === 0) return;
  const json = JSON.stringify(events.map((event) => ({ team_id: event.teamId, email_id: event.emailId, status: event.status })));
  await sql`
    UPDATE contacts c SET
      last_opened_at = CASE WHEN g.opened THEN GREATEST(c.last_opened_at, ${now}) ELSE c.last_opened_at END,
      last_clicked_at = CASE WHEN g.clicked THEN GREATEST(c.last_clicked_at, ${now}) ELSE c.last_clicked_at END
    FROM (
      SELECT e.team_id, cp.contact_book_id, e.contact_id, bool_or(ev.status = 'OPENED') AS opened, bool_or(ev.status = 'CLICKED') AS clicked
      FROM jsonb_to_recordset(${json}::jsonb) AS ev(team_id integer, email_id text, status text)
      JOIN emails e ON e.team_id = ev.team_id AND e.id = ev.email_id
      JOIN campaigns cp ON cp.team_id = e.team_id AND cp.id = e.campaign_id
      WHERE e.contact_id IS NOT NULL
      GROUP BY e.team_id, cp.contact_book_id, e.contact_id
    ) g
    WHERE c.team_id = g.team_id AND c.contact_book_id = g.contact_book_id AND c.id = g.contact_id`.execute(tx);
}
