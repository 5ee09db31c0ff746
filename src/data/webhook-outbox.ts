import { sql, type RawBuilder } from 'kysely';
import { REUSED } from '../db/reused-statements.js';
import type { Db } from '../db/connection.js';
import { fromEpochMs, sortableIdSql } from './sql-values.js';

// The outbox: every change a webhook must hear about writes its calls in the transaction (often
// the very statement) that makes the change, so a committed change always has its calls and a
// rolled-back one has none. The events module builds each call's payload; here the calls are
// fanned out to the team's active webhooks subscribed to the type (and, for email events, to the
// email's domain). A team without webhooks pays one probe of the webhooks primary key per
// statement: the EXISTS below is evaluated once.

/**
 * One event to report, as the outbox stores it: `ord` orders the calls of one write. `webhook_ids`:
 * only these webhooks may take it (an inbound route's); absent, any that subscribes.
 */
export type CallRow = { team_id: number; type: string; subject_key: string | null; domain_id: number | null; data: unknown; at_ms: number; webhook_ids?: string[] };

/**
 * The calls for the rows of `source` (team_id, type, subject_key, domain_id, data, at, ord,
 * webhook_ids), one per row and subscribed webhook, in `ord` order: each joins the back of its webhook's queue
 * (`seq`), the order one subject's calls go out in. `teamIds` names the teams the source can
 * hold, so a team without active webhooks skips the source. An INSERT for a CTE of the caller's
 * statement. Uses the webhooks primary key.
 */
export function callsFrom(source: RawBuilder<unknown>, teamIds: number[]): RawBuilder<unknown> {
  return sql`
    INSERT INTO webhook_calls (team_id, webhook_id, id, type, subject_key, data, next_attempt_at, created_at, updated_at)
    SELECT s.team_id, w.id, ${sortableIdSql}, s.type, s.subject_key, s.data, s.at, s.at, s.at
    FROM (${source}) s
    JOIN webhooks w ON w.team_id = s.team_id AND w.status = 'ACTIVE'
      AND (cardinality(w.events) = 0 OR s.type = ANY(w.events))
      AND (s.domain_id IS NULL OR cardinality(w.domain_ids) = 0 OR s.domain_id = ANY(w.domain_ids))
      AND (s.webhook_ids IS NULL OR w.id = ANY(s.webhook_ids))
    WHERE EXISTS (SELECT 1 FROM webhooks a WHERE a.team_id = ANY(${teamIds}::integer[]) AND a.status = 'ACTIVE')
    ORDER BY s.ord, w.id`;
}

/** Rows as the source of callsFrom: one JSON parameter, in the order given. */
export function callRows(rows: CallRow[]): RawBuilder<unknown> {
  return sql`SELECT team_id, type, subject_key, domain_id, data, ${fromEpochMs('at_ms')} AS at, ord, webhook_ids
    FROM jsonb_to_recordset(${JSON.stringify(rows.map((row, ord) => ({ ...row, ord })))}::jsonb)
      AS c(team_id integer, type text, subject_key text, domain_id integer, data jsonb, at_ms bigint, ord integer, webhook_ids text[])`;
}

/** Writes the calls of `rows` (callsFrom) in one statement. */
export async function insertCalls(db: Db, rows: CallRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`${callsFrom(callRows(rows), [...new Set(rows.map((row) => row.team_id))])}`.execute(db);
}

/** The event types and domains each active webhook of these teams takes (empty: all). Uses the webhooks primary key. */
export async function activeSubscriptions(db: Db, teamIds: number[]): Promise<Array<{ team_id: number; events: string[]; domain_ids: number[] }>> {
  if (teamIds.length === 0) return [];
  const { rows } = await sql<{ team_id: number; events: string[]; domain_ids: number[] }>`${sql.raw(REUSED)}
    SELECT team_id, events, domain_ids FROM webhooks WHERE team_id = ANY(${teamIds}::integer[]) AND status = 'ACTIVE'`.execute(db);
  return rows;
}
