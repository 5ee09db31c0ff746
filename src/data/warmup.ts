import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

/**
 * Takes one of a warming-up domain's attempts of `day` if fewer than `cap` are taken: one
 * statement, so workers racing for the last one cannot both get it. Answers whether it got one.
 * Uses the domain_warmup_days primary key.
 */
export async function takeWarmupSlot(db: Db, key: { teamId: number; domainId: number; day: string }, cap: number): Promise<boolean> {
  if (cap <= 0) return false;
  const { rows } = await sql<{ sent: number }>`
    INSERT INTO domain_warmup_days AS d (team_id, domain_id, day, sent)
    VALUES (${key.teamId}, ${key.domainId}, ${key.day}::date, 1)
    ON CONFLICT (team_id, domain_id, day) DO UPDATE SET sent = d.sent + 1 WHERE d.sent < ${cap}
    RETURNING sent`.execute(db);
  return rows.length === 1;
}

/** Gives back an attempt taken for mail that was not tried after all. */
export async function giveBackWarmupSlot(db: Db, key: { teamId: number; domainId: number; day: string }): Promise<void> {
  await sql`
    UPDATE domain_warmup_days SET sent = GREATEST(sent - 1, 0)
    WHERE team_id = ${key.teamId} AND domain_id = ${key.domainId} AND day = ${key.day}::date`.execute(db);
}

/** Attempts each of these domains of the team has taken on `day`. */
export async function warmupSentOn(db: Db, teamId: number, domainIds: number[], day: string): Promise<Map<number, number>> {
  if (domainIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('domain_warmup_days')
    .select(['domain_id', 'sent'])
    .where('team_id', '=', teamId)
    .where('domain_id', 'in', domainIds)
    .where('day', '=', day)
    .execute();
  return new Map(rows.map((row) => [row.domain_id, row.sent]));
}
