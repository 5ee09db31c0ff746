import { sql, type Selectable } from 'kysely';
import { sortableIdSql } from './sql-values.js';
import type { Db } from '../db/connection.js';
import type { WebhookCallsTable, WebhookCallStatus } from '../db/schema.js';

// A webhook's call log as its team reads it, and the calls a team makes by hand (a test, a retry).
// The calls events make are written by the outbox (webhook-outbox.ts); the sender claims and
// records them (webhook-delivery.ts).

export type CallRow = Selectable<WebhookCallsTable>;

export type NewCall = {
  teamId: number;
  webhookId: string;
  type: string;
  /** Orders one subject's calls to the webhook; null: no order kept. */
  subjectKey: string | null;
  data: Record<string, unknown>;
};

/** A call due now, PENDING and unclaimed, with an id like every call's (see sortableIdSql). */
export async function insertCall(db: Db, call: NewCall, now: Date): Promise<CallRow> {
  return db
    .insertInto('webhook_calls')
    .values({
      team_id: call.teamId,
      webhook_id: call.webhookId,
      id: sortableIdSql,
      type: call.type,
      subject_key: call.subjectKey,
      data: JSON.stringify(call.data),
      next_attempt_at: now,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Uses the webhook_calls primary key. */
export async function findCall(db: Db, teamId: number, webhookId: string, id: string): Promise<CallRow | undefined> {
  return db
    .selectFrom('webhook_calls')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('webhook_id', '=', webhookId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * The webhook's calls, newest first (by the millisecond their ids begin with), optionally of one
 * status; reads the primary key backwards.
 */
export async function listCalls(
  db: Db,
  teamId: number,
  webhookId: string,
  page: { offset: number; limit: number; status?: WebhookCallStatus },
): Promise<{ rows: CallRow[]; count: number }> {
  let query = db.selectFrom('webhook_calls').where('team_id', '=', teamId).where('webhook_id', '=', webhookId);
  if (page.status !== undefined) query = query.where('status', '=', page.status);
  const [rows, total] = await Promise.all([
    query.selectAll().orderBy('id', 'desc').offset(page.offset).limit(page.limit).execute(),
    query.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow(),
  ]);
  return { rows, count: Number(total.count) };
}

/**
 * Makes a call that is not PENDING due again now, unclaimed, keeping its attempts and last error;
 * undefined when the webhook has no such call or it is PENDING already (no sender holds a call
 * that is not PENDING, so none loses its claim here).
 */
export async function retryCall(db: Db, teamId: number, webhookId: string, id: string, now: Date): Promise<CallRow | undefined> {
  return db
    .updateTable('webhook_calls')
    // At the back of the queue, where senders look for new calls (see claimDueCalls).
    .set({ status: 'PENDING', next_attempt_at: now, claimed_by: null, lease_until: null, updated_at: now, seq: sql<string>`nextval(pg_get_serial_sequence('webhook_calls', 'seq'))` })
    .where('team_id', '=', teamId)
    .where('webhook_id', '=', webhookId)
    .where('id', '=', id)
    .where('status', '<>', 'PENDING')
    .returningAll()
    .executeTakeFirst();
}
