import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/connection.js';
import { REUSED } from '../db/reused-statements.js';
import { claimIsFree } from './workers.js';

/** A call claimed for an attempt, with what posting it takes. */
export type ClaimedCall = {
  team_id: number;
  webhook_id: string;
  id: string;
  type: string;
  data: Record<string, unknown>;
  attempt: number;
  created_at: Date;
  url: string;
  /** Sealed; the sender opens it for each attempt. */
  secret: string;
};

/** How far into each webhook's queue a claim looks for calls it may send. */
const QUEUE_WINDOW = 256;

type QueuedCall = { team_id: number; webhook_id: string; id: string; seq: string; subject_key: string | null; due: boolean };

/**
 * Claims up to `limit` due calls for `leaseUntil`. Each active webhook (in a random order, so none
 * is always served last) offers the front of its queue: a call is taken when it is due, no live
 * lease holds it and no earlier call of its subject is still pending (so one email's events go
 * out in order; an earlier call of the subject always sits ahead of it in the queue, so looking
 * at the front alone is exact), at most `perWebhook` per webhook counting those this process has
 * in flight (`inFlight`, keyed `team_id:webhook_id`): one slow receiver never takes every slot,
 * and a paused one's backlog is never read; and at most `perClaim` of a webhook's in this claim.
 * Two statements, each an index range per webhook (webhook_calls_queue) or a primary-key probe
 * per call, whatever the planner knows of the table; the second takes only calls still free, so senders of several processes never share one.
 * `more`: due calls were left for want of room. `again`: some calls found due were refused when
 * claimed (another sender took them, or an earlier call of their subject holds them back, and they
 * went to the back), so a claim made at once finds the calls behind them; otherwise it would read
 * the same fronts and find nothing new.
 *
 * `fronts` holds where each webhook's queue began when last read (keyed like `inFlight`), and is
 * moved on: the read starts there, past the index entries of calls already finished that a queue
 * table piles up at its front until they are vacuumed away. A call takes its seq when written, not
 * when committed, so a front is safe to read from only once every transaction open when it was
 * found has ended: the caller hands in fronts that old (see QueueFronts).
 */
export async function claimDueCalls(
  db: Db,
  claim: {
    now: Date; leaseUntil: Date; token: string; limit: number; perWebhook: number; perClaim: number; inFlight: Map<string, number>;
    fronts: Map<string, string>;
    /** Workers whose claims are anyone's (see claimIsFree). */
    silent: readonly string[];
  },
): Promise<{ calls: ClaimedCall[]; more: boolean; again: boolean }> {
  const fronts = [...claim.fronts].map(([key, seq]) => ({ key, seq }));
  const { rows: queued } = await sql<QueuedCall>`${sql.raw(REUSED)}
    SELECT q.team_id, q.webhook_id, q.id, q.seq::text AS seq, q.subject_key,
      q.next_attempt_at <= ${claim.now} AND ${claimIsFree(sql.ref('q.claimed_by'), sql.ref('q.lease_until'), claim.now, claim.silent)} AS due
    FROM (
      SELECT w.team_id, w.id, COALESCE(f.seq, 0) AS front
      FROM webhooks w LEFT JOIN jsonb_to_recordset(${JSON.stringify(fronts)}::jsonb) AS f(key text, seq bigint)
        ON f.key = w.team_id || ':' || w.id
      WHERE w.status = 'ACTIVE'
      ORDER BY random()
    ) w
    CROSS JOIN LATERAL (
      SELECT c.team_id, c.webhook_id, c.id, c.seq, c.subject_key, c.next_attempt_at, c.lease_until, c.claimed_by FROM webhook_calls c
      WHERE c.team_id = w.team_id AND c.webhook_id = w.id AND c.status = 'PENDING' AND c.seq >= w.front
      ORDER BY c.seq
      LIMIT ${QUEUE_WINDOW}
    ) q`.execute(db);
  const picked: { team_id: number; webhook_id: string; id: string }[] = [];
  let more = false;
  let webhook = '';
  let room = 0;
  let ahead = new Set<string>();
  for (const call of queued) {
    const key = `${call.team_id}:${call.webhook_id}`;
    if (key !== webhook) {
      webhook = key;
      claim.fronts.set(key, call.seq);
      room = Math.min(claim.perWebhook - (claim.inFlight.get(key) ?? 0), claim.perClaim);
      ahead = new Set();
    }
    const blocked = call.subject_key !== null && ahead.has(call.subject_key);
    if (call.subject_key !== null) ahead.add(call.subject_key);
    if (blocked || !call.due) continue;
    if (room <= 0 || picked.length === claim.limit) {
      more = true;
      continue;
    }
    picked.push({ team_id: call.team_id, webhook_id: call.webhook_id, id: call.id });
    room--;
  }
  if (picked.length === 0) return { calls: [], more, again: false };
  // Found by their primary key alone. Written as a CASE, the check that a call is still free
  // cannot make the planner pick webhook_calls_queue (whose predicate it would match) and read
  // every pending call of the webhook: the embedded database's tables have no statistics.
  // The queue's order can lag behind an event's: a call put at the back for its retry (moveToBack)
  // may pass a later call of its subject written at that moment. So each call is also checked,
  // by webhook_calls_pending_subject, against every earlier pending call of its subject, and one
  // refused for that goes to the back (moveBehindEarlier): left at the front, enough of them would
  // fill the window and hide the earlier calls they wait for.
  // The webhook's address and secret come along; a call whose webhook was deleted in between is
  // not claimed (the webhook took its calls with it).
  const { rows: claimed } = await sql<ClaimedCall>`${sql.raw(REUSED)}
    UPDATE webhook_calls c SET claimed_by = ${claim.token}, lease_until = ${claim.leaseUntil}
    FROM jsonb_to_recordset(${JSON.stringify(picked)}::jsonb) AS p(team_id integer, webhook_id text, id text)
      JOIN webhooks w ON w.team_id = p.team_id AND w.id = p.webhook_id
    WHERE c.team_id = p.team_id AND c.webhook_id = p.webhook_id AND c.id = p.id
      AND CASE WHEN c.status = 'PENDING' THEN ${claimIsFree(sql.ref('c.claimed_by'), sql.ref('c.lease_until'), claim.now, claim.silent)} ELSE false END
      AND NOT EXISTS (
        SELECT 1 FROM webhook_calls e
        WHERE e.team_id = c.team_id AND e.webhook_id = c.webhook_id AND e.subject_key = c.subject_key
          AND e.status = 'PENDING' AND e.created_at < c.created_at)
    RETURNING c.team_id, c.webhook_id, c.id, c.type, c.data, c.attempt, c.created_at, w.url, w.secret`.execute(db);
  const again = claimed.length < picked.length;
  if (again) {
    const taken = new Set(claimed.map((call) => `${call.team_id}:${call.webhook_id}:${call.id}`));
    await moveBehindEarlier(db, picked.filter((p) => !taken.has(`${p.team_id}:${p.webhook_id}:${p.id}`)));
  }
  return { calls: claimed, more, again };
}

/** What one attempt came to, and what the call becomes. */
export type AttemptRecord = {
  teamId: number;
  webhookId: string;
  id: string;
  /** DELIVERED; PENDING again (a retry at `nextAttemptAt`); FAILED (its last attempt failed); GONE (410: the webhook is disabled). */
  outcome: 'DELIVERED' | 'RETRY' | 'FAILED' | 'GONE';
  responseStatus: number | null;
  responseTimeMs: number;
  error: string | null;
  nextAttemptAt: Date | null;
};

/**
 * Records a batch of attempts in one statement, each only while this claim still holds its call:
 * the calls' new state, and per webhook its run of calls that failed every attempt (a delivery
 * ends the run). A run of `autoDisableAfter` sets the webhook AUTO_DISABLED; a 410 disables it at
 * once and discards its pending calls, since the receiver said it is gone. A second statement
 * then moves the calls left waiting for a retry to the back (see moveToBack). Answers how many
 * attempts were recorded.
 */
export async function recordAttempts(db: Db, token: string, attempts: AttemptRecord[], now: Date, autoDisableAfter: number): Promise<number> {
  if (attempts.length === 0) return 0;
  const json = JSON.stringify(
    attempts.map((a) => ({
      team_id: a.teamId, webhook_id: a.webhookId, id: a.id, outcome: a.outcome, response_status: a.responseStatus,
      response_time_ms: Math.round(a.responseTimeMs), error: a.error, next_attempt_at: a.nextAttemptAt?.toISOString() ?? null,
    })),
  );
  const { rows } = await sql<{ recorded: number }>`${sql.raw(REUSED)}
      WITH r AS (
        SELECT * FROM jsonb_to_recordset(${json}::jsonb) AS r(
          team_id integer, webhook_id text, id text, outcome text, response_status integer, response_time_ms integer,
          error text, next_attempt_at timestamptz)
      ), updated AS (
        UPDATE webhook_calls c SET
          status = CASE r.outcome WHEN 'DELIVERED' THEN 'DELIVERED' WHEN 'RETRY' THEN 'PENDING' ELSE 'FAILED' END,
          attempt = c.attempt + 1,
          next_attempt_at = COALESCE(r.next_attempt_at, c.next_attempt_at),
          response_status = r.response_status, response_time_ms = r.response_time_ms, last_error = r.error,
          claimed_by = NULL, lease_until = NULL, updated_at = ${now}
        FROM r
        WHERE c.team_id = r.team_id AND c.webhook_id = r.webhook_id AND c.id = r.id AND c.claimed_by = ${token}
        RETURNING c.team_id, c.webhook_id, r.outcome
      ), per_webhook AS (
        SELECT team_id, webhook_id,
          bool_or(outcome = 'DELIVERED') AS delivered,
          count(*) FILTER (WHERE outcome IN ('FAILED', 'GONE')) AS failed,
          bool_or(outcome = 'GONE') AS gone
        FROM updated GROUP BY team_id, webhook_id
      ), accounted AS (
        UPDATE webhooks w SET
          failed_in_a_row = CASE WHEN p.delivered THEN 0 ELSE w.failed_in_a_row END + p.failed,
          status = CASE
            WHEN w.status <> 'ACTIVE' THEN w.status
            WHEN p.gone OR (CASE WHEN p.delivered THEN 0 ELSE w.failed_in_a_row END + p.failed) >= ${autoDisableAfter} THEN 'AUTO_DISABLED'
            ELSE w.status END,
          disabled_reason = CASE
            WHEN w.status <> 'ACTIVE' THEN w.disabled_reason
            WHEN p.gone THEN 'the receiver answered 410 Gone'
            WHEN (CASE WHEN p.delivered THEN 0 ELSE w.failed_in_a_row END + p.failed) >= ${autoDisableAfter}
              THEN ${`${autoDisableAfter} calls in a row failed every attempt`}
            ELSE w.disabled_reason END,
          updated_at = ${now}
        FROM per_webhook p
        WHERE w.team_id = p.team_id AND w.id = p.webhook_id AND (p.delivered OR p.failed > 0)
      ), discarded AS (
        UPDATE webhook_calls c SET status = 'DISCARDED', last_error = 'the receiver answered 410 Gone', claimed_by = NULL, lease_until = NULL, updated_at = ${now}
        FROM per_webhook p
        WHERE p.gone AND c.team_id = p.team_id AND c.webhook_id = p.webhook_id AND c.status = 'PENDING'
          AND NOT EXISTS (SELECT 1 FROM r WHERE r.team_id = c.team_id AND r.webhook_id = c.webhook_id AND r.id = c.id)
      )
      SELECT count(*)::int AS recorded FROM updated`.execute(db);
  await moveToBack(db, attempts.filter((a) => a.outcome === 'RETRY'));
  return rows[0]!.recorded;
}

/**
 * Puts those of `calls` that an earlier pending call of their subject holds back at the back of
 * their webhook's queue, in the order they were written (calls another sender claimed stay).
 */
async function moveBehindEarlier(db: Db, calls: { team_id: number; webhook_id: string; id: string }[]): Promise<void> {
  await putAtBack(
    db,
    sql`held AS (
      SELECT c.team_id, c.webhook_id, c.id, c.created_at
      FROM jsonb_to_recordset(${JSON.stringify(calls)}::jsonb) AS p(team_id integer, webhook_id text, id text)
      CROSS JOIN LATERAL (
        SELECT * FROM webhook_calls c
        WHERE c.team_id = p.team_id AND c.webhook_id = p.webhook_id AND c.id = p.id AND CASE WHEN c.status = 'PENDING' THEN true ELSE false END
        OFFSET 0
      ) c
      WHERE EXISTS (
        SELECT 1 FROM webhook_calls e
        WHERE e.team_id = c.team_id AND e.webhook_id = c.webhook_id AND e.subject_key = c.subject_key
          AND e.status = 'PENDING' AND e.created_at < c.created_at)
    )`,
    'held',
    'created_at',
  );
}

/**
 * Puts calls waiting for a retry at the back of their webhook's queue, each with its subject's
 * later pending calls in their order, so the front stays free for calls that can go now. Rows
 * are reached by index probes per subject (webhook_calls_pending_subject) or per call.
 */
async function moveToBack(db: Db, retried: Pick<AttemptRecord, 'teamId' | 'webhookId' | 'id'>[]): Promise<void> {
  if (retried.length === 0) return;
  const json = JSON.stringify(retried.map((r) => ({ team_id: r.teamId, webhook_id: r.webhookId, id: r.id })));
  await putAtBack(
    db,
    sql`r AS (
      SELECT DISTINCT ON (c.team_id, c.webhook_id, COALESCE(c.subject_key, c.id)) c.team_id, c.webhook_id, c.id, c.subject_key
      FROM jsonb_to_recordset(${json}::jsonb) AS r(team_id integer, webhook_id text, id text)
      CROSS JOIN LATERAL (
        SELECT * FROM webhook_calls c
        WHERE c.team_id = r.team_id AND c.webhook_id = r.webhook_id AND c.id = r.id AND CASE WHEN c.status = 'PENDING' THEN true ELSE false END
        OFFSET 0
      ) c
    ), moving AS (
      SELECT m.team_id, m.webhook_id, m.id, m.seq FROM r CROSS JOIN LATERAL (
        SELECT c.team_id, c.webhook_id, c.id, c.seq FROM webhook_calls c
        WHERE c.team_id = r.team_id AND c.webhook_id = r.webhook_id AND c.subject_key = r.subject_key AND c.status = 'PENDING'
        OFFSET 0
      ) m
      WHERE r.subject_key IS NOT NULL
      UNION ALL
      SELECT r.team_id, r.webhook_id, r.id, 0 FROM r WHERE r.subject_key IS NULL
    )`,
    'moving',
    'seq',
  );
}

/**
 * Gives the calls of the relation `moving` (defined by `ctes`; team_id, webhook_id, id) new places
 * at the back of their webhooks' queues, in the order of its column `order`.
 */
async function putAtBack(db: Db, ctes: RawBuilder<unknown>, moving: string, order: string): Promise<void> {
  await sql`
    WITH ${ctes}, renumbered AS (
      SELECT team_id, webhook_id, id, nextval(pg_get_serial_sequence('webhook_calls', 'seq')) AS seq
      FROM (SELECT * FROM ${sql.table(moving)} ORDER BY ${sql.ref(order)} OFFSET 0) m
    )
    UPDATE webhook_calls c SET seq = n.seq
    FROM renumbered n
    WHERE c.team_id = n.team_id AND c.webhook_id = n.webhook_id AND c.id = n.id`.execute(db);
}
