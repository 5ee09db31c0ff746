import { sql } from 'kysely';
import type { Db } from '../db/connection.js';
import type { EmailStatus } from '../db/schema.js';
import type { EmailRow } from './emails.js';
import { containing } from './like.js';

export type EmailSearch = {
  domainId: number | null;
  status: EmailStatus | null;
  startDate: Date | null;
  endDate: Date | null;
  /** A case-insensitive substring of the subject or of a recipient (to, cc or bcc). */
  text: string | null;
};

export type EmailListRow = Pick<EmailRow, 'id' | 'to_addresses' | 'cc_addresses' | 'bcc_addresses' | 'subject' | 'status' | 'domain_id' | 'created_at' | 'scheduled_at'>;


/**
 * The index-served part of a search: the team's mail, of one domain or all, in a creation-time
 * range. emails_team_domain_created (with a domain) or emails_team_created walks it newest first.
 */
function indexed(teamId: number, search: EmailSearch) {
  return sql.join(
    [
      sql`team_id = ${teamId}`,
      ...(search.domainId !== null ? [sql`domain_id = ${search.domainId}`] : []),
      ...(search.startDate !== null ? [sql`created_at >= ${search.startDate}`] : []),
      ...(search.endDate !== null ? [sql`created_at <= ${search.endDate}`] : []),
    ],
    sql` AND `,
  );
}

/**
 * A page of the team's mail, newest first, looking only at the newest `window` emails of the
 * index-served filters (team, domain, dates). Neither a status nor a substring can use an index
 * (no trigram index exists, and a status index would serve one filter of many), so they filter
 * that window: however rare a match, a page reads at most `window` rows of emails_team_created or
 * emails_team_domain_created and their heap rows, and stops as soon as the page is full. The
 * planner keeps the window's index order, so nothing is sorted.
 */
export async function searchEmails(db: Db, teamId: number, search: EmailSearch, page: { offset: number; limit: number; window: number }): Promise<EmailListRow[]> {
  const filters = [
    ...(search.status !== null ? [sql`status = ${search.status}`] : []),
    ...(search.text !== null
      ? [
          sql`(subject ILIKE ${containing(search.text)} ESCAPE '\\' OR EXISTS (
            SELECT 1 FROM jsonb_array_elements_text(to_addresses || cc_addresses || bcc_addresses) AS recipient(address)
            WHERE address ILIKE ${containing(search.text)} ESCAPE '\\'))`,
        ]
      : []),
  ];
  const { rows } = await sql<EmailListRow>`
    SELECT id, to_addresses, cc_addresses, bcc_addresses, subject, status, domain_id, created_at, scheduled_at FROM (
      SELECT id, to_addresses, cc_addresses, bcc_addresses, subject, status, domain_id, created_at, scheduled_at FROM emails
      WHERE ${indexed(teamId, search)}
      ORDER BY created_at DESC, id DESC
      LIMIT ${page.window}
    ) recent
    ${filters.length > 0 ? sql`WHERE ${sql.join(filters, sql` AND `)}` : sql``}
    ORDER BY created_at DESC, id DESC
    OFFSET ${page.offset} LIMIT ${page.limit}`.execute(db);
  return rows;
}

/**
 * Whether the team has more mail of the index-served filters than `window`, that is, whether a
 * search of the window left older mail unread. Counts at most window + 1 entries of the same index.
 */
export async function exceedsWindow(db: Db, teamId: number, search: EmailSearch, window: number): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM (SELECT 1 FROM emails WHERE ${indexed(teamId, search)} LIMIT ${window + 1}) recent`.execute(db);
  return rows[0]!.n > window;
}

export type EmailExtras = Pick<EmailRow, 'domain_id' | 'campaign_id' | 'headers' | 'body_dropped_at'> & { campaign_name: string | null };

/**
 * What the API's email leaves out: its campaign (while the campaign exists), its custom header
 * fields and when retention dropped its body. The emails and campaigns primary keys.
 */
export async function findEmailExtras(db: Db, teamId: number, id: string): Promise<EmailExtras | undefined> {
  const { rows } = await sql<EmailExtras>`
    SELECT e.domain_id, e.campaign_id, e.headers, e.body_dropped_at, c.name AS campaign_name
    FROM emails e
    LEFT JOIN campaigns c ON c.team_id = e.team_id AND c.id = e.campaign_id
    WHERE e.team_id = ${teamId} AND e.id = ${id}`.execute(db);
  return rows[0];
}
