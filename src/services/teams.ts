import type { Deps } from '../deps.js';
import * as teams from '../data/teams.js';
import { notFound } from '../errors.js';
import { createApiKey, type OperatorKeyDeps } from './api-keys.js';

/** A team is never left without its first key: both are written in one transaction. */
export async function createTeam({ db }: Pick<Deps, 'db'>, { name }: { name: string }) {
  return db.transaction().execute(async (tx) => {
    const team = await teams.insertTeam(tx, name);
    const key = await createApiKey({ db: tx }, { teamId: team.id, permission: 'full', name: 'initial' });
    return { teamId: team.id, name: team.name, apiKey: key.apiKey, keyId: key.id };
  });
}

export async function setTeamRateLimit({ db, recentKeys }: OperatorKeyDeps, { teamId, perSecond }: { teamId: number; perSecond: number | null }) {
  const team = await teams.updateTeamRateLimit(db, teamId, perSecond);
  if (!team) throw notFound(`Team ${teamId}`);
  recentKeys?.clear();
  return { teamId: team.id, rateLimitPerSecond: team.rate_limit_per_second };
}
