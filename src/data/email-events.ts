import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/connection.js';
import { COUNT_KINDS, type CountKind, type EmailStatus, type SuppressionReason } from '../db/schema.js';
import { contactEventCalls, emailEventCalls } from './webhook-outbox.js';

/**
 * Which status an email shows when several events have happened to it: an event moves the status
 * only to one of equal or higher rank, so a late OPENED never hides a BOUNCED, and a DSN that says
 * "delayed" after the receiver accepted the message leaves it DELIVERED. DELIVERY_DELAYED ranks
 * above SENT because a message handed over and then held up is not yet delivered; an accepted
 * retry moves on, as acceptance always comes with DELIVERED. The outcomes that end
 * sending (cancelled, failed, rejected, suppressed) rank above all feedback, which never follows them.
 */
export const STATUS_PRECEDENCE: Record<EmailStatus, number> = {
  SCHEDULED: 0,
  QUEUED: 1,
  SENT: 2,
  DELIVERY_DELAYED: 3,
  DELIVERED: 4,
  OPENED: 5,
  CLICKED: 6,
  BOUNCED: 7,
  COMPLAINED: 8,
  CANCELLED: 9,
  FAILED: 9,
  REJECTED: 9,
  SUPPRESSED: 9,
};

export const rank = (column: RawBuilder<unknown>) =>
  sql`(CASE ${column} ${sql.join(Object.entries(STATUS_PRECEDENCE).map(([status, n]) => sql`WHEN ${sql.lit(status)} THEN ${sql.lit(n)}`), sql` `)} END)`;

/** The status a run of new events moves an email to (where it does not rank below its own): the highest-ranked, the last of equals. */
export function statusAfter(events: { status: EmailStatus }[]): EmailStatus | null {
  let status: EmailStatus | null = null;
  for (const event of events) if (status === null || STATUS_PRECEDENCE[event.status] >= STATUS_PRECEDENCE[status]) status = event.status;
  return status;
}

/** The counters an event bumps, once per email and kind. */
export function countKinds(event: { status: EmailStatus; data: Record<string, unknown> | null }): CountKind[] {
  switch (event.status) {
    case 'SENT': return ['sent'];
    case 'DELIVERED': return ['delivered'];
    case 'OPENED': return ['opened'];
    case 'CLICKED': return ['clicked'];
    case 'COMPLAINED': return ['complained'];
    case 'BOUNCED': return event.data?.bounceType === 'Permanent' ? ['bounced', 'hard_bounced'] : ['bounced'];
    default: return [];
  }
}

export type NewEvent = {
  teamId: number;
  emailId: string;
  status: EmailStatus;
  data: Record<string, unknown> | null;
  /** Derived from a report: an event whose key the email already has is not appended again. */
  dedupeKey: string | null;
};

/**
 * Appends the events (those whose dedupe key is new) in the given order, and moves each email's
 * status to the highest-ranked of its new events where that does not rank below its status now
 * (unless `statusMoved`: the caller has just moved it with statusAfter, in the same transaction),
 * and writes the webhook calls the appended events owe, in one statement. Answers the events
 * appended. Uses the email_events primary key and email_events_dedupe, then the emails primary key.
 */
export async function appendEvents(tx: Db, events: NewEvent[], now: Date, statusMoved = false): Promise<NewEvent[]> {
  if (events.length === 0) return [];
  const rows = events.map((event, ord) => ({ team_id: event.teamId, email_id: event.emailId, status: event.status, data: event.data, dedupe_key: event.dedupeKey, ord }));
  const { rows: appended } = await sql<{ team_id: number; email_id: string; status: EmailStatus; data: Record<string, unknown> | null; dedupe_key: string | null }>`
    WITH ev AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        AS ev(team_id integer, email_id text, status text, data jsonb, dedupe_key text, ord integer)
    ), inserted AS (
      INSERT INTO email_events (team_id, email_id, status, data, created_at, dedupe_key)
      SELECT team_id, email_id, status, data, ${now}, dedupe_key FROM ev ORDER BY ord
      ON CONFLICT (team_id, email_id, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
      RETURNING team_id, email_id, status, data, dedupe_key, seq
    )${statusMoved ? sql`` : sql`, latest AS (
      SELECT DISTINCT ON (team_id, email_id) team_id, email_id, status FROM inserted
      ORDER BY team_id, email_id, ${rank(sql.ref('status'))} DESC, seq DESC
    ), moved AS (
      UPDATE emails e SET status = l.status, updated_at = ${now}
      FROM latest l
      WHERE e.team_id = l.team_id AND e.id = l.email_id AND ${rank(sql.ref('l.status'))} >= ${rank(sql.ref('e.status'))}
    )`}, appended AS (
      -- A probe of the emails primary key per event (OFFSET 0 keeps the planner from making it a
      -- join it might run as a scan of every email: PGlite's tables have no statistics).
      SELECT e.*, i.status AS status_now, i.data AS details, ${now}::timestamptz AS at, i.seq AS ord
      FROM inserted i
      CROSS JOIN LATERAL (SELECT * FROM emails e WHERE e.team_id = i.team_id AND e.id = i.email_id OFFSET 0) e
    ), calls AS (
      ${emailEventCalls('appended', 'status_now', sql`${[...new Set(events.map((event) => event.teamId))]}::integer[]`)}
    )
    SELECT team_id, email_id, status, data, dedupe_key FROM inserted ORDER BY seq`.execute(tx);
  return appended.map((row) => ({ teamId: row.team_id, emailId: row.email_id, status: row.status, data: row.data, dedupeKey: row.dedupe_key }));
}

export type Counted = { teamId: number; emailId: string; kind: CountKind; campaignId: string | null; domainId: number; contactId: string | null };

/** One column per kind: how many of the group's rows are of it. */
const sums = () => sql.join(COUNT_KINDS.map((kind) => sql`count(*) FILTER (WHERE kind = ${sql.lit(kind)}) AS ${sql.ref(kind)}`));

/**
 * The CTEs that count each (email, kind) of relation `k` (team_id, email_id, kind; distinct) once:
 * what email_counts did not have yet bumps the email's campaign counters and its team's, domain's
 * and day's counters (UTC). `fresh` holds what was newly counted. Uses the email_counts, emails,
 * campaigns and daily_email_counts primary keys.
 */
export function countOnceCtes(k: string, now: Date): RawBuilder<unknown> {
  const day = now.toISOString().slice(0, 10);
  return sql`counted AS (
      INSERT INTO email_counts (team_id, email_id, kind) SELECT team_id, email_id, kind FROM ${sql.table(k)}
      ON CONFLICT DO NOTHING
      RETURNING team_id, email_id, kind
    ), fresh AS (
      SELECT c.team_id, c.email_id, c.kind, e.campaign_id, COALESCE(e.domain_id, 0) AS domain_id, e.contact_id
      FROM counted c JOIN emails e ON e.team_id = c.team_id AND e.id = c.email_id
    ), per_campaign AS (
      SELECT team_id, campaign_id, ${sums()} FROM fresh WHERE campaign_id IS NOT NULL GROUP BY team_id, campaign_id
    ), bumped AS (
      UPDATE campaigns c SET
        ${sql.join(COUNT_KINDS.map((kind) => sql`${sql.ref(kind)} = c.${sql.ref(kind)} + s.${sql.ref(kind)}`))},
        updated_at = ${now}
      FROM per_campaign s WHERE c.team_id = s.team_id AND c.id = s.campaign_id
    ), daily AS (
      INSERT INTO daily_email_counts (team_id, domain_id, day, ${sql.join(COUNT_KINDS.map((kind) => sql.ref(kind)))})
      SELECT team_id, domain_id, ${day}::date, ${sums()} FROM fresh GROUP BY team_id, domain_id
      ON CONFLICT (team_id, domain_id, day) DO UPDATE SET
        ${sql.join(COUNT_KINDS.map((kind) => sql`${sql.ref(kind)} = daily_email_counts.${sql.ref(kind)} + excluded.${sql.ref(kind)}`))}
    )`;
}

/** Counts each (email, kind) once (countOnceCtes), in one statement. Answers what was newly counted. */
export async function countOnce(tx: Db, counts: { teamId: number; emailId: string; kind: CountKind }[], now: Date): Promise<Counted[]> {
  if (counts.length === 0) return [];
  const json = JSON.stringify(counts.map((c) => ({ team_id: c.teamId, email_id: c.emailId, kind: c.kind })));
  const { rows } = await sql<{ team_id: number; email_id: string; kind: CountKind; campaign_id: string | null; domain_id: number; contact_id: string | null }>`
    WITH k AS (
      SELECT DISTINCT team_id, email_id, kind FROM jsonb_to_recordset(${json}::jsonb) AS k(team_id integer, email_id text, kind text)
    ), ${countOnceCtes('k', now)}
    SELECT team_id, email_id, kind, campaign_id, domain_id, contact_id FROM fresh`.execute(tx);
  return rows.map((row) => ({
    teamId: row.team_id, emailId: row.email_id, kind: row.kind, campaignId: row.campaign_id, domainId: row.domain_id, contactId: row.contact_id,
  }));
}

/** Adds addresses to the teams' suppression lists; one already there keeps its first entry. Suppressions primary key. */
export async function addSuppressions(tx: Db, entries: { teamId: number; email: string; reason: SuppressionReason; sourceEmailId: string }[], now: Date) {
  if (entries.length === 0) return;
  const json = JSON.stringify(entries.map((s) => ({ team_id: s.teamId, email: s.email.toLowerCase(), reason: s.reason, source_email_id: s.sourceEmailId })));
  await sql`
    INSERT INTO suppressions (team_id, email, reason, source_email_id, created_at)
    SELECT s.team_id, s.email, s.reason, s.source_email_id, ${now}
    FROM jsonb_to_recordset(${json}::jsonb) AS s(team_id integer, email text, reason text, source_email_id text)
    ON CONFLICT (team_id, email) DO NOTHING`.execute(tx);
}

/**
 * Takes campaign recipients out of their book's mailing for a bounce or complaint, keeping a
 * reason they already have, with the webhook calls of the change. Rare, so a join per call: the
 * campaigns and contacts primary keys.
 */
export async function unsubscribeRecipients(
  tx: Db,
  recipients: { teamId: number; campaignId: string; contactId: string; reason: 'BOUNCED' | 'COMPLAINED' }[],
  now: Date,
) {
  if (recipients.length === 0) return;
  const json = JSON.stringify(recipients.map((r) => ({ team_id: r.teamId, campaign_id: r.campaignId, contact_id: r.contactId, reason: r.reason })));
  await sql`
    WITH changed AS (
      UPDATE contacts c SET subscribed = false, unsubscribe_reason = COALESCE(c.unsubscribe_reason, r.reason), updated_at = ${now}
      FROM jsonb_to_recordset(${json}::jsonb) AS r(team_id integer, campaign_id text, contact_id text, reason text)
      JOIN campaigns cp ON cp.team_id = r.team_id AND cp.id = r.campaign_id
      WHERE c.team_id = r.team_id AND c.contact_book_id = cp.contact_book_id AND c.id = r.contact_id
        AND (c.subscribed OR c.unsubscribe_reason IS NULL)
      RETURNING c.*
    )
    ${contactEventCalls('changed', 'contact.updated', sql`${[...new Set(recipients.map((r) => r.teamId))]}::integer[]`, now)}`.execute(tx);
}
