import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { InboundEmailsTable } from '../db/schema.js';

export type InboundEmailRow = Omit<Selectable<InboundEmailsTable>, 'raw'>;

export type NewInboundEmail = Omit<InboundEmailRow, 'body_dropped_at'> & { raw: Buffer };

/** Every column but the raw message, which only its own download reads. */
const COLUMNS = [
  'team_id', 'id', 'route_id', 'mail_from', 'rcpt_to', 'client_address', 'helo', 'from_address', 'to_addresses', 'cc_addresses',
  'subject', 'text', 'html', 'headers', 'message_id', 'in_reply_to', 'in_reply_to_email_id', 'attachments', 'authentication', 'size',
  'received_at', 'body_dropped_at',
] as const;

export async function insertInboundEmail(db: Db, email: NewInboundEmail): Promise<void> {
  await db
    .insertInto('inbound_emails')
    .values({
      ...email,
      rcpt_to: JSON.stringify(email.rcpt_to),
      to_addresses: JSON.stringify(email.to_addresses),
      cc_addresses: JSON.stringify(email.cc_addresses),
      headers: JSON.stringify(email.headers),
      attachments: JSON.stringify(email.attachments),
      authentication: JSON.stringify(email.authentication),
    })
    .execute();
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
  const row = await db.selectFrom('inbound_emails').select('raw').where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
  return row === undefined ? undefined : row.raw && Buffer.from(row.raw);
}
