import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/connection.js';

/** Registers the worker or records that it is alive, by the database's clock (the one every worker shares). */
export async function beat(db: Db, worker: { id: string; host: string; pid: number }): Promise<void> {
  await sql`
    INSERT INTO workers (id, host, pid) VALUES (${worker.id}, ${worker.host}, ${worker.pid})
    ON CONFLICT (id) DO UPDATE SET beat_at = now()`.execute(db);
}

/** The workers whose last beat is older than `seconds`; their claims are anyone's. Reads the workers table only. */
export async function silentWorkers(db: Db, seconds: number): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    SELECT id FROM workers WHERE beat_at < now() - make_interval(secs => ${seconds})`.execute(db);
  return rows.map((row) => row.id);
}

/** A worker that stopped cleanly: silent at once, so whatever it still held is taken over without waiting. */
export async function markStopped(db: Db, id: string): Promise<void> {
  await sql`UPDATE workers SET beat_at = '-infinity' WHERE id = ${id}`.execute(db);
}

/** Drops the rows of workers silent longer than any lease, whose claims have run out anyway. */
export async function forgetWorkers(db: Db, silentForSeconds: number): Promise<number> {
  const result = await sql`DELETE FROM workers WHERE beat_at < now() - make_interval(secs => ${silentForSeconds})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Lets go of every claim on mail, webhook calls and domain checks. Only for the embedded database,
 * which one process holds at a time: whatever is claimed when it opens was claimed by a process
 * that is gone. Each statement reads only the rows that can hold a claim (the partial indexes).
 */
export async function releaseEveryClaim(db: Db): Promise<{ emails: number; webhookCalls: number; domains: number }> {
  return db.transaction().execute(async (tx) => {
    const emails = await sql`
      UPDATE emails SET claimed_by = NULL, lease_until = NULL WHERE send_at IS NOT NULL AND claimed_by IS NOT NULL`.execute(tx);
    const calls = await sql`
      UPDATE webhook_calls SET claimed_by = NULL, lease_until = NULL WHERE status = 'PENDING' AND claimed_by IS NOT NULL`.execute(tx);
    const domains = await sql`
      UPDATE domains SET claim_token = NULL, claimed_until = NULL WHERE claim_token IS NOT NULL`.execute(tx);
    return {
      emails: Number(emails.numAffectedRows ?? 0),
      webhookCalls: Number(calls.numAffectedRows ?? 0),
      domains: Number(domains.numAffectedRows ?? 0),
    };
  });
}

/** Where a claim token ends its worker's id (tokens are `<worker id>.<claim id>`). */
export const CLAIM_SEPARATOR = '.';

/**
 * The condition under which a row's claim may be taken: it was never made or was let go, its lease
 * ran out, or it names a worker in `silent`. With no silent worker it is the plain lease check, so
 * the claim queries' plans stay as they were.
 */
export function claimIsFree(claimedBy: RawBuilder<unknown>, leaseUntil: RawBuilder<unknown>, now: Date, silent: readonly string[]): RawBuilder<boolean> {
  if (silent.length === 0) return sql<boolean>`(${leaseUntil} IS NULL OR ${leaseUntil} < ${now})`;
  return sql<boolean>`(${leaseUntil} IS NULL OR ${leaseUntil} < ${now} OR split_part(${claimedBy}, ${CLAIM_SEPARATOR}, 1) = ANY(${[...silent]}::text[]))`;
}
