import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

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

/**
 * Claims up to `limit` due calls for `leaseUntil`, in one statement. Each active webhook (in a
 * random order, so none is always served last) gives its pending calls whose time has come, that
 * no live lease holds and that no earlier pending call of the same subject precedes (so one
 * email's events go out in order), at most `perWebhook` counting those this process has in
 * flight (`inFlight`, keyed `team_id:webhook_id`): one slow receiver never takes every slot, and a
 * paused one's backlog is never even read. SKIP LOCKED lets senders of several processes claim
 * side by side. Uses webhook_calls_due per webhook, and webhook_calls_pending_subject per call.
 */
export async function claimDueCalls(
  db: Db,
  claim: { now: Date; leaseUntil: Date; token: string; limit: number; perWebhook: number; inFlight: Map<string, number> },
): Promise<ClaimedCall[]> {
  const busy = [...claim.inFlight].map(([key, count]) => ({ key, count }));
  const { rows } = await sql<ClaimedCall>`
    WITH busy AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(busy)}::jsonb) AS b(key text, count integer)
    ), picked AS (
      SELECT c.team_id, c.webhook_id, c.id FROM (
        SELECT w.team_id, w.id, GREATEST(${claim.perWebhook} - COALESCE(b.count, 0), 0) AS room
        FROM webhooks w LEFT JOIN busy b ON b.key = w.team_id || ':' || w.id
        WHERE w.status = 'ACTIVE'
        ORDER BY random()
      ) w
      CROSS JOIN LATERAL (
        SELECT c.team_id, c.webhook_id, c.id FROM webhook_calls c
        WHERE c.team_id = w.team_id AND c.webhook_id = w.id AND c.status = 'PENDING' AND c.next_attempt_at <= ${claim.now}
          AND (c.lease_until IS NULL OR c.lease_until < ${claim.now})
          AND (c.subject_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM webhook_calls p
            WHERE p.team_id = c.team_id AND p.webhook_id = c.webhook_id AND p.subject_key = c.subject_key
              AND p.status = 'PENDING' AND p.seq < c.seq
          ))
        ORDER BY c.next_attempt_at, c.seq
        LIMIT w.room
        FOR UPDATE OF c SKIP LOCKED
      ) c
      LIMIT ${claim.limit}
    )
    UPDATE webhook_calls c SET claimed_by = ${claim.token}, lease_until = ${claim.leaseUntil}
    FROM picked l, webhooks w
    WHERE c.team_id = l.team_id AND c.webhook_id = l.webhook_id AND c.id = l.id
      AND w.team_id = c.team_id AND w.id = c.webhook_id
    RETURNING c.team_id, c.webhook_id, c.id, c.type, c.data, c.attempt, c.created_at, w.url, w.secret`.execute(db);
  return rows;
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
 * once and discards its pending calls, since the receiver said it is gone. Answers how many
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
  const { rows } = await sql<{ recorded: number }>`
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
        RETURNING c.team_id, c.webhook_id, c.subject_key, c.seq, c.next_attempt_at, r.outcome
      ), held_back AS (
        -- The later calls of a subject waiting for a retry wait at least as long (see insertCalls).
        UPDATE webhook_calls p SET next_attempt_at = u.next_attempt_at
        FROM updated u
        WHERE u.outcome = 'RETRY' AND u.subject_key IS NOT NULL
          AND p.team_id = u.team_id AND p.webhook_id = u.webhook_id AND p.subject_key = u.subject_key
          AND p.status = 'PENDING' AND p.seq > u.seq AND p.next_attempt_at < u.next_attempt_at
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
  return rows[0]!.recorded;
}
