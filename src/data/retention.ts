import { sql } from 'kysely';
import type { DatabaseKind, Db } from '../db/connection.js';

// What retention removes, a bounded batch per statement. Each statement is its own short
// transaction that picks its rows by primary key in a sub-select with LIMIT, skipping rows another
// transaction holds (a claim, a retry, a key being taken), so no hot table is locked for long and
// nothing waits on retention.

// Any constant works; it only has to be the same in every process sharing the database.
const RETENTION_LOCK_KEY = 727_062;

/**
 * Runs `work` while this process holds the retention lock, so that of any number of worker
 * processes on one PostgreSQL one runs retention at a time; undefined when another holds it. A
 * session lock on a connection kept for the run, not a transaction's: the work is many short
 * transactions. PGlite is one process (the data-directory lock sees to it) with one connection that
 * every query waits for, so there the work runs unlocked and takes the connection a statement at a
 * time.
 */
export async function withRetentionLock<T>(db: Db, kind: DatabaseKind, work: (db: Db) => Promise<T>): Promise<T | undefined> {
  if (kind === 'pglite') return work(db);
  return db.connection().execute(async (connection) => {
    const { rows } = await sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${RETENTION_LOCK_KEY}) AS locked`.execute(connection);
    if (!rows[0]!.locked) return undefined;
    try {
      return await work(connection);
    } finally {
      await sql`SELECT pg_advisory_unlock(${RETENTION_LOCK_KEY})`.execute(connection);
    }
  });
}

/**
 * Drops the html, text and attachments of up to `limit` emails with nothing left to send that were
 * created, and scheduled if they were, before `before`, and marks when. `send_at` is null exactly
 * when nothing is left to send, but for a paused campaign's held mail, which stores no body (it is
 * rendered from the campaign when sent) and so is never picked. Answers how many it dropped. Uses
 * emails_retention, then the emails primary key.
 */
export async function dropEmailBodies(db: Db, before: Date, now: Date, limit: number): Promise<number> {
  const result = await sql`
    UPDATE emails SET html = NULL, text = NULL, attachments = '[]', body_dropped_at = ${now}
    WHERE id IN (
      SELECT id FROM emails
      WHERE send_at IS NULL AND (html IS NOT NULL OR text IS NOT NULL OR attachments <> '[]'::jsonb)
        AND GREATEST(created_at, scheduled_at) < ${before}
      ORDER BY GREATEST(created_at, scheduled_at) LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Drops the raw message, text and html of up to `limit` received messages older than `before`
 * (their parsed fields and authentication stay), in one statement. Uses inbound_emails_retention.
 */
export async function dropInboundContent(db: Db, before: Date, now: Date, limit: number): Promise<number> {
  const { rows } = await sql<{ dropped: number }>`
    WITH dropped AS (
      UPDATE inbound_emails SET text = NULL, html = NULL, body_dropped_at = ${now}
      WHERE (team_id, id) IN (
        SELECT team_id, id FROM inbound_emails WHERE body_dropped_at IS NULL AND received_at < ${before}
        ORDER BY received_at LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING team_id, id
    ), raw AS (
      DELETE FROM inbound_email_parts p USING dropped d WHERE p.team_id = d.team_id AND p.email_id = d.id
    )
    SELECT count(*)::int AS dropped FROM dropped`.execute(db);
  return rows[0]!.dropped;
}

/**
 * Deletes up to `limit` webhook calls made before `before` that are done with (delivered, failed
 * or discarded); a PENDING call, due or waiting for a retry, stays whatever its age. Uses
 * webhook_calls_finished, then the primary key.
 */
export async function deleteFinishedCalls(db: Db, before: Date, limit: number): Promise<number> {
  const result = await sql`
    DELETE FROM webhook_calls WHERE (team_id, webhook_id, id) IN (
      SELECT team_id, webhook_id, id FROM webhook_calls
      WHERE status <> 'PENDING' AND created_at < ${before}
      ORDER BY created_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Deletes up to `limit` rows of `table` whose `time` is before `before` (at or before, with
 * `inclusive`), oldest first, through the index on `time` and then the primary key `key`; rows
 * another process holds are left to its run.
 */
async function deleteOldest(db: Db, table: string, key: string[], time: string, before: Date, limit: number, inclusive = false): Promise<number> {
  const keys = sql.join(key.map((column) => sql.ref(column)));
  const result = await sql`
    DELETE FROM ${sql.table(table)} WHERE (${keys}) IN (
      SELECT ${keys} FROM ${sql.table(table)}
      WHERE ${sql.ref(time)} ${sql.raw(inclusive ? '<=' : '<')} ${before}
      ORDER BY ${sql.ref(time)} LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** Deletes up to `limit` idempotency keys taken before `before`. Uses idempotency_keys_created. */
export const deleteIdempotencyKeys = (db: Db, before: Date, limit: number) => deleteOldest(db, 'idempotency_keys', ['team_id', 'key'], 'created_at', before, limit);

/** Dashboard sessions past their end (only live ones are read; these are kept for nothing). Uses sessions_expiry. */
export const deleteExpiredSessions = (db: Db, now: Date, limit: number) => deleteOldest(db, 'sessions', ['token_hash'], 'expires_at', now, limit, true);

/** Deletes up to `limit` audit rows recorded before `before`. Uses audit_log_expiry. */
export const deleteAuditRows = (db: Db, before: Date, limit: number) => deleteOldest(db, 'audit_log', ['team_id', 'id'], 'at', before, limit);
