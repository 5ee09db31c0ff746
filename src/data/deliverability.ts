import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

export type OutcomeCounts = { delivered: number; deferred: number; bounced: number };

/** Adds outcomes to their team's, destination's and minute's counts (delivery_stats primary key). */
export async function addDeliveryStats(db: Db, rows: Array<{ teamId: number; destination: string; minute: Date } & OutcomeCounts>): Promise<void> {
  if (rows.length === 0) return;
  const values = rows.map((r) => ({ team_id: r.teamId, destination: r.destination, minute: r.minute.toISOString(), delivered: r.delivered, deferred: r.deferred, bounced: r.bounced }));
  await sql`
    INSERT INTO delivery_stats AS s (team_id, destination, minute, delivered, deferred, bounced)
    SELECT team_id, destination, minute, delivered, deferred, bounced
    FROM jsonb_to_recordset(${JSON.stringify(values)}::jsonb) AS v(team_id integer, destination text, minute timestamptz, delivered integer, deferred integer, bounced integer)
    ON CONFLICT (team_id, destination, minute) DO UPDATE
    SET delivered = s.delivered + EXCLUDED.delivered, deferred = s.deferred + EXCLUDED.deferred, bounced = s.bounced + EXCLUDED.bounced`.execute(db);
}

export type DestinationStateRow = { teamId: number; destination: string; queued: number; inFlight: number; limit: number; pausedUntil: Date | null };

/** Replaces what this worker said its destinations hold (destination_states primary key). */
export async function replaceDestinationStates(db: Db, workerId: string, rows: DestinationStateRow[], now: Date): Promise<void> {
  const values = rows.map((r) => ({
    team_id: r.teamId, destination: r.destination, queued: r.queued, in_flight: r.inFlight, connection_limit: r.limit, paused_until: r.pausedUntil?.toISOString() ?? null,
  }));
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('destination_states').where('worker_id', '=', workerId).execute();
    if (values.length === 0) return;
    await sql`
      INSERT INTO destination_states (worker_id, team_id, destination, queued, in_flight, connection_limit, paused_until, updated_at)
      SELECT ${workerId}, team_id, destination, queued, in_flight, connection_limit, paused_until, ${now}
      FROM jsonb_to_recordset(${JSON.stringify(values)}::jsonb)
        AS v(team_id integer, destination text, queued integer, in_flight integer, connection_limit integer, paused_until timestamptz)`.execute(tx);
  });
}

/** Drops minute counts older than `statsBefore` (delivery_stats_minute), and what workers that stopped reporting before `statesBefore` left. */
export async function dropOldDeliverability(db: Db, statsBefore: Date, statesBefore: Date): Promise<void> {
  await db.deleteFrom('delivery_stats').where('minute', '<', statsBefore).execute();
  await db.deleteFrom('destination_states').where('updated_at', '<', statesBefore).execute();
}

export type DestinationView = OutcomeCounts & { destination: string; queued: number; inFlight: number; pausedUntil: Date | null };

/**
 * A team's destinations: mail waiting for each (retries and postponed mail routed there, and what
 * workers hold queued), under way, its outcomes since `since`, and until when it is paused; from
 * worker reports newer than `freshAfter`. Uses emails_waiting_destination, the delivery_stats and
 * destination_states primary keys.
 */
export async function teamDestinations(db: Db, teamId: number, window: { since: Date; freshAfter: Date; now: Date }): Promise<DestinationView[]> {
  const { rows } = await sql<{ destination: string; waiting: number; queued: number; in_flight: number; paused_until: Date | null; delivered: number; deferred: number; bounced: number }>`
    WITH waiting AS (
      SELECT destination, count(*)::integer AS n FROM emails
      WHERE team_id = ${teamId} AND destination IS NOT NULL AND send_at IS NOT NULL AND claimed_by IS NULL
      GROUP BY destination
    ), held AS (
      SELECT destination, sum(queued)::integer AS queued, sum(in_flight)::integer AS in_flight
      FROM destination_states WHERE team_id = ${teamId} AND updated_at > ${window.freshAfter}
      GROUP BY destination
    ), paused AS (
      SELECT destination, max(paused_until) AS paused_until
      FROM destination_states WHERE updated_at > ${window.freshAfter} AND paused_until > ${window.now}
      GROUP BY destination
    ), outcomes AS (
      SELECT destination, sum(delivered)::integer AS delivered, sum(deferred)::integer AS deferred, sum(bounced)::integer AS bounced
      FROM delivery_stats WHERE team_id = ${teamId} AND minute >= ${window.since}
      GROUP BY destination
    ), names AS (
      SELECT destination FROM waiting UNION SELECT destination FROM held UNION SELECT destination FROM outcomes
    )
    SELECT n.destination, coalesce(w.n, 0) AS waiting, coalesce(h.queued, 0) AS queued, coalesce(h.in_flight, 0) AS in_flight,
      p.paused_until, coalesce(o.delivered, 0) AS delivered, coalesce(o.deferred, 0) AS deferred, coalesce(o.bounced, 0) AS bounced
    FROM names n
    LEFT JOIN waiting w ON w.destination = n.destination
    LEFT JOIN held h ON h.destination = n.destination
    LEFT JOIN paused p ON p.destination = n.destination
    LEFT JOIN outcomes o ON o.destination = n.destination
    ORDER BY n.destination`.execute(db);
  return rows.map((row) => ({
    destination: row.destination,
    queued: row.waiting + row.queued,
    inFlight: row.in_flight,
    pausedUntil: row.paused_until,
    delivered: row.delivered,
    deferred: row.deferred,
    bounced: row.bounced,
  }));
}
