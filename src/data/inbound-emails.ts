import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { InboundEmailsTable } from '../db/schema.js';

export type InboundEmailRow = Selectable<InboundEmailsTable>;

export type NewInboundEmail = Omit<InboundEmailRow, 'body_dropped_at'> & { raw: Buffer };

/** Every column (the raw message is in inbound_email_parts, which only its own downloads read). */
const COLUMNS = [
  'team_id', 'id', 'route_id', 'mail_from', 'rcpt_to', 'client_address', 'helo', 'from_address', 'to_addresses', 'cc_addresses',
  'subject', 'text', 'html', 'headers', 'message_id', 'in_reply_to', 'in_reply_to_email_id', 'attachments', 'authentication', 'size',
  'received_at', 'body_dropped_at',
] as const;

/** How much of a raw message one row of inbound_email_parts holds. */
const PART_BYTES = 1024 * 1024;

/**
 * Stores a received message: its row, and its raw bytes a part at a time (the first part with
 * the row, in one statement), so that no statement carries more than a part.
 */
export async function insertInboundEmail(db: Db, email: NewInboundEmail): Promise<void> {
  const { raw, ...row } = email;
  const part = (seq: number) => ({ team_id: row.team_id, email_id: row.id, seq, bytes: raw.subarray(seq * PART_BYTES, (seq + 1) * PART_BYTES) });
  await db
    .with('email', (db) =>
      db.insertInto('inbound_emails').values({
        ...row,
        rcpt_to: JSON.stringify(row.rcpt_to),
        to_addresses: JSON.stringify(row.to_addresses),
        cc_addresses: JSON.stringify(row.cc_addresses),
        headers: JSON.stringify(row.headers),
        attachments: JSON.stringify(row.attachments),
        authentication: JSON.stringify(row.authentication),
      }),
    )
    .insertInto('inbound_email_parts')
    .values(part(0))
    .execute();
  for (let seq = 1; seq * PART_BYTES < raw.length; seq++) await db.insertInto('inbound_email_parts').values(part(seq)).execute();
}

export type InboundSearch = { routeId: string | null; from: string | null; to: string | null };

function searched(db: Db, teamId: number, search: InboundSearch) {
  let query = db.selectFrom('inbound_emails').where('team_id', '=', teamId);
  if (search.routeId !== null) query = query.where('route_id', '=', search.routeId);
  if (search.from !== null) query = query.where(sql`lower(from_address)`, '=', search.from.toLowerCase());
  if (search.to !== null) {
    const address = JSON.stringify([search.to.toLowerCase()]);
    query = query.where(sql<boolean>`(rcpt_to @> ${address}::jsonb OR to_addresses @> ${address}::jsonb OR cc_addresses @> ${address}::jsonb)`);
  }
  return query;
}

/** A page of the team's received mail, newest first (inbound_emails_team_received), and how many match. */
export async function listInboundEmails(db: Db, teamId: number, search: InboundSearch, page: { offset: number; limit: number }) {
  const [rows, total] = await Promise.all([
    searched(db, teamId, search).select(COLUMNS).orderBy('received_at', 'desc').orderBy('id', 'desc').offset(page.offset).limit(page.limit).execute(),
    searched(db, teamId, search).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows as InboundEmailRow[], count: Number(total.n) };
}

export async function findInboundEmail(db: Db, teamId: number, id: string): Promise<InboundEmailRow | undefined> {
  return (await db.selectFrom('inbound_emails').select(COLUMNS).where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst()) as InboundEmailRow | undefined;
}

/** The message as it arrived; null once retention dropped it, undefined when there is no such email. */
export async function findRawInboundEmail(db: Db, teamId: number, id: string): Promise<Buffer | null | undefined> {
  const email = await db.selectFrom('inbound_emails').select('body_dropped_at').where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
  if (email === undefined) return undefined;
  if (email.body_dropped_at !== null) return null;
  const parts = await db.selectFrom('inbound_email_parts').select('bytes').where('team_id', '=', teamId).where('email_id', '=', id).orderBy('seq').execute();
  return Buffer.concat(parts.map((part) => part.bytes));
}
