import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { CampaignStatus, CampaignsTable } from '../db/schema.js';
import { emailEventCalls } from './webhook-outbox.js';
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

export async function insertCampaign(db: Db, c: NewCampaign) {
  await db
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
    .execute();
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

export async function updateCampaign(db: Db, teamId: number, id: string, set: Partial<Omit<CampaignRow, 'team_id' | 'id' | 'reply_to_addresses' | 'cc_addresses' | 'bcc_addresses'>>) {
  await db.updateTable('campaigns').set(set).where('team_id', '=', teamId).where('id', '=', id).execute();
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
  await db.updateTable('campaigns').set({ contact_book_id: null }).where('team_id', '=', teamId).where('contact_book_id', '=', bookId).execute();
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

/**
 * Cancels every email of the campaign not yet handed to SMTP (held or due, unclaimed), each with a
 * CANCELLED event and the webhook calls it owes, in one statement. Claimed rows are left to their
 * dispatcher, which finds the campaign gone and cancels them itself. Walks the campaign's mail
 * through emails_campaign_contact. Answers how many were cancelled.
 */
export async function cancelCampaignEmails(db: Db, teamId: number, campaignId: string, now: Date): Promise<number> {
  const result = await sql`
    WITH cancelled AS (
      UPDATE emails SET status = 'CANCELLED', send_at = NULL, updated_at = ${now}
      WHERE team_id = ${teamId} AND campaign_id = ${campaignId} AND claimed_by IS NULL AND ${unsent}
      RETURNING *
    ), event AS (
      SELECT *, '{"reason":"campaign deleted"}'::jsonb AS details, ${now}::timestamptz AS at, row_number() OVER () AS ord FROM cancelled
    ), calls AS (
      ${emailEventCalls('event', 'status', sql`ARRAY[${teamId}]::integer[]`)}
    )
    INSERT INTO email_events (team_id, email_id, status, data, created_at)
    SELECT team_id, id, status, details, at FROM event`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** How many of the campaign's emails a dispatcher holds right now (emails_campaign_pending). */
export async function countClaimedEmails(db: Db, teamId: number, campaignId: string, now: Date): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM emails
    WHERE team_id = ${teamId} AND campaign_id = ${campaignId} AND send_at IS NOT NULL
      AND claimed_by IS NOT NULL AND lease_until > ${now}`.execute(db);
  return rows[0]!.n;
}

/**
 * Pauses the team's SCHEDULED and RUNNING campaigns that send from the domain, recording why, and
 * holds their unclaimed mail. Answers the ids paused. Walks campaigns_team_created.
 */
export async function pauseCampaignsOfDomain(db: Db, teamId: number, domainId: number, reason: string, now: Date): Promise<string[]> {
  const paused = await db
    .updateTable('campaigns')
    .set({ status: 'PAUSED', paused_reason: reason, next_release_at: null, updated_at: now })
    .where('team_id', '=', teamId)
    .where('domain_id', '=', domainId)
    .where('status', 'in', ['SCHEDULED', 'RUNNING'])
    .returning('id')
    .execute();
  for (const { id } of paused) await holdCampaignEmails(db, teamId, id, now);
  return paused.map((row) => row.id);
}
