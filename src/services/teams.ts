import type { Deps } from '../deps.js';
import * as teams from '../data/teams.js';
import { notFound } from '../errors.js';
import { audit, type Actor } from '../events/audit.js';
import { insertKey, type OperatorKeyDeps } from './api-keys.js';

/**
 * A team is never left without its first key: both are written in one transaction, recorded in
 * the new team's audit log as made by `actor` (the operator's CLI).
 */
export async function createTeam({ db }: Pick<Deps, 'db'>, { name }: { name: string }, actor?: Actor) {
  return db.transaction().execute(async (tx) => {
    const team = await teams.insertTeam(tx, name);
    const caller = { teamId: team.id, actor };
    await audit(tx, caller, { action: 'team.created', targetType: 'team', targetId: team.id });
    const key = await insertKey(tx, caller, { permission: 'full', name: 'initial' });
    return { teamId: team.id, name: team.name, apiKey: key.apiKey, keyId: key.id };
  });
}

export async function setTeamRateLimit({ db, recentKeys }: OperatorKeyDeps, { teamId, perSecond }: { teamId: number; perSecond: number | null }, actor?: Actor) {
  const team = await db.transaction().execute(async (tx) => {
    const changed = await teams.updateTeamRateLimit(tx, teamId, perSecond);
    if (changed) await audit(tx, { teamId, actor }, { action: 'team.rateLimitChanged', targetType: 'team', targetId: teamId });
    return changed;
  });
  if (!team) throw notFound(`Team ${teamId}`);
  recentKeys?.clear();
  return { teamId: team.id, rateLimitPerSecond: team.rate_limit_per_second };
}
