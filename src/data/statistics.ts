import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

// A table smaller than this (some thousands of rows) never has stale statistics: it is cheap
// to plan wrongly, and its writers should not pay for an ANALYZE.
const STALE_FROM_PAGES = 32;

/** The tables whose statistics some writer or worker keeps up to date itself (see refreshStatistics). */
export type WatchedTable = 'contacts' | 'automation_runs' | 'webhook_calls';

/**
 * Brings the planner's statistics of these tables up to date when one has outgrown them: never
 * gathered, or the table half as large again since. Without them a table filled moments ago looks
 * like a few rows, and its readers' plans read all of it where they would probe an index.
 * PostgreSQL's autovacuum gathers them within a minute or so; the embedded database has no
 * autovacuum, and would never have them. The table's size on disk is read as it is now (pg_stat
 * counters reach the view late). Where another session holds a table against ANALYZE (its own
 * ANALYZE or VACUUM, an index being built), it is skipped rather than waited for: that session is
 * already gathering them, or the next call will.
 */
export async function refreshStatistics(db: Db, tables: readonly WatchedTable[]): Promise<void> {
  for (const table of tables) {
    const { rows } = await sql<{ stale: boolean }>`
      SELECT pages >= ${STALE_FROM_PAGES} AND (pages >= relpages * 1.5 OR NOT EXISTS (
        SELECT 1 FROM pg_stats WHERE schemaname = current_schema() AND tablename = ${table}
      )) AS stale
      FROM (
        SELECT pg_relation_size(oid) / current_setting('block_size')::int AS pages, relpages FROM pg_class
        WHERE oid = ${table}::regclass
      ) size`.execute(db);
    if (rows[0]?.stale) await sql`ANALYZE (SKIP_LOCKED) ${sql.table(table)}`.execute(db);
  }
}
