import type { Db } from '../db/connection.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;

/**
 * Takes the key for this request unless a live one exists: inserts it, or replaces one older than
 * the TTL. Concurrent requests with one key serialize on its primary key, so exactly one takes it.
 * Answers whether this request took it; if not, `findIdempotencyKey` tells what the first answered.
 */
export async function takeIdempotencyKey(
  db: Db,
  entry: { teamId: number; key: string; requestHash: string; response: unknown; now: Date },
): Promise<boolean> {
  const expiredBefore = new Date(entry.now.getTime() - IDEMPOTENCY_TTL_MS);
  const taken = await db
    .insertInto('idempotency_keys')
    .values({
      team_id: entry.teamId,
      key: entry.key,
      request_hash: entry.requestHash,
      response: JSON.stringify(entry.response),
      created_at: entry.now,
    })
    .onConflict((oc) =>
      oc.columns(['team_id', 'key']).doUpdateSet({
        request_hash: (eb) => eb.ref('excluded.request_hash'),
        response: (eb) => eb.ref('excluded.response'),
        created_at: (eb) => eb.ref('excluded.created_at'),
      }).where('idempotency_keys.created_at', '<', expiredBefore),
    )
    .returning('key')
    .executeTakeFirst();
  return taken !== undefined;
}

export async function findIdempotencyKey(db: Db, teamId: number, key: string) {
  return db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response'])
    .where('team_id', '=', teamId)
    .where('key', '=', key)
    .executeTakeFirst();
}
