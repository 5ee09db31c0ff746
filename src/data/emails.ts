import { sql, type Insertable, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { CampaignCountKind, EmailEventsTable, EmailStatus, EmailsTable, StoredAttachment, SuppressionReason } from '../db/schema.js';

export type EmailRow = Selectable<EmailsTable>;
export type EmailEventRow = Pick<Selectable<EmailEventsTable>, 'email_id' | 'status' | 'data' | 'created_at'>;

export type NewEmail = {
  teamId: number;
  id: string;
  domainId: number;
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo: string[];
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachments: StoredAttachment[];
  messageId: string;
  scheduledAt: Date | null;
  sendAt: Date;
  createdAt: Date;
  /** For a double opt-in confirmation: the contact it asks to confirm. */
  confirms?: { bookId: string; contactId: string };
};

function emailValues(email: NewEmail): Insertable<EmailsTable> {
  return {
    team_id: email.teamId,
    id: email.id,
    domain_id: email.domainId,
    from_address: email.from,
    to_addresses: JSON.stringify(email.to),
    cc_addresses: JSON.stringify(email.cc),
    bcc_addresses: JSON.stringify(email.bcc),
    reply_to_addresses: JSON.stringify(email.replyTo),
    subject: email.subject,
    html: email.html,
    text: email.text,
    headers: JSON.stringify(email.headers),
    attachments: JSON.stringify(email.attachments),
    message_id: email.messageId,
    status: email.scheduledAt ? 'SCHEDULED' : 'QUEUED',
    scheduled_at: email.scheduledAt,
    send_at: email.sendAt,
    created_at: email.createdAt,
    updated_at: email.createdAt,
    contact_book_id: email.confirms?.bookId ?? null,
    contact_id: email.confirms?.contactId ?? null,
  };
}

/** The rows and their first events (SCHEDULED or QUEUED), in one statement. */
export async function insertEmails(db: Db, emails: NewEmail[]): Promise<void> {
  await db
    .with('inserted', (qb) => qb.insertInto('emails').values(emails.map(emailValues)).returning(['team_id', 'id', 'status', 'scheduled_at', 'created_at']))
    .insertInto('email_events')
    .columns(['team_id', 'email_id', 'status', 'data', 'created_at'])
    .expression((eb) =>
      eb.selectFrom('inserted').select([
        'team_id', 'id', 'status',
        sql<string>`CASE WHEN scheduled_at IS NULL THEN NULL ELSE jsonb_build_object('scheduledAt', to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) END`.as('data'),
        'created_at',
      ]),
    )
    .execute();
}

export async function findEmail(db: Db, teamId: number, id: string): Promise<EmailRow | undefined> {
  return db.selectFrom('emails').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
}

/**
 * The email's events in time order. A campaign email's first, QUEUED at its creation, is not
 * stored (the release writes only the row; campaign_id is set there alone and never changes): it
 * is read off the row, ahead of any stored event of the same instant. Uses the emails and
 * email_events primary keys.
 */
export async function listEvents(db: Db, teamId: number, emailId: string): Promise<EmailEventRow[]> {
  const { rows } = await sql<EmailEventRow>`
    SELECT email_id, status, data, created_at FROM (
      SELECT id AS email_id, 'QUEUED' AS status, NULL::jsonb AS data, created_at, 0 AS seq FROM emails
      WHERE team_id = ${teamId} AND id = ${emailId} AND campaign_id IS NOT NULL
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
 * with its event, in one statement. Against a claim it loses cleanly: the claim's row lock makes
 * it wait, then it sees `claimed_by` set and changes nothing. Undefined when it changed nothing.
 */
export async function changeSchedule(
  db: Db,
  teamId: number,
  id: string,
  change: { status: 'CANCELLED' | 'SCHEDULED'; sendAt: Date | null; data: Record<string, unknown> | null; now: Date },
) {
  return db
    .with('changed', (qb) =>
      qb
        .updateTable('emails')
        .set({ status: change.status, send_at: change.sendAt, updated_at: change.now, ...(change.sendAt ? { scheduled_at: change.sendAt } : {}) })
        .where('team_id', '=', teamId)
        .where('id', '=', id)
        .where('status', '=', 'SCHEDULED')
        .where('claimed_by', 'is', null)
        .returning(['team_id', 'id']),
    )
    .insertInto('email_events')
    .columns(['team_id', 'email_id', 'status', 'data', 'created_at'])
    .expression((eb) =>
      eb.selectFrom('changed').select([
        'team_id', 'id',
        sql.lit(change.status).as('status'),
        sql<string>`${JSON.stringify(change.data)}::jsonb`.as('data'),
        sql<Date>`${change.now}::timestamptz`.as('created_at'),
      ]),
    )
    .returning('email_id')
    .executeTakeFirst();
}

export const CLAIMED_COLUMNS = [
  'team_id', 'id', 'domain_id', 'from_address', 'to_addresses', 'cc_addresses', 'bcc_addresses', 'reply_to_addresses',
  'subject', 'html', 'text', 'headers', 'attachments', 'message_id', 'attempts', 'scheduled_at', 'created_at',
  'status', 'campaign_id', 'contact_id', 'contact_book_id',
] as const;
export type ClaimedEmail = Pick<EmailRow, (typeof CLAIMED_COLUMNS)[number]>;

/**
 * Claims up to `limit` due emails for `leaseUntil`: pending rows whose time has come and that no
 * live lease holds, including those of a worker that died. One statement, so no transaction
 * spans the sending; SKIP LOCKED lets any number of dispatchers claim side by side.
 *
 *   UPDATE emails SET claimed_by = $token, lease_until = $lease
 *   WHERE id IN (SELECT id FROM emails WHERE send_at <= $now AND (lease_until IS NULL OR lease_until < $now)
 *                ORDER BY send_at LIMIT $n FOR UPDATE SKIP LOCKED)
 *   RETURNING …
 *
 * Uses emails_due (partial on send_at), then emails_id.
 */
export async function claimDueEmails(
  db: Db,
  claim: { now: Date; leaseUntil: Date; token: string; limit: number },
): Promise<ClaimedEmail[]> {
  return db
    .updateTable('emails')
    .set({ claimed_by: claim.token, lease_until: claim.leaseUntil })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('emails')
        .select('id')
        .where('send_at', '<=', claim.now)
        .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', claim.now)]))
        .orderBy('send_at')
        .limit(claim.limit)
        .forUpdate()
        .skipLocked(),
    )
    .returning(CLAIMED_COLUMNS)
    .execute();
}

/** Which of these addresses (lower-case) each team has suppressed. Uses the suppressions primary key. */
export async function findSuppressed(db: Db, pairs: { teamId: number; email: string }[]): Promise<Set<string>> {
  if (pairs.length === 0) return new Set();
  const { rows } = await sql<{ team_id: number; email: string }>`
    SELECT s.team_id, s.email
    FROM jsonb_to_recordset(${JSON.stringify(pairs.map((p) => ({ team_id: p.teamId, email: p.email })))}::jsonb)
      AS wanted(team_id integer, email text)
    JOIN suppressions s ON s.team_id = wanted.team_id AND s.email = wanted.email
  `.execute(db);
  return new Set(rows.map((row) => suppressionKey(row.team_id, row.email)));
}

export const suppressionKey = (teamId: number, email: string) => `${teamId}:${email}`;

export type Outcome = {
  teamId: number;
  id: string;
  /** The campaign whose counters the events bump, and its recipient, if the email is a campaign's. */
  campaignId: string | null;
  contactId: string | null;
  status: EmailStatus;
  /** When to try again; null when nothing is left to send. */
  sendAt: Date | null;
  attempts: number;
  events: { status: EmailStatus; data: Record<string, unknown> | null }[];
  /** Addresses to put on the team's suppression list. */
  suppress: { address: string; reason: SuppressionReason }[];
};

/** The campaign counters an event bumps (once per email and kind). */
export function countKinds(event: { status: EmailStatus; data: Record<string, unknown> | null }): CampaignCountKind[] {
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

/**
 * Counts each (email, kind) once into campaign_counts, and bumps the campaigns' counters by what
 * was newly counted, in one statement. Uses the campaign_counts and campaigns primary keys.
 */
export async function countCampaignEvents(
  db: Db,
  counts: { team_id: number; email_id: string; kind: CampaignCountKind; campaign_id: string }[],
  now: Date,
): Promise<number> {
  if (counts.length === 0) return 0;
  const { rows } = await sql<{ n: number }>`
    WITH counted AS (
      INSERT INTO campaign_counts (team_id, email_id, kind, campaign_id)
      SELECT k.team_id, k.email_id, k.kind, k.campaign_id
      FROM jsonb_to_recordset(${JSON.stringify(counts)}::jsonb) AS k(team_id integer, email_id text, kind text, campaign_id text)
      ON CONFLICT DO NOTHING
      RETURNING team_id, campaign_id, kind
    ), sums AS (
      SELECT team_id, campaign_id,
        count(*) FILTER (WHERE kind = 'sent') AS sent, count(*) FILTER (WHERE kind = 'delivered') AS delivered,
        count(*) FILTER (WHERE kind = 'opened') AS opened, count(*) FILTER (WHERE kind = 'clicked') AS clicked,
        count(*) FILTER (WHERE kind = 'unsubscribed') AS unsubscribed, count(*) FILTER (WHERE kind = 'bounced') AS bounced,
        count(*) FILTER (WHERE kind = 'hard_bounced') AS hard_bounced, count(*) FILTER (WHERE kind = 'complained') AS complained
      FROM counted GROUP BY team_id, campaign_id
    ), bumped AS (
      UPDATE campaigns c SET
        sent = c.sent + s.sent, delivered = c.delivered + s.delivered, opened = c.opened + s.opened,
        clicked = c.clicked + s.clicked, unsubscribed = c.unsubscribed + s.unsubscribed, bounced = c.bounced + s.bounced,
        hard_bounced = c.hard_bounced + s.hard_bounced, complained = c.complained + s.complained, updated_at = ${now}
      FROM sums s WHERE c.team_id = s.team_id AND c.id = s.campaign_id
    )
    SELECT count(*)::int AS n FROM counted`.execute(db);
  return rows[0]!.n;
}

/**
 * Marks a campaign's recipient unsubscribed for a bounce or complaint, keeping a reason it already
 * has. Rare, so one statement each: the campaigns and contacts primary keys.
 */
async function unsubscribeRecipient(db: Db, recipient: { teamId: number; campaignId: string; contactId: string }, reason: 'BOUNCED' | 'COMPLAINED', now: Date) {
  await sql`
    UPDATE contacts SET subscribed = false, unsubscribe_reason = COALESCE(unsubscribe_reason, ${reason}), updated_at = ${now}
    WHERE team_id = ${recipient.teamId} AND id = ${recipient.contactId}
      AND contact_book_id = (SELECT contact_book_id FROM campaigns WHERE team_id = ${recipient.teamId} AND id = ${recipient.campaignId})`.execute(db);
}

/**
 * Writes a batch of outcomes in one transaction: each row whose claim still holds gets its status,
 * next attempt and events, and its campaign's counters; addresses to suppress are added whatever became of the claim, since the
 * receiver's answer stands. A row whose lease ran out and was claimed again is left to its new
 * claimant. Answers how many rows were written.
 */
export async function recordOutcomes(db: Db, token: string, outcomes: Outcome[], now: Date): Promise<number> {
  if (outcomes.length === 0) return 0;
  const rows = outcomes.map((o) => ({ team_id: o.teamId, id: o.id, status: o.status, send_at: o.sendAt?.toISOString() ?? null, attempts: o.attempts }));
  const events = outcomes.flatMap((o) =>
    o.events.map((event) => ({ team_id: o.teamId, email_id: o.id, status: event.status, data: event.data })),
  ).map((event, ord) => ({ ...event, ord }));
  const suppressions = outcomes.flatMap((o) =>
    o.suppress.map((entry) => ({ team_id: o.teamId, email: entry.address.toLowerCase(), reason: entry.reason, source_email_id: o.id })),
  );
  return db.transaction().execute(async (tx) => {
    const { rows: written } = await sql<{ id: string }>`
      WITH v AS (
        SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
          AS v(team_id integer, id text, status text, send_at timestamptz, attempts integer)
      ), updated AS (
        UPDATE emails e
        SET status = v.status, send_at = v.send_at, attempts = v.attempts,
            claimed_by = NULL, lease_until = NULL, updated_at = ${now}
        FROM v
        WHERE e.team_id = v.team_id AND e.id = v.id AND e.claimed_by = ${token}
        RETURNING e.team_id, e.id
      ), inserted AS (
        INSERT INTO email_events (team_id, email_id, status, data, created_at)
        SELECT ev.team_id, ev.email_id, ev.status, ev.data, ${now}
        FROM jsonb_to_recordset(${JSON.stringify(events)}::jsonb)
          AS ev(team_id integer, email_id text, status text, data jsonb, ord integer)
        JOIN updated u ON u.team_id = ev.team_id AND u.id = ev.email_id
        ORDER BY ev.ord
      )
      SELECT id FROM updated
    `.execute(tx);
    if (suppressions.length > 0) {
      await sql`
        INSERT INTO suppressions (team_id, email, reason, source_email_id, created_at)
        SELECT s.team_id, s.email, s.reason, s.source_email_id, ${now}
        FROM jsonb_to_recordset(${JSON.stringify(suppressions)}::jsonb)
          AS s(team_id integer, email text, reason text, source_email_id text)
        ON CONFLICT (team_id, email) DO NOTHING
      `.execute(tx);
    }
    const counts = outcomes.flatMap((o) =>
      o.campaignId === null
        ? []
        : o.events.flatMap((event) => countKinds(event).map((kind) => ({ team_id: o.teamId, email_id: o.id, kind, campaign_id: o.campaignId! }))),
    );
    if (counts.length > 0) {
      // Only the outcomes written above count: a lost claim's events were not recorded either.
      const ids = new Set(written.map((row) => row.id));
      await countCampaignEvents(tx, counts.filter((c) => ids.has(c.email_id)), now);
      // A recipient whose address bounced for good or who complained leaves the book's mailing.
      for (const o of outcomes.filter((o) => ids.has(o.id) && o.campaignId !== null && o.contactId !== null)) {
        const kinds = o.events.flatMap(countKinds);
        const reason = kinds.includes('complained') ? 'COMPLAINED' : kinds.includes('hard_bounced') ? 'BOUNCED' : null;
        if (reason) await unsubscribeRecipient(tx, { teamId: o.teamId, campaignId: o.campaignId!, contactId: o.contactId! }, reason, now);
      }
    }
    return written.length;
  });
}
