import { sql } from 'kysely';
import type { Db } from '../db/connection.js';
import type { CampaignRow } from './campaigns.js';
import type { CampaignChange, EmailSnapshotRow } from './campaigns.js';
import type { Filter } from '../audience/segment-filter.js';
import { filterSql, probesMail } from './segment-sql.js';
import { sortableIdSql } from './sql-values.js';

// Timestamps of the cursor travel as text: a JavaScript Date would drop their microseconds, and a
// cursor rounded down would release the contact at it a second time (or, rounded up, skip one).
export type DueCampaign = CampaignRow & { cursor_at: string | null; last_at: string | null };

/**
 * Locks one campaign with a batch due, skipping those another releaser holds; the caller's
 * transaction keeps it until the batch is committed. Uses campaigns_due.
 */
export async function claimDueCampaign(tx: Db, now: Date): Promise<DueCampaign | undefined> {
  const { rows } = await sql<DueCampaign>`
    SELECT *, cursor_created_at::text AS cursor_at, last_created_at::text AS last_at FROM campaigns
    WHERE next_release_at <= ${now} AND status IN ('SCHEDULED', 'RUNNING')
    ORDER BY next_release_at LIMIT 1
    FOR UPDATE SKIP LOCKED`.execute(tx);
  return rows[0];
}

/** The campaign's segment as a condition on contacts `c` (every contact when it has none). */
const segmentSql = (segment: Filter | null, now: Date) => (segment ? filterSql(segment, now) : sql<boolean>`TRUE`);

/**
 * Fixes the recipients at start: the book's contacts up to its newest one now, in creation order
 * (contacts_book_order, read backwards once), and `total`, those of them subscribed, not
 * suppressed and in the segment. Contacts added later are left to the next campaign.
 */
export async function startCampaign(tx: Db, campaign: CampaignRow, now: Date, segment: Filter | null): Promise<LastRecipient> {
  // Counted by a SELECT of its own, which PostgreSQL may spread over parallel workers (never a
  // statement that writes): a segment's count at a million contacts is most of a start's time.
  const { rows } = await sql<LastRecipient & { total: number }>`
    WITH last AS (
      SELECT created_at, id FROM contacts
      WHERE team_id = ${campaign.team_id} AND contact_book_id = ${campaign.contact_book_id}
      ORDER BY created_at DESC, id DESC LIMIT 1
    )
    SELECT (SELECT created_at::text FROM last) AS last_at, (SELECT id FROM last) AS last_contact_id, (
      SELECT count(*)::int FROM contacts c
      WHERE c.team_id = ${campaign.team_id} AND c.contact_book_id = ${campaign.contact_book_id} AND c.subscribed
        AND ${segmentSql(segment, now)}
        AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.team_id = c.team_id AND s.email = lower(c.email))
    ) AS total`.execute(tx);
  const { last_at, last_contact_id, total } = rows[0]!;
  await sql`
    UPDATE campaigns SET
      status = 'RUNNING', started_at = ${now}, updated_at = ${now},
      last_created_at = ${last_at}::timestamptz, last_contact_id = ${last_contact_id}, total = ${total}
    WHERE team_id = ${campaign.team_id} AND id = ${campaign.id}`.execute(tx);
  return { last_at, last_contact_id };
}

/** The last recipient in creation order; null fields when the book was empty at start. */
export type LastRecipient = { last_at: string | null; last_contact_id: string | null };

export type ReleaseBatch = {
  campaign: CampaignRow;
  cursorAt: string | null;
  last: LastRecipient;
  /** The message-id domain: the sender's. */
  domainName: string;
  now: Date;
  /** When the batch after this one is due. */
  nextAt: Date;
  /** Whether to answer the emails released (for the webhook calls they owe). */
  withRows: boolean;
  /** The segment the campaign goes to, as it is now; null: the whole book. */
  segment: Filter | null;
  /** Whether the database has statistics of mail and events (PostgreSQL; see releaseBatch). */
  mailAnalysed: boolean;
};

/**
 * Releases the next batch in one statement: the next `batch_size` contacts after the cursor (up to
 * the last recipient) in creation order through contacts_book_order, of the segment when the
 * campaign has one (its filter read in the same scan, as it is now); those subscribed and not on
 * the suppression list (one scan of its primary key for the batch) become QUEUED email rows; and
 * the cursor moves past the batch. The rows and the cursor commit together, so no contact is
 * reached twice; emails_campaign_contact, unique on (campaign, contact), makes a second row for
 * one an error rather than a second email (no ON CONFLICT: its probe of that index would double
 * what each row pays for it). A short batch was the last: the campaign then waits for its mail to
 * go out. The rows' QUEUED event is implied by the rows (see listEvents), not stored. Answers the
 * contacts read and the emails released, with `withRows` each of them as released.
 *
 * Email ids lead with their creation time in milliseconds (then 74 random bits, as a UUIDv7 has),
 * so the primary key grows at its right edge instead of taking each row on a random page.
 */
export async function releaseBatch(
  tx: Db,
  batch: ReleaseBatch,
): Promise<{ scanned: number; released: number; emails: EmailSnapshotRow[] }> {
  const c = batch.campaign;
  // A segment leaves the planner guessing how many contacts match (a JSON property, an engagement
  // probe): guessing few, it would read and sort the whole rest of the book for every batch. Walking
  // contacts_book_order in order stops at the batch's last match. With sorting priced out, the
  // planner would think the statement costly enough to compile (JIT), which takes longer than the batch.
  // On PGlite, whose emails and events have no statistics, only a segment that looks up no mail:
  // steered so, it would probe them worse.
  const steered = batch.segment !== null && (batch.mailAnalysed || !probesMail(batch.segment));
  if (steered) {
    await sql`SET LOCAL enable_sort = off`.execute(tx);
    await sql`SET LOCAL jit = off`.execute(tx);
  }
  const { rows } = await sql<{ scanned: number; released: number; emails: EmailSnapshotRow[] | null }>`
    WITH batch AS (
      SELECT c.id, c.email, c.subscribed, c.created_at FROM contacts c
      WHERE c.team_id = ${c.team_id} AND c.contact_book_id = ${c.contact_book_id}
        AND (c.created_at, c.id) > (COALESCE(${batch.cursorAt}::timestamptz, '-infinity'), COALESCE(${c.cursor_contact_id}::text, ''))
        AND (c.created_at, c.id) <= (${batch.last.last_at}::timestamptz, ${batch.last.last_contact_id}::text)
        AND ${segmentSql(batch.segment, batch.now)}
      ORDER BY c.created_at, c.id
      LIMIT ${c.batch_size}
    ), last AS (
      SELECT created_at, id FROM batch ORDER BY created_at DESC, id DESC LIMIT 1
    ), suppressed AS (
      -- The batch's suppressed addresses in one scan of the suppressions primary key, whatever the
      -- statistics say: planned from those of a book imported moments ago, a join rescanned all
      -- of the team's suppressions for each contact.
      SELECT email FROM suppressions
      WHERE team_id = ${c.team_id} AND email = ANY (ARRAY(SELECT lower(email) FROM batch WHERE subscribed))
    ), inserted AS (
      INSERT INTO emails (
        team_id, id, domain_id, from_address, to_addresses, cc_addresses, bcc_addresses, reply_to_addresses,
        subject, message_id, status, send_at, created_at, updated_at, campaign_id, contact_id
      )
      SELECT ${c.team_id}, r.id, ${c.domain_id}, ${c.from_address}, jsonb_build_array(r.email),
        ${JSON.stringify(c.cc_addresses)}::jsonb, ${JSON.stringify(c.bcc_addresses)}::jsonb, ${JSON.stringify(c.reply_to_addresses)}::jsonb,
        ${c.subject}, '<' || r.id || '@' || ${batch.domainName} || '>', 'QUEUED',
        -- Due at once by the database's clock, which the dispatcher's claim reads too.
        LEAST(${batch.now}::timestamptz, statement_timestamp()), ${batch.now}, ${batch.now}, ${c.id}, r.contact_id
      FROM (
        -- A subquery, so each row draws its id once and the message id repeats it.
        SELECT b.id AS contact_id, b.email, ${sortableIdSql} AS id
        FROM batch b
        WHERE b.subscribed
          AND lower(b.email) NOT IN (SELECT email FROM suppressed)
      ) r
      RETURNING id, from_address, to_addresses, subject, campaign_id, contact_id, domain_id, template_id
    ), moved AS (
      UPDATE campaigns SET
        cursor_created_at = COALESCE((SELECT created_at FROM last), cursor_created_at),
        cursor_contact_id = COALESCE((SELECT id FROM last), cursor_contact_id),
        status = 'RUNNING',
        released_all = (SELECT count(*) FROM batch) < ${c.batch_size},
        next_release_at = CASE WHEN (SELECT count(*) FROM batch) < ${c.batch_size} THEN NULL ELSE ${batch.nextAt}::timestamptz END,
        updated_at = ${batch.now}
      WHERE team_id = ${c.team_id} AND id = ${c.id}
    )
    SELECT (SELECT count(*)::int FROM batch) AS scanned, (SELECT count(*)::int FROM inserted) AS released,
      CASE WHEN ${batch.withRows} THEN (SELECT json_agg(i) FROM inserted i) END AS emails`.execute(tx);
  // Only after success: a failed statement aborts the transaction, and its rollback undoes the SETs.
  if (steered) {
    await sql`RESET enable_sort`.execute(tx);
    await sql`RESET jit`.execute(tx);
  }
  const row = rows[0]!;
  return { ...row, emails: row.emails ?? [] };
}

/**
 * Marks SENT every running campaign whose recipients are all released and none of whose mail is
 * still to be sent (campaigns_finishing, then a probe of emails_campaign_pending each). Answers
 * each campaign finished.
 */
export async function finishCampaigns(db: Db, now: Date): Promise<CampaignChange[]> {
  const { rows } = await sql<CampaignRow>`
    UPDATE campaigns c SET status = 'SENT', updated_at = ${now}
    WHERE c.status = 'RUNNING' AND c.released_all
      AND NOT EXISTS (SELECT 1 FROM emails e WHERE e.team_id = c.team_id AND e.campaign_id = c.id AND e.send_at IS NOT NULL)
    RETURNING c.*`.execute(db);
  return rows.map((row) => ({ row, previous: 'RUNNING' }));
}
