import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

export type Lease = {
  /** What this call may serve: `want`, less when the window's budget ran short, 0 when it is spent. */
  granted: number;
  /** How much of the window's budget all processes have leased, this lease included (at most `limit`). */
  leased: number;
};

/**
 * Leases up to `want` (at most `limit`) of the team's `limit` for the window starting at
 * `windowStart`, in one statement on the rate_limit_windows primary key. The team's row is
 * replaced by a later window and never goes back to an earlier one: a process whose clock lags is
 * charged in the window the others are already in. Concurrent leases serialize on the row, so
 * together they never grant more than `limit` in a window.
 *
 * `leased` grows by the whole `want` and only while it is under the limit; what was there before
 * is `leased - want`, so the grant is `min(want, limit - (leased - want))` (RETURNING sees only the
 * new row). No row back: the update's condition failed, the window's budget is spent.
 */
export async function leaseRateLimitSlice(
  db: Db,
  lease: { teamId: number; windowStart: Date; want: number; limit: number },
): Promise<Lease> {
  const { rows } = await sql<{ leased: number }>`
    INSERT INTO rate_limit_windows AS w (team_id, window_start, leased)
    VALUES (${lease.teamId}, ${lease.windowStart}, ${lease.want})
    ON CONFLICT (team_id) DO UPDATE SET
      window_start = GREATEST(w.window_start, excluded.window_start),
      leased = CASE WHEN excluded.window_start > w.window_start THEN excluded.leased ELSE w.leased + excluded.leased END
    WHERE excluded.window_start > w.window_start OR w.leased < ${lease.limit}
    RETURNING leased`.execute(db);
  const row = rows[0];
  if (!row) return { granted: 0, leased: lease.limit };
  return { granted: Math.min(lease.want, lease.limit - row.leased + lease.want), leased: Math.min(row.leased, lease.limit) };
}
