import { confirmContact, unsubscribeContact } from '../data/contacts.js';
import { countOnce } from '../data/email-events.js';
import type { Deps } from '../deps.js';
import { contactsAdded, runsEnded } from '../events/automations.js';
import { reportContacts } from '../events/contacts.js';
import type { LinkFields } from '../mail/tokens.js';

/**
 * What recipients do to their own subscription, proven by a signed link (or, for unsubscribing, a
 * message to the email's own List-Unsubscribe address): no API key, no team caller.
 */
type SubscriptionDeps = Pick<Deps, 'db'>;

/**
 * Unsubscribing (page, one-click or mail), in one transaction: the contact is UNSUBSCRIBED, leaves
 * its automation runs, and the campaign's `unsubscribed` counts this email once, however often it is used.
 */
export async function unsubscribe({ db }: SubscriptionDeps, link: LinkFields['unsubscribe']): Promise<boolean> {
  const now = new Date();
  return db.transaction().execute(async (tx) => {
    const { found, changed } = await unsubscribeContact(tx, { teamId: link.teamId, bookId: link.bookId, contactId: link.contactId }, now);
    if (changed) {
      await reportContacts(tx, 'contact.updated', [changed], now);
      await runsEnded(tx, { teamId: link.teamId, bookId: link.bookId, contactIds: [link.contactId] }, 'unsubscribed', now);
    }
    if (found) await countOnce(tx, [{ teamId: link.teamId, emailId: link.emailId, kind: 'unsubscribed' }], now);
    return found;
  });
}

/** A double opt-in confirmation: the pending contact becomes subscribed (and enters the book's automations); anything else is left as it is. */
export async function confirmSubscription({ db }: SubscriptionDeps, link: LinkFields['confirm']): Promise<'confirmed' | 'unchanged' | 'missing'> {
  const now = new Date();
  return db.transaction().execute(async (tx) => {
    const result = await confirmContact(tx, { teamId: link.teamId, bookId: link.bookId, contactId: link.contactId }, now);
    if (result.outcome === 'confirmed') {
      await reportContacts(tx, 'contact.updated', [result.contact], now);
      await contactsAdded(tx, { teamId: link.teamId, bookId: link.bookId, contactIds: [link.contactId] }, now);
    }
    return result.outcome;
  });
}
