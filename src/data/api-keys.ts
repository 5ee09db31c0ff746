import type { Db } from '../db/connection.js';
import type { Permission } from '../db/schema.js';

export type NewApiKey = {
  id: string;
  teamId: number;
  name: string | null;
  tokenHash: string;
  tokenHint: string;
  permission: Permission;
  domainId: number | null;
};

export async function insertApiKey(db: Db, key: NewApiKey) {
  return db
    .insertInto('api_keys')
    .values({
      id: key.id,
      team_id: key.teamId,
      name: key.name,
      token_hash: key.tokenHash,
      token_hint: key.tokenHint,
      permission: key.permission,
      domain_id: key.domainId,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The per-request lookup: one unique-index probe on the token's hash. */
export async function findActiveKeyByHash(db: Db, tokenHash: string) {
  return db
    .selectFrom('api_keys')
    .innerJoin('teams', 'teams.id', 'api_keys.team_id')
    .select([
      'api_keys.id',
      'api_keys.team_id',
      'api_keys.name',
      'api_keys.token_hint',
      'api_keys.permission',
      'api_keys.domain_id',
      'teams.rate_limit_per_second',
    ])
    .where('api_keys.token_hash', '=', tokenHash)
    .where('api_keys.revoked_at', 'is', null)
    .executeTakeFirst();
}

export async function listApiKeys(db: Db, teamId: number) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'team_id', 'name', 'token_hint', 'permission', 'domain_id', 'created_at', 'revoked_at'])
    .where('team_id', '=', teamId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** `teamId` limits it to that team's keys; without it (the operator's CLI) any team's key. */
export async function revokeApiKey(db: Db, id: string, teamId?: number) {
  return db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('id', '=', id)
    .$if(teamId !== undefined, (query) => query.where('team_id', '=', teamId!))
    .where('revoked_at', 'is', null)
    .returning(['id', 'team_id', 'revoked_at'])
    .executeTakeFirst();
}

export async function findApiKey(db: Db, id: string, teamId?: number) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'revoked_at'])
    .where('id', '=', id)
    .$if(teamId !== undefined, (query) => query.where('team_id', '=', teamId!))
    .executeTakeFirst();
}
