import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import { REUSED } from '../db/reused-statements.js';
import type { CountKind, EmailEventsTable, EmailStatus, EmailsTable } from '../db/schema.js';
import type { SystemLink } from '../mail/links.js';
import type { OutgoingEmail } from '../mail/mime.js';
import { countOnceCtes, rankSql, type StatusRanks } from './email-events.js';
import { fromEpochMs, isoSql } from './sql-values.js';
import { callRows, callsFrom, type CallRow } from './webhook-outbox.js';
import { claimIsFree } from './workers.js';

export type EmailRow = Selectable<EmailsTable>;
export type EmailEventRow = Pick<Selectable<EmailEventsTable>, 'email_id' | 'status' | 'data' | 'created_at'>;

/** An email to store: the message as it will be built, whose it is, and when it is due. */
export type NewEmail = OutgoingEmail & {
  teamId: number;
  domainId: number;
  scheduledAt: Date | null;
  sendAt: Date;
  createdAt: Date;
  /** For a double opt-in confirmation: the contact it asks to confirm. */
  confirms?: { bookId: string; contactId: string };
  /** The template the subject and bodies were rendered from. */
  templateId?: string | null;
  /** An automation's mail: the run and the step that sent it, to the run's contact. */
  automation?: { runId: string; stepId: string; contactId: string };
  /** Mail to a person of a team (an invite, a reset), whose link is made when it is sent. */
  systemLink?: SystemLink;
};

/** The contact an email goes to as a contact: a confirmation's, or an automation run's. */
export const contactOfNew = (email: NewEmail) => email.confirms?.contactId ?? email.automation?.contactId ?? null;

/**
 * An email as a row of the emails table, in JSON: one parameter carries a whole group of them. Its
 * times travel as milliseconds since the epoch: JSON.stringify of a Date (its toJSON) cost more
 * than the rest of the row together.
 */
function emailRecord(email: NewEmail, status: EmailStatus) {
  return {
    team_id: email.teamId,
    id: email.id,
    domain_id: email.domainId,
    from_address: email.from,
    to_addresses: email.to,
    cc_addresses: email.cc,
    bcc_addresses: email.bcc,
    reply_to_addresses: email.replyTo,
    subject: email.subject,
    html: email.html,
    text: email.text,
    headers: email.headers,
    attachments: email.attachments,
    message_id: email.messageId,
    status,
    scheduled_ms: email.scheduledAt?.getTime() ?? null,
    send_ms: email.sendAt.getTime(),
    created_ms: email.createdAt.getTime(),
    contact_book_id: email.confirms?.bookId ?? null,
    contact_id: contactOfNew(email),
    template_id: email.templateId ?? null,
    automation_run_id: email.automation?.runId ?? null,
    automation_step_id: email.automation?.stepId ?? null,
    system_link: email.systemLink ?? null,
  };
}

const EMAIL_COLUMNS = sql.raw(`r(
  team_id integer, id text, domain_id integer, from_address text, to_addresses jsonb, cc_addresses jsonb, bcc_addresses jsonb,
  reply_to_addresses jsonb, subject text, html text, text text, headers jsonb, attachments jsonb, message_id text, status text,
  scheduled_ms bigint, send_ms bigint, created_ms bigint, contact_book_id text, contact_id text, template_id text,
  automation_run_id text, automation_step_id text, system_link jsonb)`);

/**
 * The rows, each with its first status, and the webhook calls their first events owe, in one
 * statement whose text is the same whatever the number of rows (they travel as one JSON
 * parameter), so the server parses one statement, not one per group size. The first events
 * themselves are read off the rows (see listEvents), not stored.
 */
export async function insertEmails(db: Db, emails: NewEmail[], statuses: EmailStatus[], calls: CallRow[]): Promise<void> {
  const teamIds = [...new Set(emails.map((email) => email.teamId))];
  await sql`${sql.raw(REUSED)}
    WITH inserted AS (
      INSERT INTO emails (team_id, id, domain_id, from_address, to_addresses, cc_addresses, bcc_addresses, reply_to_addresses,
        subject, html, text, headers, attachments, message_id, status, scheduled_at, first_scheduled_at, send_at, created_at, updated_at,
        contact_book_id, contact_id, template_id, automation_run_id, automation_step_id, system_link)
      SELECT team_id, id, domain_id, from_address, to_addresses, cc_addresses, bcc_addresses, reply_to_addresses,
        subject, html, text, headers, attachments, message_id, status, ${fromEpochMs('scheduled_ms')}, ${fromEpochMs('scheduled_ms')},
        ${fromEpochMs('send_ms')}, ${fromEpochMs('created_ms')}, ${fromEpochMs('created_ms')},
        contact_book_id, contact_id, template_id, automation_run_id, automation_step_id, system_link
      FROM jsonb_to_recordset(${JSON.stringify(emails.map((email, index) => emailRecord(email, statuses[index]!)))}::jsonb) AS ${EMAIL_COLUMNS}
    ), calls AS (
      ${callsFrom(callRows(calls), teamIds)}
    )
    SELECT 1`.execute(db);
}

export async function findEmail(db: Db, teamId: number, id: string): Promise<EmailRow | undefined> {
  return db.selectFrom('emails').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

/**
 * The email's events in time order. The first, at its creation, is not stored (accepting and
 * releasing write only the row): it is read off the row, ahead of any stored event of the same
 * instant, SCHEDULED for the time the email was accepted with, or QUEUED when it had none. Uses
 * the emails and email_events primary keys.
 */
export async function listEvents(db: Db, teamId: number, emailId: string): Promise<EmailEventRow[]> {
  const { rows } = await sql<EmailEventRow>`
    SELECT email_id, status, data, created_at FROM (
      SELECT id AS email_id, CASE WHEN first_scheduled_at IS NULL THEN 'QUEUED' ELSE 'SCHEDULED' END AS status,
        CASE WHEN first_scheduled_at IS NULL THEN NULL ELSE jsonb_build_object('scheduledAt', ${isoSql(sql.ref('first_scheduled_at'))}) END AS data,
        created_at, 0 AS seq
      FROM emails
      WHERE team_id = ${teamId} AND id = ${emailId}
      UNION ALL
      SELECT email_id, status, data, created_at, seq FROM email_events
      WHERE team_id = ${teamId} AND email_id = ${emailId}
    ) events
    ORDER BY created_at, seq`.execute(db);
  return rows;
}

export type EmailFilters = {
  domainId: number | null;
  status: EmailStatus | null;
  startDate: Date | null;
  endDate: Date | null;
};

/** Newest first; uses emails_team_created, or emails_team_domain_created with a domain. */
export async function listEmails(db: Db, teamId: number, filters: EmailFilters, page: { offset: number; limit: number }) {
  let query = db.selectFrom('emails').where('team_id', '=', teamId);
  if (filters.domainId !== null) query = query.where('domain_id', '=', filters.domainId);
  if (filters.status !== null) query = query.where('status', '=', filters.status);
  if (filters.startDate !== null) query = query.where('created_at', '>=', filters.startDate);
  if (filters.endDate !== null) query = query.where('created_at', '<=', filters.endDate);
  const [rows, total] = await Promise.all([
    query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').offset(page.offset).limit(page.limit).execute(),
    query.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow(),
  ]);
  return { rows, count: Number(total.count) };
}

/**
 * Moves a SCHEDULED email no dispatcher has claimed: cancels it (`sendAt` null) or reschedules it,
 * with its event and the webhook calls it owes (`call`), in one statement. Against a claim it loses
 * cleanly: the claim's row lock makes it wait, then it sees `claimed_by` set and changes nothing.
 * Undefined when it changed nothing.
 */
export async function changeSchedule(
  db: Db,
  teamId: number,
  id: string,
  change: { status: 'CANCELLED' | 'SCHEDULED'; sendAt: Date | null; data: Record<string, unknown> | null; now: Date; call: CallRow },
) {
  const changed = db
    .updateTable('emails')
    .set({ status: change.status, send_at: change.sendAt, updated_at: change.now, ...(change.sendAt ? { scheduled_at: change.sendAt } : {}) })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .where('status', '=', 'SCHEDULED')
    .where('claimed_by', 'is', null)
    .returningAll();
  const { rows } = await sql<{ email_id: string }>`
    WITH changed AS (${changed}), calls AS (
      ${callsFrom(sql`SELECT c.* FROM (${callRows([change.call])}) c WHERE EXISTS (SELECT 1 FROM changed)`, [teamId])}
    )
    INSERT INTO email_events (team_id, email_id, status, data, created_at)
    SELECT team_id, id, status, ${JSON.stringify(change.data)}::jsonb, ${change.now} FROM changed
    RETURNING email_id`.execute(db);
  return rows[0];
}

export const CLAIMED_COLUMNS = [
  'team_id', 'id', 'domain_id', 'from_address', 'to_addresses', 'cc_addresses', 'bcc_addresses', 'reply_to_addresses',
  'subject', 'html', 'text', 'headers', 'attachments', 'message_id', 'attempts', 'scheduled_at', 'created_at',
  'status', 'campaign_id', 'contact_id', 'contact_book_id', 'template_id', 'claimed_by', 'pending_recipients', 'system_link',
] as const;
export type ClaimedEmail = Pick<EmailRow, (typeof CLAIMED_COLUMNS)[number]>;

/**
 * Claims up to `limit` due emails for `leaseUntil`: pending rows whose time has come and that no
 * live claim holds (its lease ran out, or its worker is in `silent`). One statement, so no transaction
 * spans the sending; SKIP LOCKED lets any number of dispatchers claim side by side. Uses
 * emails_due (partial on send_at), then the emails primary key.
 */
export async function claimDueEmails(
  db: Db,
  claim: { now: Date; leaseUntil: Date; token: string; limit: number; silent: readonly string[] },
): Promise<ClaimedEmail[]> {
  const { rows } = await sql<ClaimedEmail>`${sql.raw(REUSED)}
    UPDATE emails SET claimed_by = ${claim.token}, lease_until = ${claim.leaseUntil}
    WHERE id IN (
      SELECT id FROM emails
      WHERE send_at <= ${claim.now} AND ${claimIsFree(sql.ref('claimed_by'), sql.ref('lease_until'), claim.now, claim.silent)}
      ORDER BY send_at LIMIT ${claim.limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING ${sql.raw(CLAIMED_COLUMNS.join(', '))}`.execute(db);
  return rows;
}

/** Which of these addresses (lower-case) each team has suppressed. Uses the suppressions primary key. */
export async function findSuppressed(db: Db, pairs: { teamId: number; email: string }[]): Promise<Set<string>> {
  if (pairs.length === 0) return new Set();
  const { rows } = await sql<{ team_id: number; email: string }>`${sql.raw(REUSED)}
    SELECT s.team_id, s.email
    FROM jsonb_to_recordset(${JSON.stringify(pairs.map((p) => ({ team_id: p.teamId, email: p.email })))}::jsonb)
      AS wanted(team_id integer, email text)
    JOIN suppressions s ON s.team_id = wanted.team_id AND s.email = wanted.email
  `.execute(db);
  return new Set(rows.map((row) => suppressionKey(row.team_id, row.email)));
}

export const suppressionKey = (teamId: number, email: string) => `${teamId}:${email}`;

/**
 * What an attempt leaves to do: the claim it was made under, when to try again (null: nothing left
 * to send), how many tries so far, and the status its events move the email to (statusAfter; null: none).
 */
export type ClaimRelease = {
  teamId: number;
  id: string;
  claimedBy: string;
  sendAt: Date | null;
  attempts: number;
  status: EmailStatus | null;
  /**
   * The recipients the next attempt goes to (null: all), and the destination they are routed to;
   * both left as they are when undefined (an attempt not made).
   */
  pendingRecipients?: string[] | null;
  destination?: string | null;
};

/** The rows of `releases` as a relation `v` (jsonb_to_recordset). */
function releaseRows(releases: ClaimRelease[]) {
  const rows = releases.map((r) => ({
    team_id: r.teamId, id: r.id, claimed_by: r.claimedBy, send_at: r.sendAt?.toISOString() ?? null, attempts: r.attempts, status: r.status,
    keep_routing: r.pendingRecipients === undefined, pending: r.pendingRecipients ?? null, destination: r.destination ?? null,
  }));
  return sql`jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS v(team_id integer, id text, claimed_by text, send_at timestamptz, attempts integer, status text, keep_routing boolean, pending text[], destination text)`;
}

/**
 * The UPDATE that lets go of the claimed rows of relation `v` (releaseRows), each with its next
 * attempt and its new status by precedence, where its claim still holds; a row whose lease ran out
 * and was claimed again is left to its new claimant. One write of each row: the events written
 * with it need not move the status again. Uses the emails primary key.
 */
const releaseUpdate = (now: Date, ranks: StatusRanks, returning: RawBuilder<unknown>) => sql`
    UPDATE emails e
    SET send_at = v.send_at, attempts = v.attempts, claimed_by = NULL, lease_until = NULL, updated_at = ${now},
      pending_recipients = CASE WHEN v.keep_routing THEN e.pending_recipients ELSE v.pending END,
      destination = CASE WHEN v.keep_routing THEN e.destination ELSE v.destination END,
      status = CASE WHEN v.status IS NOT NULL AND ${rankSql(sql.ref('v.status'), ranks)} >= ${rankSql(sql.ref('e.status'), ranks)} THEN v.status ELSE e.status END
    FROM v
    WHERE e.team_id = v.team_id AND e.id = v.id AND e.claimed_by = v.claimed_by
    RETURNING ${returning}`;

/** Lets go of claimed rows (releaseUpdate), whose events the caller then appends in the same transaction. Answers the ids written. */
export async function releaseClaims(tx: Db, releases: ClaimRelease[], ranks: StatusRanks, now: Date): Promise<Set<string>> {
  if (releases.length === 0) return new Set();
  const { rows: written } = await sql<{ id: string }>`
    WITH v AS (SELECT * FROM ${releaseRows(releases)})
    ${releaseUpdate(now, ranks, sql`e.id`)}`.execute(tx);
  return new Set(written.map((row) => row.id));
}

/**
 * What sending usually leaves, in one statement and so without a transaction of its own: lets go of
 * the claimed rows (releaseUpdate), appends the events of those whose claim held, in order, with
 * the webhook calls they owe (`calls`, one per event, whose subject is its email), and counts them
 * once (countOnceCtes). For outcomes that suppress no address and count no hard bounce or
 * complaint (those go through applyEvents). Answers the ids written and the statuses of the
 * events appended.
 */
export async function releaseWithEvents(
  db: Db,
  write: {
    releases: ClaimRelease[];
    events: Array<{ teamId: number; emailId: string; status: EmailStatus; data: Record<string, unknown> | null; kinds: CountKind[] }>;
    calls: CallRow[];
    ranks: StatusRanks;
  },
  now: Date,
): Promise<{ written: Set<string>; appended: Array<{ status: EmailStatus }> }> {
  const { releases, events, calls, ranks } = write;
  if (releases.length === 0) return { written: new Set(), appended: [] };
  const eventRows = events.map((event, ord) => ({ team_id: event.teamId, email_id: event.emailId, status: event.status, data: event.data, ord }));
  const kinds = events.flatMap((event) => event.kinds.map((kind) => ({ team_id: event.teamId, email_id: event.emailId, kind })));
  const { rows } = await sql<{ written: string[] | null; appended: EmailStatus[] | null }>`${sql.raw(REUSED)}
    WITH v AS (SELECT * FROM ${releaseRows(releases)}),
    released AS (${releaseUpdate(now, ranks, sql`e.team_id, e.id`)}),
    inserted AS (
      INSERT INTO email_events (team_id, email_id, status, data, created_at)
      SELECT ev.team_id, ev.email_id, ev.status, ev.data, ${now}
      FROM jsonb_to_recordset(${JSON.stringify(eventRows)}::jsonb) AS ev(team_id integer, email_id text, status text, data jsonb, ord integer)
      JOIN released r ON r.team_id = ev.team_id AND r.id = ev.email_id
      ORDER BY ev.ord
      RETURNING status, seq
    ), calls AS (
      ${callsFrom(sql`SELECT c.* FROM (${callRows(calls)}) c JOIN released r ON r.team_id = c.team_id AND r.id = c.subject_key`, [...new Set(releases.map((r) => r.teamId))])}
    ), k AS (
      SELECT DISTINCT k.team_id, k.email_id, k.kind
      FROM jsonb_to_recordset(${JSON.stringify(kinds)}::jsonb) AS k(team_id integer, email_id text, kind text)
      JOIN released r ON r.team_id = k.team_id AND r.id = k.email_id
    ), ${countOnceCtes('k', now)}
    SELECT (SELECT array_agg(id) FROM released) AS written, (SELECT array_agg(status ORDER BY seq) FROM inserted) AS appended`.execute(db);
  const [row] = rows;
  return { written: new Set(row?.written ?? []), appended: (row?.appended ?? []).map((status) => ({ status })) };
}

export type FeedbackEmail = Pick<
  EmailRow,
  'team_id' | 'id' | 'campaign_id' | 'contact_id' | 'to_addresses' | 'cc_addresses' | 'bcc_addresses' | 'message_id' | 'from_address' | 'subject' | 'domain_id' | 'template_id'
> & {
  /** The sending domain's name and DKIM key; null once the domain is deleted. */
  domain_name: string | null;
  dkim_selector: string | null;
  dkim_public_key: string | null;
  /** Whether a receiving server ever took the message (it has a SENT event). */
  handed_over: boolean;
  /** The book of the email's campaign or automation run, while they and the book exist. */
  contact_book_id: string | null;
};

/**
 * An email named by feedback (a VERP address, a tracking token) with what attributing the feedback
 * needs, whatever its team: email ids are unique across teams. Uses the emails primary key, then
 * the domains, campaigns, automation runs and email_events primary keys.
 */
export async function findEmailForFeedback(db: Db, id: string): Promise<FeedbackEmail | undefined> {
  const { rows } = await sql<FeedbackEmail>`
    SELECT e.team_id, e.id, e.campaign_id, e.contact_id, e.to_addresses, e.cc_addresses, e.bcc_addresses, e.message_id,
      e.from_address, e.subject, e.domain_id, e.template_id, d.name AS domain_name, d.dkim_selector, d.dkim_public_key,
      COALESCE(c.contact_book_id, ar.contact_book_id) AS contact_book_id,
      EXISTS (SELECT 1 FROM email_events ev WHERE ev.team_id = e.team_id AND ev.email_id = e.id AND ev.status = 'SENT') AS handed_over
    FROM emails e
    LEFT JOIN domains d ON d.team_id = e.team_id AND d.id = e.domain_id
    LEFT JOIN campaigns c ON c.team_id = e.team_id AND c.id = e.campaign_id
    LEFT JOIN automation_runs ar ON ar.team_id = e.team_id AND ar.id = e.automation_run_id
    WHERE e.id = ${id}`.execute(db);
  return rows[0];
}
