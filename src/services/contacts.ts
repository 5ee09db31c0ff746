import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import * as contacts from '../data/contacts.js';
import { audit } from '../events/audit.js';
import { contactsAdded, runsEnded } from '../events/automations.js';
import { contactEventHeard, reportContacts, reportWrittenContacts } from '../events/contacts.js';
import { contactData } from '../events/payloads.js';
import type { BookLock, ContactFields, ContactKey, ContactRow, ContactStateRow, ContactWrite } from '../data/contacts.js';
import { normalizeEmail } from '../mail/address.js';
import { conflict, invalid, notFound } from '../errors.js';
import { newSortableId } from '../ids.js';
import { assertBookInScope, type Caller } from './caller.js';
import { CONFIRMATION_INTERVAL_MS, queueConfirmations } from './double-opt-in.js';
import type { SenderDeps } from './verified-sender.js';

export type ContactDeps = Pick<Deps, 'metrics' | 'log'> & SenderDeps;

/** Queues the book's confirmation emails to these contacts in the transaction (double opt-in). */
type Confirm = (book: Book, recipients: { id: string; email: string }[]) => Promise<void>;

export type ContactInput = {
  email?: string;
  firstName?: string | null;
  lastName?: string | null;
  properties?: Record<string, string>;
  subscribed?: boolean;
};

/** One row of a bulk request: either a valid contact or why it was rejected. */
export type BulkRow = { contact: ContactInput & { email: string } } | { email: string | null; message: string };

export type BulkError = { index: number; email: string | null; message: string };

// Statements of a few thousand rows measured as fast as one of 10,000, and keep each statement's
// data to a few MB even when rows carry many properties.
const WRITE_CHUNK = 2_500;

type Book = NonNullable<Awaited<ReturnType<typeof contacts.findBookForContacts>>>;

export const toContact = contactData;

function fieldsOf(row: ContactStateRow): ContactFields {
  return {
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    properties: row.properties,
    subscribed: row.subscribed,
    unsubscribeReason: row.unsubscribe_reason,
    pendingConfirmation: row.pending_confirmation,
  };
}

/** A path's contactId names a contact by address when it is one, otherwise by id. */
function keyOf(contactId: string): ContactKey {
  // No contact id is ever an address (generated ids are alphanumeric, and a path's id is taken only
  // when it is not an address), so an address can only mean the contact's email.
  const email = normalizeEmail(contactId);
  return email ? { email } : { id: contactId };
}

function newContact(book: Book, id: string, email: string, input: ContactInput): ContactWrite {
  const firstName = input.firstName ?? null;
  const lastName = input.lastName ?? null;
  const properties = input.properties ?? {};
  // Consent in a double opt-in book comes only from the person confirming the emailed link, so
  // the caller's `subscribed` cannot skip it.
  if (book.double_opt_in_enabled) {
    return { id, email, firstName, lastName, properties, subscribed: false, unsubscribeReason: null, pendingConfirmation: true };
  }
  const subscribed = input.subscribed ?? true;
  const unsubscribeReason = subscribed ? null : 'UNSUBSCRIBED';
  return { id, email, firstName, lastName, properties, subscribed, unsubscribeReason, pendingConfirmation: false };
}

function subscription(current: ContactFields, subscribed: boolean | undefined) {
  // A pending contact waits for its confirmation whatever the API says, which also keeps a
  // repeated creating request (that said subscribed: true or false) a no-op.
  if (subscribed === undefined || current.pendingConfirmation) return {};
  if (subscribed) return { subscribed: true, unsubscribeReason: null };
  // A bounce or complaint says more than a plain unsubscribe: keep it as the reason.
  return { subscribed: false, unsubscribeReason: current.unsubscribeReason ?? 'UNSUBSCRIBED' };
}

function sameProperties(a: Record<string, string>, b: Record<string, string>) {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key]);
}

/** The contact after applying `input`, or null when nothing would change (so updatedAt stays put). */
function changedFields(current: ContactFields, input: ContactInput): ContactFields | null {
  const next: ContactFields = {
    email: input.email ?? current.email,
    firstName: input.firstName !== undefined ? input.firstName : current.firstName,
    lastName: input.lastName !== undefined ? input.lastName : current.lastName,
    properties: input.properties ?? current.properties,
    subscribed: current.subscribed,
    unsubscribeReason: current.unsubscribeReason,
    pendingConfirmation: current.pendingConfirmation,
    ...subscription(current, input.subscribed),
  };
  const same =
    next.email === current.email &&
    next.firstName === current.firstName &&
    next.lastName === current.lastName &&
    next.subscribed === current.subscribed &&
    next.unsubscribeReason === current.unsubscribeReason &&
    sameProperties(next.properties, current.properties);
  return same ? null : next;
}

/**
 * Runs `work` in one transaction with the book locked, or answers 404 exactly as for a missing book
 * when it is another team's, and 403 when the caller's key may not change it. The unique indexes are what reject a taken address (or an id a
 * concurrent request just created): their violation is the caller's 409, not a 500.
 */
async function inBook<T>(
  deps: ContactDeps,
  target: { caller: Caller; bookId: string; lock: BookLock; email?: string },
  work: (tx: Db, book: Book, confirm: Confirm) => Promise<T>,
): Promise<T> {
  const { caller, bookId, lock, email } = target;
  const { teamId } = caller;
  // Counted in the metrics once the transaction has committed.
  let queued = 0;
  try {
    const result = await deps.db.transaction().execute(async (tx) => {
      const book = await contacts.findBookForContacts(tx, teamId, bookId, lock);
      if (!book) throw notFound('Contact book');
      await assertBookInScope(tx, caller, book);
      return work(tx, book, async (confirmed, recipients) => {
        queued += await queueConfirmations({ ...deps, db: tx }, caller, confirmed, recipients);
      });
    });
    deps.metrics.emailsReached('QUEUED', queued);
    return result;
  } catch (error) {
    const violation = contacts.uniqueViolation(error);
    if (violation === 'email') {
      throw conflict(`Another contact in this contact book already has ${email ? `the email address ${email}` : 'one of these email addresses'}`);
    }
    if (violation === 'id') throw conflict('The contact was created by a concurrent request; retry to update it');
    throw error;
  }
}

/** The team's book (404 otherwise), locked as `lock` says (see findBookForContacts). */
export async function requireBook(db: Db, teamId: number, bookId: string, lock?: BookLock) {
  const book = await contacts.findBookForContacts(db, teamId, bookId, lock);
  if (!book) throw notFound('Contact book');
  return book;
}

/**
 * Whether adding a contact again (POST, PUT or bulk) sends its confirmation again: it is still
 * pending in a double opt-in book, and its last one went out at least CONFIRMATION_INTERVAL_MS ago.
 */
function confirmationDue(book: Book, current: ContactStateRow, now: number) {
  const lastSent = current.confirmation_sent_at?.getTime() ?? 0;
  return book.double_opt_in_enabled && current.pending_confirmation && now - lastSent >= CONFIRMATION_INTERVAL_MS;
}

/** Applies the changes; a contact added again (`readded` to its book) may be due its confirmation again. */
async function update(tx: Db, caller: Caller, current: ContactRow, input: ContactInput, readded?: { book: Book; confirm: Confirm }) {
  const next = changedFields(fieldsOf(current), input);
  if (next) {
    await contacts.updateContacts(tx, caller.teamId, current.contact_book_id, [{ ...next, id: current.id }]);
    await reportWrittenContacts(tx, { teamId: caller.teamId, bookId: current.contact_book_id, ids: [current.id] }, 'contact.updated', new Date());
    if (current.subscribed && !next.subscribed) await runsEnded(tx, { teamId: caller.teamId, bookId: current.contact_book_id, contactIds: [current.id] }, 'unsubscribed', new Date());
    await audit(tx, caller, { action: 'contact.updated', targetType: 'contact', targetId: current.id });
  }
  if (readded && confirmationDue(readded.book, current, Date.now())) {
    await readded.confirm(readded.book, [{ id: current.id, email: next?.email ?? current.email }]);
  }
  return { contactId: current.id };
}

async function create(tx: Db, caller: Caller, book: Book, confirm: Confirm, contact: { id: string; email: string; input: ContactInput }) {
  const { id, email, input } = contact;
  await contacts.insertContacts(tx, caller.teamId, book.id, [newContact(book, id, email, input)]);
  await reportWrittenContacts(tx, { teamId: caller.teamId, bookId: book.id, ids: [id] }, 'contact.created', new Date());
  await audit(tx, caller, { action: 'contact.created', targetType: 'contact', targetId: id });
  if (book.double_opt_in_enabled) await confirm(book, [{ id, email }]);
  else await contactsAdded(tx, { teamId: caller.teamId, bookId: book.id, contactIds: [id] }, new Date());
  return { contactId: id };
}

/**
 * PUT: updates the contact the path names (by id, or by address case-insensitively) or creates
 * it, taking the path's id as its id unless the path is an address.
 */
export async function upsertContact(deps: ContactDeps, caller: Caller, request: { contactBookId: string; contactId: string; contact: ContactInput }) {
  const { teamId } = caller;
  const { contactBookId: bookId, contactId, contact: input } = request;
  const key = keyOf(contactId);
  if ('email' in key && input.email !== undefined && input.email.toLowerCase() !== key.email.toLowerCase()) {
    // Moving the contact off the address in the path would make the same PUT create a new contact
    // next time; renaming goes through PATCH or a PUT keyed by id.
    throw invalid('email', `must be the address in the path (${key.email}) when the contact is addressed by email`);
  }
  return inBook(deps, { caller, bookId, lock: 'keyShare', email: input.email }, async (tx, book, confirm) => {
    const current = await contacts.findContact(tx, teamId, bookId, key, true);
    if (current) return update(tx, caller, current, input, { book, confirm });
    const email = 'email' in key ? key.email : input.email;
    if (email === undefined) throw invalid('email', 'is required to create a contact');
    return create(tx, caller, book, confirm, { id: 'id' in key ? key.id : newSortableId(), email, input });
  });
}

/** POST: creates a contact by address, or updates the one that already has it. */
export async function createContact(deps: ContactDeps, caller: Caller, request: { contactBookId: string; contact: ContactInput & { email: string } }) {
  const { teamId } = caller;
  const { contactBookId: bookId, contact: input } = request;
  return inBook(deps, { caller, bookId, lock: 'keyShare', email: input.email }, async (tx, book, confirm) => {
    const current = await contacts.findContact(tx, teamId, bookId, { email: input.email }, true);
    if (current) return update(tx, caller, current, input, { book, confirm });
    return create(tx, caller, book, confirm, { id: newSortableId(), email: input.email, input });
  });
}

export async function updateContact(deps: ContactDeps, caller: Caller, request: { contactBookId: string; contactId: string; contact: ContactInput }) {
  const { teamId } = caller;
  const { contactBookId: bookId, contactId, contact: input } = request;
  return inBook(deps, { caller, bookId, lock: 'keyShare', email: input.email }, async (tx) => {
    const current = await contacts.findContact(tx, teamId, bookId, keyOf(contactId), true);
    if (!current) throw notFound('Contact');
    return update(tx, caller, current, input);
  });
}

export async function getContact({ db }: ContactDeps, { teamId }: Caller, { contactBookId: bookId, contactId }: { contactBookId: string; contactId: string }) {
  const row = await contacts.findContact(db, teamId, bookId, keyOf(contactId));
  // Contacts carry their team, so finding one proves the book is the caller's: only a miss costs a
  // second query, to say which of the two is missing.
  if (row) return toContact(row);
  await requireBook(db, teamId, bookId);
  throw notFound('Contact');
}

export async function listContacts(
  { db }: ContactDeps,
  { teamId }: Caller,
  query: contacts.ContactFilter & { contactBookId: string; page: number; limit: number },
) {
  const { contactBookId: bookId, page, limit, ...filter } = query;
  await requireBook(db, teamId, bookId);
  const { rows, total } = await contacts.listContacts(db, teamId, bookId, filter, { offset: (page - 1) * limit, limit });
  return { contacts: rows.map(toContact), total };
}

function splitKeys(contactIds: string[]) {
  const keys = { ids: [] as string[], emails: [] as string[] };
  for (const contactId of contactIds) {
    const key = keyOf(contactId);
    if ('email' in key) keys.emails.push(key.email);
    else keys.ids.push(key.id);
  }
  return keys;
}

/** Deletes the contacts the keys name, reporting contact.deleted with each as it was; answers how many went. */
async function removeContacts(tx: Db, teamId: number, bookId: string, keys: ReturnType<typeof splitKeys>): Promise<number> {
  const heard = await contactEventHeard(tx, teamId, 'contact.deleted');
  const { count, rows } = await contacts.deleteContacts(tx, teamId, bookId, keys, heard);
  await reportContacts(tx, 'contact.deleted', rows, new Date());
  return count;
}

// Deletes take the book's shared lock too: a bulk upsert, which locks the book exclusively before
// its contacts, then never waits on contacts a delete holds (which could deadlock).
export async function deleteContact(deps: ContactDeps, caller: Caller, { contactBookId: bookId, contactId }: { contactBookId: string; contactId: string }) {
  return inBook(deps, { caller, bookId, lock: 'keyShare' }, async (tx) => {
    // Found first, locked: the audit row names the contact by id even when the path gave its address.
    const current = await contacts.findContact(tx, caller.teamId, bookId, keyOf(contactId), true);
    if (!current) throw notFound('Contact');
    await removeContacts(tx, caller.teamId, bookId, { ids: [current.id], emails: [] });
    await audit(tx, caller, { action: 'contact.deleted', targetType: 'contact', targetId: current.id });
    return { success: true };
  });
}

export async function bulkDeleteContacts(deps: ContactDeps, caller: Caller, { contactBookId: bookId, contactIds }: { contactBookId: string; contactIds: string[] }) {
  return inBook(deps, { caller, bookId, lock: 'keyShare' }, async (tx) => {
    const count = await removeContacts(tx, caller.teamId, bookId, splitKeys(contactIds));
    // One row for the request, naming the book: the log stays one row per change a person made.
    if (count > 0) await audit(tx, caller, { action: 'contact.bulkDeleted', targetType: 'contactBook', targetId: bookId });
    return { success: true, count };
  });
}

/**
 * The contact statistics refreshed after new contacts are written, one refresh at a time per
 * database: requests that finish together would each find the same statistics stale. The
 * contacts are committed by then, so a refresh that fails is logged, not answered as the
 * request's failure: a retry would find nothing to write, and the next import tries again.
 */
export function contactStatisticsRefresher(db: Db, log: Deps['log']): Deps['refreshContactStatistics'] {
  let running: Promise<void> | null = null;
  return () =>
    (running ??= contacts
      .refreshContactStatistics(db)
      .catch((error) => log.warn('refreshing the contact statistics failed', { error }))
      .finally(() => (running = null)));
}

/**
 * POST bulk: upserts every valid row by address in one transaction and reports the others. One
 * read finds (and locks) the contacts the rows match; then each chunk of new contacts is one COPY,
 * each chunk of changed ones one upsert, and in a double opt-in book the chunk's confirmations (to
 * new contacts, and to pending ones added again, as POST and PUT send them) one batch. The book is
 * locked exclusively, so no other write can add an address between the read and the insert. Once
 * committed, the contact statistics are refreshed if the table has outgrown them.
 */
export async function bulkUpsertContacts(deps: ContactDeps & Pick<Deps, 'refreshContactStatistics'>, caller: Caller, { contactBookId: bookId, rows }: { contactBookId: string; rows: BulkRow[] }) {
  const { teamId } = caller;
  const errors: BulkError[] = [];
  const valid: Array<{ index: number; contact: ContactInput & { email: string } }> = [];
  rows.forEach((row, index) => {
    if ('contact' in row) valid.push({ index, contact: row.contact });
    else errors.push({ index, email: row.email, message: row.message });
  });

  const counts = await inBook(deps, { caller, bookId, lock: 'update' }, async (tx, book, confirm) => {
    const keys = await contacts.emailKeys(tx, valid.map((row) => row.contact.email));
    const firstIndexOf = new Map<string, number>();
    const unique: Array<{ key: string; contact: ContactInput & { email: string } }> = [];
    valid.forEach(({ index, contact }, i) => {
      const key = keys[i]!;
      const first = firstIndexOf.get(key);
      if (first === undefined) {
        firstIndexOf.set(key, index);
        unique.push({ key, contact });
      } else {
        // Two rows for one contact in one request leave no clear winner: the caller decides.
        errors.push({ index, email: contact.email, message: `email: repeats the address of row ${first}` });
      }
    });

    const found = await contacts.findContactsByEmailKeys(tx, teamId, bookId, unique.map((row) => row.key));
    const existing = new Map(found.map((row) => [row.key, row]));
    const now = Date.now();
    let created = 0;
    for (let start = 0; start < unique.length; start += WRITE_CHUNK) {
      const inserts: ContactWrite[] = [];
      const updates: ContactWrite[] = [];
      const readded: Array<{ id: string; email: string }> = [];
      const unsubscribed: string[] = [];
      for (const { key, contact } of unique.slice(start, start + WRITE_CHUNK)) {
        const current = existing.get(key);
        if (!current) {
          inserts.push(newContact(book, newSortableId(), contact.email, contact));
          continue;
        }
        const next = changedFields(fieldsOf(current), contact);
        if (next) updates.push({ ...next, id: current.id });
        if (next && current.subscribed && !next.subscribed) unsubscribed.push(current.id);
        if (confirmationDue(book, current, now)) readded.push({ id: current.id, email: next?.email ?? current.email });
      }
      await contacts.insertContacts(tx, teamId, bookId, inserts);
      await contacts.updateContacts(tx, teamId, bookId, updates);
      await reportWrittenContacts(tx, { teamId, bookId, ids: inserts.map((row) => row.id) }, 'contact.created', new Date());
      await reportWrittenContacts(tx, { teamId, bookId, ids: updates.map((row) => row.id) }, 'contact.updated', new Date());
      if (book.double_opt_in_enabled) await confirm(book, [...inserts, ...readded]);
      else await contactsAdded(tx, { teamId, bookId, contactIds: inserts.map((row) => row.id) }, new Date());
      await runsEnded(tx, { teamId, bookId, contactIds: unsubscribed }, 'unsubscribed', new Date());
      created += inserts.length;
    }
    // One row for the whole import, naming the book: never one per contact.
    if (unique.length > 0) await audit(tx, caller, { action: 'contact.imported', targetType: 'contactBook', targetId: bookId });
    return { created, updated: unique.length - created };
  });

  if (counts.created > 0) await deps.refreshContactStatistics();
  errors.sort((a, b) => a.index - b.index);
  const count = counts.created + counts.updated;
  return {
    message: `Saved ${count} contact${count === 1 ? '' : 's'} (${counts.created} created, ${counts.updated} updated); rejected ${errors.length} row${errors.length === 1 ? '' : 's'}`,
    count,
    ...counts,
    errors,
  };
}
