import type { Db } from '../db/connection.js';
import { findContactsByIds, type ContactRow } from '../data/contacts.js';
import { listening, report } from './outbox.js';
import { contactEvent, type ContactEventType } from './payloads.js';

/** Reports a contact event for each row, as the row is (as it was, for a deletion), in the caller's transaction. */
export async function reportContacts(tx: Db, type: ContactEventType, rows: ContactRow[], now: Date): Promise<void> {
  await report(tx, rows.map((row) => ({ teamId: row.team_id, subjectKey: row.id, domainId: null, at: now, event: contactEvent(type, row) })));
}

/** Whether a webhook of the team hears this contact event: a deletion then keeps the rows it removes, to report them. */
export async function contactEventHeard(tx: Db, teamId: number, type: ContactEventType): Promise<boolean> {
  return (await listening(tx, [teamId]))(teamId, type, null);
}

/** Reports the event of contacts this transaction just wrote, reading them back only when a webhook hears it. */
export async function reportWrittenContacts(tx: Db, contacts: { teamId: number; bookId: string; ids: string[] }, type: ContactEventType, now: Date): Promise<void> {
  const { teamId, bookId, ids } = contacts;
  if (ids.length === 0 || !(await contactEventHeard(tx, teamId, type))) return;
  await reportContacts(tx, type, await findContactsByIds(tx, teamId, bookId, ids), now);
}
