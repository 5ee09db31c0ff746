import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import { COUNT_KINDS, type ContactsTable, type CountKind, type EmailStatus, type SuppressionReason } from '../db/schema.js';

// The statements an email event is written with. What an event does (its status rank, what it
// counts, whom it suppresses, its webhook payload) is the events module's to say: here it is only
// written.

/** Each email status's rank: an event moves an email's status only to one of equal or higher rank. */
export type StatusRanks = Record<EmailStatus, number>;

/** The rank of a status column, as a CASE over the ranks (literals, so the statement's text stays one). */
export const rankSql = (column: RawBuilder<unknown>, ranks: StatusRanks) =>
  sql`(CASE ${column} ${sql.join(Object.entries(ranks).map(([status, n]) => sql`WHEN ${sql.lit(status)} THEN ${sql.lit(n)}`), sql` `)} END)`;

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
 * (unless `ranks` is null: the caller has just moved it, in the same transaction), in one
 * statement. Answers, for each event given, whether it was appended. Uses the email_events primary
 * key and email_events_dedupe, then the emails primary key.
 */
export async function appendEvents(tx: Db, events: NewEvent[], now: Date, ranks: StatusRanks | null): Promise<boolean[]> {
  if (events.length === 0) return [];
  const rows = events.map((event, ord) => ({ team_id: event.teamId, email_id: event.emailId, status: event.status, data: event.data, dedupe_key: event.dedupeKey, ord }));
  const { rows: keyed } = await sql<{ team_id: number; email_id: string; dedupe_key: string }>`
    WITH ev AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
        AS ev(team_id integer, email_id text, status text, data jsonb, dedupe_key text, ord integer)
    ), inserted AS (
      INSERT INTO email_events (team_id, email_id, status, data, created_at, dedupe_key)
      SELECT team_id, email_id, status, data, ${now}, dedupe_key FROM ev ORDER BY ord
      ON CONFLICT (team_id, email_id, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
      RETURNING team_id, email_id, status, dedupe_key, seq
    )${ranks === null ? sql`` : sql`, latest AS (
      SELECT DISTINCT ON (team_id, email_id) team_id, email_id, status FROM inserted
      ORDER BY team_id, email_id, ${rankSql(sql.ref('status'), ranks)} DESC, seq DESC
    ), moved AS (
      UPDATE emails e SET status = l.status, updated_at = ${now}
      FROM latest l
      WHERE e.team_id = l.team_id AND e.id = l.email_id AND ${rankSql(sql.ref('l.status'), ranks)} >= ${rankSql(sql.ref('e.status'), ranks)}
    )`}
    SELECT team_id, email_id, dedupe_key FROM inserted WHERE dedupe_key IS NOT NULL`.execute(tx);
  // An event without a key is always appended; one with a key, when its key was new to its email.
  const appended = new Set(keyed.map((row) => `${row.team_id} ${row.email_id} ${row.dedupe_key}`));
  return events.map((event) => event.dedupeKey === null || appended.has(`${event.teamId} ${event.emailId} ${event.dedupeKey}`));
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
 * Takes the recipients of campaign and automation mail out of their book's mailing for a bounce
 * or complaint, keeping a reason they already have (a confirmation's contact, in no campaign or
 * run, is left as it is). Answers the contacts it changed, as it left them. Rare, so a join per
 * recipient: the emails, campaigns, automation runs and contacts primary keys.
 */
export async function unsubscribeRecipients(
  tx: Db,
  recipients: { teamId: number; emailId: string; reason: 'BOUNCED' | 'COMPLAINED' }[],
  now: Date,
): Promise<Selectable<ContactsTable>[]> {
  if (recipients.length === 0) return [];
  const json = JSON.stringify(recipients.map((r) => ({ team_id: r.teamId, email_id: r.emailId, reason: r.reason })));
  const { rows } = await sql<Selectable<ContactsTable>>`
    UPDATE contacts c SET subscribed = false, unsubscribe_reason = COALESCE(c.unsubscribe_reason, r.reason), updated_at = ${now}
    FROM jsonb_to_recordset(${json}::jsonb) AS r(team_id integer, email_id text, reason text)
    JOIN emails e ON e.team_id = r.team_id AND e.id = r.email_id
    LEFT JOIN campaigns cp ON cp.team_id = e.team_id AND cp.id = e.campaign_id
    LEFT JOIN automation_runs ar ON ar.team_id = e.team_id AND ar.id = e.automation_run_id
    WHERE c.team_id = r.team_id AND c.contact_book_id = COALESCE(cp.contact_book_id, ar.contact_book_id) AND c.id = e.contact_id
      AND (c.subscribed OR c.unsubscribe_reason IS NULL)
    RETURNING c.*`.execute(tx);
  return rows;
}
