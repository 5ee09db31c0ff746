import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

export type DayCounts = { day: string; sent: number; delivered: number; opened: number; clicked: number; bounced: number; hardBounced: number; complained: number };
export type StatsScope = { teamId: number; domainId: number | null };

const scoped = (scope: StatsScope) =>
  scope.domainId === null ? sql`team_id = ${scope.teamId}` : sql`team_id = ${scope.teamId} AND domain_id = ${scope.domainId}`;

/**
 * The scope's counts per UTC day from `since` on (every day when null), summed over its domains;
 * days without mail are absent. Uses the daily_email_counts primary key (team_id, domain_id, day).
 */
export async function countsByDay(db: Db, scope: StatsScope, since: string | null): Promise<DayCounts[]> {
  const { rows } = await sql<DayCounts>`
    SELECT to_char(day, 'YYYY-MM-DD') AS day,
      sum(sent)::int AS sent, sum(delivered)::int AS delivered, sum(opened)::int AS opened, sum(clicked)::int AS clicked,
      sum(bounced)::int AS bounced, sum(hard_bounced)::int AS "hardBounced", sum(complained)::int AS complained
    FROM daily_email_counts
    WHERE ${scoped(scope)} ${since === null ? sql`` : sql`AND day >= ${since}::date`}
    GROUP BY day ORDER BY day`.execute(db);
  return rows;
}

export type Window = { delivered: number; hardBounced: number; complained: number };

/**
 * A domain's most recent days that together delivered at least `minDelivered` (newest first, the
 * day that reaches it included), summed; null while its whole history delivered fewer. Reads the
 * domain's rows of the daily_email_counts primary key backwards.
 */
export async function recentWindow(db: Db, teamId: number, domainId: number, minDelivered: number): Promise<Window | null> {
  const { rows } = await sql<Window>`
    WITH days AS (
      SELECT delivered, hard_bounced, complained, sum(delivered) OVER (ORDER BY day DESC) - delivered AS before
      FROM daily_email_counts WHERE team_id = ${teamId} AND domain_id = ${domainId}
    )
    SELECT COALESCE(sum(delivered), 0)::int AS delivered, COALESCE(sum(hard_bounced), 0)::int AS "hardBounced", COALESCE(sum(complained), 0)::int AS complained
    FROM days WHERE before < ${minDelivered}`.execute(db);
  const window = rows[0]!;
  return window.delivered >= minDelivered ? window : null;
}
