import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

/**
 * How many emails are due at `now` and not yet sent (claimed ones included: they are not sent
 * either), and how long the oldest of them has been due; 0 when none is. For the queue gauges, so
 * one index-only range scan of emails_due (partial on send_at), by the clock the claim reads. With
 * them, the automation runs due (a range of automation_runs_due).
 */
export async function queueStats(db: Db, now: Date): Promise<{ due: number; oldestDueSeconds: number; runsDue: number }> {
  const { rows } = await sql<{ due: number; oldest_due_seconds: number | null; runs_due: number }>`
    SELECT count(*)::int AS due, EXTRACT(EPOCH FROM ${now}::timestamptz - min(send_at))::float8 AS oldest_due_seconds,
      (SELECT count(*)::int FROM automation_runs WHERE status = 'ACTIVE' AND next_at <= ${now}) AS runs_due
    FROM emails WHERE send_at <= ${now}`.execute(db);
  const row = rows[0]!;
  return { due: row.due, oldestDueSeconds: Math.max(0, row.oldest_due_seconds ?? 0), runsDue: row.runs_due };
}
