import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { CampaignStatus, CampaignsTable } from '../db/schema.js';
import type { EmailRow } from './emails.js';
import { containing } from './like.js';

export type CampaignRow = Selectable<CampaignsTable>;

export type NewCampaign = {
  teamId: number;
  id: string;
  name: string;
  domainId: number;
  from: string;
  subject: string;
  previewText: string | null;
  contactBookId: string;
  segmentId: string | null;
  html: string;
  content: string | null;
  replyTo: string[];
  cc: string[];
  bcc: string[];
  status: 'DRAFT' | 'SCHEDULED';
  scheduledAt: Date | null;
  batchSize: number;
  batchWindowMinutes: number;
  now: Date;
};

export async function insertCampaign(db: Db, c: NewCampaign): Promise<CampaignRow> {
  return db
    .insertInto('campaigns')
    .values({
      team_id: c.teamId,
      id: c.id,
      name: c.name,
      domain_id: c.domainId,
      from_address: c.from,
      subject: c.subject,
      preview_text: c.previewText,
      contact_book_id: c.contactBookId,
      segment_id: c.segmentId,
      html: c.html,
      content: c.content,
      reply_to_addresses: JSON.stringify(c.replyTo),
      cc_addresses: JSON.stringify(c.cc),
      bcc_addresses: JSON.stringify(c.bcc),
      status: c.status,
      scheduled_at: c.scheduledAt,
      batch_size: c.batchSize,
      batch_window_minutes: c.batchWindowMinutes,
      next_release_at: c.status === 'SCHEDULED' ? c.scheduledAt : null,
      created_at: c.now,
      updated_at: c.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Uses the primary key; `forUpdate` makes state moves of one campaign take turns. */
export async function findCampaign(db: Db, teamId: number, id: string, forUpdate = false) {
  let query = db.selectFrom('campaigns').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** Newest first through campaigns_team_created; `search` matches name or subject. */
export async function listCampaigns(
  db: Db,
  teamId: number,
  filter: { domainId: number | null; status?: CampaignStatus; search?: string },
  page: { offset: number; limit: number },
) {
  let query = db.selectFrom('campaigns').where('team_id', '=', teamId);
  if (filter.domainId !== null) query = query.where('domain_id', '=', filter.domainId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.search) {
    const pattern = containing(filter.search);
    query = query.where((eb) => eb.or([eb('name', 'ilike', pattern), eb('subject', 'ilike', pattern)]));
  }
  const [rows, total] = await Promise.all([
    query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').offset(page.offset).limit(page.limit).execute(),
    query.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, count: total.n };
}

/** Answers the row as the update left it. */
export async function updateCampaign(db: Db, teamId: number, id: string, set: Partial<Omit<CampaignRow, 'team_id' | 'id' | 'reply_to_addresses' | 'cc_addresses' | 'bcc_addresses'>>) {
  return db.updateTable('campaigns').set(set).where('team_id', '=', teamId).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
}

export async function deleteCampaignRow(db: Db, teamId: number, id: string) {
  await db.deleteFrom('campaigns').where('team_id', '=', teamId).where('id', '=', id).execute();
}

/** A SCHEDULED or RUNNING campaign of the team that mails this book (campaigns_book). */
export async function findActiveCampaignOfBook(db: Db, teamId: number, bookId: string) {
  return db
    .selectFrom('campaigns')
    .select(['id', 'name', 'status'])
    .where('team_id', '=', teamId)
    .where('contact_book_id', '=', bookId)
    .where('status', 'in', ['SCHEDULED', 'RUNNING'])
    .executeTakeFirst();
}

/** The book's campaigns (campaigns_book) keep their history without it. */
export async function detachBook(db: Db, teamId: number, bookId: string) {
  await db.updateTable('campaigns').set({ contact_book_id: null, segment_id: null }).where('team_id', '=', teamId).where('contact_book_id', '=', bookId).execute();
}

/**
 * Holds the campaign's mail no dispatcher has claimed: it stays QUEUED (or DELIVERY_DELAYED) with
 * no send time, so no claim picks it up. A row a claim holds is skipped, and its dispatcher sees
 * the campaign paused and puts it back held. Uses emails_campaign_pending.
 */
export async function holdCampaignEmails(db: Db, teamId: number, campaignId: string, now: Date) {
  await sql`
    UPDATE emails SET send_at = NULL, updated_at = ${now}
    WHERE team_id = ${teamId} AND campaign_id = ${campaignId} AND send_at IS NOT NULL AND claimed_by IS NULL`.execute(db);
}

/**
 * Mail still to be sent: QUEUED, or DELIVERY_DELAYED by a relay that refused it for now. Mail the
 * relay took has a SENT event; a DSN can still make it DELIVERY_DELAYED, with nothing left to send.
 * One probe of the email_events primary key per row.
 */
const unsent = sql`emails.status IN ('QUEUED', 'DELIVERY_DELAYED')
  AND NOT EXISTS (SELECT 1 FROM email_events ev WHERE ev.team_id = emails.team_id AND ev.email_id = emails.id AND ev.status = 'SENT')`;

/** Gives held mail a send time again. Walks the campaign's mail through emails_campaign_contact. */
export async function releaseHeldEmails(db: Db, teamId: number, campaignId: string, sendAt: Date) {
  await sql`
    UPDATE emails SET send_at = ${sendAt}, updated_at = now()
    WHERE team_id = ${teamId} AND campaign_id = ${campaignId} AND send_at IS NULL AND ${unsent}`.execute(db);
}

/** What an email event's payload tells of an email, as a statement returns it. */
const SNAPSHOT_COLUMNS = ['id', 'from_address', 'to_addresses', 'subject', 'campaign_id', 'contact_id', 'domain_id', 'template_id'] as const;
const SNAPSHOT = sql.raw(SNAPSHOT_COLUMNS.join(', '));
export type EmailSnapshotRow = Pick<EmailRow, (typeof SNAPSHOT_COLUMNS)[number]>;

/**
 * Cancels every email of the campaign not yet handed to SMTP (held or due, unclaimed), each with a
 * CANCELLED event (`data`), in one statement. Claimed rows are left to their dispatcher, which
 * finds the campaign gone and cancels them itself. Walks the campaign's mail through
 * emails_campaign_contact. Answers how many were cancelled and, with `withRows`, each email as
 * the cancellation left it.
 */
export async function cancelCampaignEmails(
  db: Db,
  cancel: { teamId: number; campaignId: string; data: Record<string, unknown>; now: Date; withRows: boolean },
): Promise<{ count: number; rows: EmailSnapshotRow[] }> {
  const { teamId, campaignId, data, now, withRows } = cancel;
  const { rows } = await sql<{ n: number; cancelled: EmailSnapshotRow[] | null }>`
    WITH cancelled AS (
      UPDATE emails SET status = 'CANCELLED', send_at = NULL, updated_at = ${now}
      WHERE team_id = ${teamId} AND campaign_id = ${campaignId} AND claimed_by IS NULL AND ${unsent}
      RETURNING team_id, ${SNAPSHOT}
    ), events AS (
      INSERT INTO email_events (team_id, email_id, status, data, created_at)
      SELECT team_id, id, 'CANCELLED', ${JSON.stringify(data)}::jsonb, ${now} FROM cancelled
      RETURNING email_id
    )
    SELECT (SELECT count(*)::int FROM events) AS n,
      CASE WHEN ${withRows} THEN (SELECT json_agg(json_build_object(${sql.join(SNAPSHOT_COLUMNS.map((column) => sql`${column}::text, c.${sql.ref(column)}`))})) FROM cancelled c) END AS cancelled`.execute(db);
  return { count: rows[0]!.n, rows: rows[0]!.cancelled ?? [] };
}

/** How many of the campaign's emails a dispatcher holds right now (emails_campaign_pending). */
export async function countClaimedEmails(db: Db, teamId: number, campaignId: string, now: Date): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM emails
    WHERE team_id = ${teamId} AND campaign_id = ${campaignId} AND send_at IS NOT NULL
      AND claimed_by IS NOT NULL AND lease_until > ${now}`.execute(db);
  return rows[0]!.n;
}

/** A campaign as a write left it, with the status it had before. */
export type CampaignChange = { row: CampaignRow; previous: CampaignStatus };

/**
 * Pauses the team's SCHEDULED and RUNNING campaigns that send from the domain, recording why, and
 * holds their unclaimed mail. Answers each campaign paused. Walks campaigns_team_created.
 */
export async function pauseCampaignsOfDomain(db: Db, teamId: number, domainId: number, reason: string, now: Date): Promise<CampaignChange[]> {
  const { rows } = await sql<CampaignRow & { previous_status: CampaignStatus }>`
    WITH before AS (
      SELECT id, status FROM campaigns
      WHERE team_id = ${teamId} AND domain_id = ${domainId} AND status IN ('SCHEDULED', 'RUNNING')
      FOR UPDATE
    )
    UPDATE campaigns c SET status = 'PAUSED', paused_reason = ${reason}, next_release_at = NULL, updated_at = ${now}
    FROM before b WHERE c.team_id = ${teamId} AND c.id = b.id
    RETURNING c.*, b.status AS previous_status`.execute(db);
  for (const { id } of rows) await holdCampaignEmails(db, teamId, id, now);
  return rows.map(({ previous_status, ...row }) => ({ row, previous: previous_status }));
}
