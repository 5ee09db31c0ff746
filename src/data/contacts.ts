import { CompiledQuery, sql, type Selectable } from 'kysely';
import { copyRows } from '../db/copy.js';
import type { Db } from '../db/connection.js';
import { refreshStatistics } from './statistics.js';
import type { ContactsTable, UnsubscribeReason } from '../db/schema.js';
import { containing } from './like.js';

// Set-based statements here take their rows as arrays or one JSON document and never join them to
// contacts: each row is one probe of an index, or at worst the book is read once. A join would
// leave the strategy to the planner, which on a table without statistics (PGlite is never
// analysed) may pick a nested loop that reads the whole book once per row.

export type ContactRow = Selectable<ContactsTable>;

/** Everything about a contact a write may set; book and timestamps are the table's business. */
export type ContactFields = {
  email: string;
  firstName: string | null;
  lastName: string | null;
  properties: Record<string, string>;
  subscribed: boolean;
  unsubscribeReason: UnsubscribeReason | null;
  pendingConfirmation: boolean;
};

export type ContactWrite = ContactFields & { id: string };

/** A contact is addressed by its id or by its email address (case-insensitively). */
export type ContactKey = { id: string } | { email: string };

/** `text` matches part of the address or of the name (case-insensitively), for people searching a book. */
export type ContactFilter = { emails?: string[]; ids?: string[]; subscribed?: boolean; text?: string };

export type BookLock = 'keyShare' | 'update';

/**
 * The book's fields contacts depend on, without the contact count `findContactBook` pays for. A
 * `keyShare` lock keeps the book from being deleted under the caller's writes (contacts have no
 * foreign key, so this lock is what keeps a contact from outliving its book); `update`
 * additionally holds off every other contact write to it, since each of those takes `keyShare`.
 */
export async function findBookForContacts(db: Db, teamId: number, bookId: string, lock?: BookLock) {
  let query = db
    .selectFrom('contact_books')
    .select(['id', 'double_opt_in_enabled', 'double_opt_in_from', 'double_opt_in_subject', 'double_opt_in_content'])
    .where('team_id', '=', teamId)
    .where('id', '=', bookId);
  if (lock === 'keyShare') query = query.forKeyShare();
  if (lock === 'update') query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function findContact(db: Db, teamId: number, bookId: string, key: ContactKey, forUpdate = false) {
  let query = db
    .selectFrom('contacts')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('contact_book_id', '=', bookId);
  // Both sides go through Postgres' lower(), so the match is exactly the one contacts_email enforces.
  query = 'id' in key ? query.where('id', '=', key.id) : query.where(sql`lower(email)`, '=', sql`lower(${key.email})`);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/**
 * Each address as contacts_email compares it: Postgres' lower(). For ASCII it agrees with
 * JavaScript's toLowerCase() (bar a Turkish database locale's dotless i), so only the other
 * addresses cost a round trip; beyond ASCII the two differ (final sigma, dotted I).
 */
export async function emailKeys(db: Db, emails: string[]): Promise<string[]> {
  const keys = emails.map((email) => (/^[\x00-\x7f]*$/.test(email) ? email.toLowerCase() : null));
  const others = emails.filter((_, i) => keys[i] === null);
  if (others.length === 0) return keys as string[];
  const result = await sql<{ key: string }>`
    SELECT lower(e.email) AS key FROM unnest(${others}::text[]) WITH ORDINALITY AS e(email, n) ORDER BY e.n`.execute(db);
  const lowered = result.rows.map((row) => row.key);
  let next = 0;
  return keys.map((key) => key ?? lowered[next++]!);
}

/** What deciding a write needs to know of a stored contact. */
export type ContactStateRow = Omit<ContactRow, 'team_id' | 'contact_book_id' | 'created_at' | 'updated_at'>;

/**
 * The contacts whose lower-cased address is one of `keys` (see emailKeys), locked for update; `tx`
 * is a transaction. One probe of contacts_email per key, whatever the planner knows of the book:
 * given thousands of keys and a large book's statistics it would rather read the whole book, and
 * a request's cost would grow with the book. So sequential scans are off for this one statement.
 */
export async function findContactsByEmailKeys(tx: Db, teamId: number, bookId: string, keys: string[]) {
  if (keys.length === 0) return [];
  await sql`SET LOCAL enable_seqscan = off`.execute(tx);
  const result = await sql<ContactStateRow & { key: string }>`
    SELECT lower(email) AS key, id, email, first_name, last_name, properties, subscribed,
      unsubscribe_reason, pending_confirmation, confirmation_sent_at
    FROM contacts
    WHERE team_id = ${teamId} AND contact_book_id = ${bookId} AND lower(email) = ANY(${keys}::text[])
    FOR UPDATE`.execute(tx);
  // Only after success: a failed statement aborts the transaction, and its rollback undoes the SET.
  await sql`RESET enable_seqscan`.execute(tx);
  return result.rows;
}

/**
 * The statistics of contacts, and of the automation runs an import starts (refreshStatistics):
 * without them a book imported moments ago looks like a few rows, and a bulk upsert's lookup reads
 * the whole book instead of probing contacts_email once per key (and a runner's claim sorts every
 * due run instead of walking automation_runs_due).
 */
export const refreshContactStatistics = (db: Db): Promise<void> => refreshStatistics(db, ['contacts', 'automation_runs']);

// The rows travel as one array per column: a fixed number of parameters whatever their number,
// and cheaper for Postgres to unpack than one JSON document.
const insertRows = (teamId: number, bookId: string, rows: ContactWrite[]) => sql`
  INSERT INTO contacts (
    team_id, contact_book_id, id, email, first_name, last_name, properties,
    subscribed, unsubscribe_reason, pending_confirmation
  )
  SELECT ${teamId}, ${bookId}, r.* FROM unnest(
    ${rows.map((row) => row.id)}::text[], ${rows.map((row) => row.email)}::text[],
    ${rows.map((row) => row.firstName)}::text[], ${rows.map((row) => row.lastName)}::text[],
    ${rows.map((row) => JSON.stringify(row.properties))}::jsonb[], ${rows.map((row) => row.subscribed)}::boolean[],
    ${rows.map((row) => row.unsubscribeReason)}::text[], ${rows.map((row) => row.pendingConfirmation)}::boolean[]
  ) AS r`;

/** Inserts new contacts; an address or id already in the book fails the statement (23505). */
export async function insertContacts(db: Db, teamId: number, bookId: string, rows: ContactWrite[]) {
  if (rows.length === 0) return;
  const team = String(teamId);
  const data = copyRows(
    rows.map((row) => [
      team, bookId, row.id, row.email, row.firstName, row.lastName, JSON.stringify(row.properties),
      row.subscribed, row.unsubscribeReason, row.pendingConfirmation,
    ]),
  );
  await db.executeQuery(
    CompiledQuery.raw(
      `COPY contacts (
        team_id, contact_book_id, id, email, first_name, last_name, properties,
        subscribed, unsubscribe_reason, pending_confirmation
      ) FROM STDIN`,
      [data],
    ),
  );
}

/**
 * Overwrites existing contacts (by id) with the given fields and moves their updated_at. Written
 * as an insert that always conflicts on the primary key, so each row is one probe of that index
 * whatever the planner thinks of the table.
 */
export async function updateContacts(db: Db, teamId: number, bookId: string, rows: ContactWrite[]) {
  if (rows.length === 0) return;
  await sql`${insertRows(teamId, bookId, rows)}
    ON CONFLICT (team_id, contact_book_id, id) DO UPDATE SET
      email = excluded.email, first_name = excluded.first_name, last_name = excluded.last_name,
      properties = excluded.properties, subscribed = excluded.subscribed,
      unsubscribe_reason = excluded.unsubscribe_reason, pending_confirmation = excluded.pending_confirmation,
      updated_at = now()`.execute(db);
}

// The addresses are lower-cased once into an array, so `lower(email) = ANY(...)` probes
// contacts_email; an IN (subquery) would be checked against every contact of the book.
const anyEmailKey = (emails: string[]) => sql<string>`ANY(ARRAY(SELECT lower(e) FROM unnest(${emails}::text[]) AS e))`;

function filtered(db: Db, teamId: number, bookId: string, filter: ContactFilter) {
  let query = db.selectFrom('contacts').where('team_id', '=', teamId).where('contact_book_id', '=', bookId);
  if (filter.ids?.length) query = query.where('id', '=', sql<string>`ANY(${filter.ids}::text[])`);
  if (filter.emails?.length) query = query.where(sql`lower(email)`, '=', anyEmailKey(filter.emails));
  if (filter.subscribed !== undefined) query = query.where('subscribed', '=', filter.subscribed);
  if (filter.text) {
    // No index serves a substring: this reads the book, which a person's search can afford.
    const pattern = containing(filter.text);
    const name = sql<string>`coalesce(first_name, '') || ' ' || coalesce(last_name, '')`;
    query = query.where((eb) => eb.or([eb('email', 'ilike', pattern), eb(name, 'ilike', pattern)]));
  }
  return query;
}

/** One page in creation order (contacts_book_order), and the number of contacts the filter matches. */
export async function listContacts(
  db: Db,
  teamId: number,
  bookId: string,
  filter: ContactFilter,
  page: { offset: number; limit: number },
) {
  const [rows, total] = await Promise.all([
    filtered(db, teamId, bookId, filter)
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .offset(page.offset)
      .limit(page.limit)
      .execute(),
    filtered(db, teamId, bookId, filter)
      .select(sql<number>`count(*)::int`.as('total'))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: total.total };
}

/**
 * Deletes the contacts matching any of the ids or addresses; answers how many went and, with
 * `withRows`, the rows as they were.
 */
export async function deleteContacts(db: Db, teamId: number, bookId: string, keys: { ids: string[]; emails: string[] }, withRows: boolean) {
  const query = db
    .deleteFrom('contacts')
    .where('team_id', '=', teamId)
    .where('contact_book_id', '=', bookId)
    .where((eb) => eb.or([eb('id', '=', sql<string>`ANY(${keys.ids}::text[])`), eb(sql`lower(email)`, '=', anyEmailKey(keys.emails))]));
  if (withRows) {
    const rows = await query.returningAll().execute();
    return { count: rows.length, rows };
  }
  const result = await query.executeTakeFirst();
  return { count: Number(result.numDeletedRows), rows: [] };
}

/** The contacts of these ids in one book, as they are now (contacts primary key, one probe each). */
export async function findContactsByIds(db: Db, teamId: number, bookId: string, ids: string[]): Promise<ContactRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<ContactRow>`
    SELECT c.* FROM unnest(${ids}::text[]) AS n(id)
    CROSS JOIN LATERAL (SELECT * FROM contacts c WHERE c.team_id = ${teamId} AND c.contact_book_id = ${bookId} AND c.id = n.id OFFSET 0) c`.execute(db);
  return rows;
}

/** Which unique index a failed write ran into, if that is why it failed. */
export function uniqueViolation(error: unknown): 'email' | 'id' | null {
  if (typeof error !== 'object' || error === null || (error as { code?: unknown }).code !== '23505') return null;
  const constraint = (error as { constraint?: unknown }).constraint;
  if (constraint === 'contacts_email') return 'email';
  if (constraint === 'contacts_pkey') return 'id';
  return null;
}

/** Records that a confirmation went to these contacts now (contacts primary key). */
export async function markConfirmationSent(db: Db, teamId: number, bookId: string, ids: string[], now: Date) {
  if (ids.length === 0) return;
  await sql`
    UPDATE contacts SET confirmation_sent_at = ${now}
    WHERE team_id = ${teamId} AND contact_book_id = ${bookId} AND id = ANY(${ids}::text[])`.execute(db);
}

/**
 * Subscribes a contact that confirmed its double opt-in (contacts primary key). Answers what it
 * found: confirmed now (with the row as it left it), already subscribed or having left since
 * (nothing changes), or missing.
 */
export async function confirmContact(
  db: Db,
  key: { teamId: number; bookId: string; contactId: string },
  now: Date,
): Promise<{ outcome: 'confirmed'; contact: ContactRow } | { outcome: 'unchanged' | 'missing' }> {
  const { rows } = await sql<ContactRow & { confirmed: boolean }>`
    WITH confirmed AS (
      UPDATE contacts SET subscribed = true, pending_confirmation = false, unsubscribe_reason = NULL, updated_at = ${now}
      WHERE team_id = ${key.teamId} AND contact_book_id = ${key.bookId} AND id = ${key.contactId} AND pending_confirmation
      RETURNING *
    )
    SELECT *, true AS confirmed FROM confirmed
    UNION ALL
    SELECT *, false FROM contacts
    WHERE team_id = ${key.teamId} AND contact_book_id = ${key.bookId} AND id = ${key.contactId} AND NOT pending_confirmation`.execute(db);
  const confirmed = rows.find((row) => row.confirmed);
  if (confirmed) {
    const { confirmed: _flag, ...contact } = confirmed;
    return { outcome: 'confirmed', contact };
  }
  return { outcome: rows.length === 0 ? 'missing' : 'unchanged' };
}

/**
 * Unsubscribes a contact (contacts primary key); one already unsubscribed is left as it is, and a
 * bounce or complaint already recorded stays the reason. Answers whether the contact exists, and
 * the row as the change left it when it changed.
 */
export async function unsubscribeContact(
  db: Db,
  key: { teamId: number; bookId: string; contactId: string },
  now: Date,
): Promise<{ found: boolean; changed: ContactRow | null }> {
  const changed = await db
    .updateTable('contacts')
    .set({ subscribed: false, pending_confirmation: false, unsubscribe_reason: sql`COALESCE(unsubscribe_reason, 'UNSUBSCRIBED')`, updated_at: now })
    .where('team_id', '=', key.teamId)
    .where('contact_book_id', '=', key.bookId)
    .where('id', '=', key.contactId)
    .where((eb) => eb.or([eb('subscribed', '=', true), eb('pending_confirmation', '=', true), eb('unsubscribe_reason', 'is', null)]))
    .returningAll()
    .executeTakeFirst();
  if (changed) return { found: true, changed };
  const found = await db.selectFrom('contacts').select('id').where('team_id', '=', key.teamId).where('contact_book_id', '=', key.bookId).where('id', '=', key.contactId).executeTakeFirst();
  return { found: found !== undefined, changed: null };
}
