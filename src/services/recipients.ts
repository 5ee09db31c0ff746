import type { Db } from '../db/connection.js';
import { confirmContact } from '../data/contacts.js';
import { countOnce } from '../data/email-events.js';
import { unsubscribeContact } from '../data/recipients.js';
import type { ConfirmPayload, UnsubscribePayload } from '../feedback/tokens.js';

/**
 * What a recipient's unsubscribe (page or one-click) does, in one transaction: the contact is
 * UNSUBSCRIBED and the campaign's `unsubscribed` counts this email once, however often it is used.
 */
export async function unsubscribe(db: Db, token: UnsubscribePayload): Promise<boolean> {
  const now = new Date();
  return db.transaction().execute(async (tx) => {
    const found = await unsubscribeContact(tx, { teamId: token.t, bookId: token.b, contactId: token.c }, now);
    if (found) await countOnce(tx, [{ teamId: token.t, emailId: token.e, kind: 'unsubscribed' }], now);
    return found;
  });
}

/** A double opt-in confirmation: the pending contact becomes subscribed; anything else is left as it is. */
export const confirmSubscription = (db: Db, token: ConfirmPayload) =>
  confirmContact(db, { teamId: token.t, bookId: token.b, contactId: token.c }, new Date());
