import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/connection.js';

/** The campaign counters that come from an email's events (an unsubscribe is counted without one). */
export const TIMELINE_KINDS = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'hard_bounced', 'complained'] as const;
export type TimelineKind = (typeof TIMELINE_KINDS)[number];

export type HourCount = { kind: TimelineKind; hour: number; count: number };

/**
 * For each counter and UTC hour (hours since the epoch), how many of the campaign's emails had
 * their first event of that kind then: the hour in which the counter counted them, as a counter
 * counts an email once per kind. Walks the campaign's mail through emails_campaign_contact
 * (team_id, campaign_id, …), then each email's events through the email_events primary key
 * (team_id, email_id, seq); OFFSET 0 keeps the planner from making that a join it might run as a
 * scan of every event (PGlite's tables have no statistics). Cost: the campaign's emails and events.
 */
export async function campaignCountsByHour(db: Db, teamId: number, campaignId: string): Promise<HourCount[]> {
  const first = (condition: RawBuilder<unknown>) => sql`min(ev.created_at) FILTER (WHERE ${condition})`;
  const { rows } = await sql<HourCount>`
    WITH firsts AS (
      SELECT
        ${first(sql`ev.status = 'SENT'`)} AS sent,
        ${first(sql`ev.status = 'DELIVERED'`)} AS delivered,
        ${first(sql`ev.status = 'OPENED'`)} AS opened,
        ${first(sql`ev.status = 'CLICKED'`)} AS clicked,
        ${first(sql`ev.status = 'BOUNCED'`)} AS bounced,
        ${first(sql`ev.status = 'BOUNCED' AND ev.data->>'bounceType' = 'Permanent'`)} AS hard_bounced,
        ${first(sql`ev.status = 'COMPLAINED'`)} AS complained
      FROM emails e
      CROSS JOIN LATERAL (
        SELECT status, data, created_at FROM email_events ev
        WHERE ev.team_id = e.team_id AND ev.email_id = e.id AND ev.status IN ('SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'BOUNCED', 'COMPLAINED')
        OFFSET 0
      ) ev
      WHERE e.team_id = ${teamId} AND e.campaign_id = ${campaignId}
      GROUP BY e.id
    )
    SELECT k.kind, floor(extract(epoch FROM k.at) / 3600)::int AS hour, count(*)::int AS count
    FROM firsts
    CROSS JOIN LATERAL (VALUES
      ('sent', sent), ('delivered', delivered), ('opened', opened), ('clicked', clicked),
      ('bounced', bounced), ('hard_bounced', hard_bounced), ('complained', complained)
    ) AS k(kind, at)
    WHERE k.at IS NOT NULL
    GROUP BY k.kind, hour
    ORDER BY hour`.execute(db);
  return rows;
}
