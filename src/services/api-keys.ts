import { hash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import type { Permission } from '../db/schema.js';
import { audit, type Actor } from '../events/audit.js';
import * as keys from '../data/api-keys.js';
import { findDomainSummary } from '../data/domains.js';
import { findTeam } from '../data/teams.js';
import { ApiError, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { parseOrThrow } from '../validation.js';
import { assertTeamWide, type Caller } from './caller.js';
import { recentReads } from './recent-reads.js';
import { assertAllowed } from '../people/roles.js';

/** The caller a key stands for, with what the HTTP layer enforces: its permission and rate limit. */
export type AuthContext = Caller & {
  keyId: string;
  permission: Permission;
  rateLimitPerSecond: number | null;
};

type KeyDeps = Pick<Deps, 'db'>;
/** What reads or changes the keys a request may present. */
type KeyReadDeps = Pick<Deps, 'db' | 'recentKeys'>;
/** The operator's changes (the CLI) come from a process that may keep no keys (its own), with none to forget. */
export type OperatorKeyDeps = KeyDeps & Partial<Pick<Deps, 'recentKeys'>>;

const TOKEN_PREFIX = 'mr_';

// Tokens carry 256 random bits, so a fast hash is enough: nothing can be guessed offline, and the
// per-request lookup stays one hash plus one index probe.
const hashToken = (token: string) => hash('sha256', token, 'hex');

type NewKey = { permission?: Permission; domainId?: number | null; name?: string | null };

/** A key of a team, made by `actor` (recorded in the team's audit log; none: Mailroom itself). */
export async function createApiKey({ db }: KeyDeps, input: NewKey & { teamId: number }, actor?: Actor) {
  if (!(await findTeam(db, input.teamId))) throw notFound(`Team ${input.teamId}`);
  if (input.domainId != null && !(await findDomainSummary(db, input.teamId, { id: input.domainId }))) {
    throw new ApiError('NOT_FOUND', `Domain ${input.domainId} not found in team ${input.teamId}`);
  }
  return db.transaction().execute((tx) => insertKey(tx, { teamId: input.teamId, actor }, input));
}

/**
 * Writes a key of the caller's team, checked already, with its audit row in `tx`. Answers its
 * token, shown only this once: the database keeps its hash, the log its id.
 */
export async function insertKey(tx: Db, caller: { teamId: number; actor?: Actor }, input: NewKey) {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const row = await keys.insertApiKey(tx, {
    id: `key_${newId(16)}`,
    teamId: caller.teamId,
    name: input.name ?? null,
    tokenHash: hashToken(token),
    tokenHint: `${token.slice(0, 7)}…${token.slice(-4)}`,
    permission: input.permission ?? 'full',
    domainId: input.domainId ?? null,
  });
  await audit(tx, caller, { action: 'apiKey.created', targetType: 'apiKey', targetId: row.id });
  return { id: row.id, apiKey: token, permission: row.permission, domainId: row.domain_id };
}

// Every request presents its key: reading it once a second instead of once a request takes a
// round trip off each call. A key revoked (or a team's limit changed) by another process takes
// effect here within that second; by this process, at once (`recentKeys.clear()` after anything
// that revokes a key or changes what it carries).
export const newRecentKeys = (): Deps['recentKeys'] => recentReads((row) => row !== undefined);

/** The key behind a token, for a client at `ip` (named with the key in the audit log). */
export async function authenticate({ db, recentKeys }: KeyReadDeps, token: string, ip: string | null): Promise<AuthContext | null> {
  if (!token.startsWith(TOKEN_PREFIX)) return null;
  const tokenHash = hashToken(token);
  const row = await recentKeys.get(tokenHash, () => keys.findActiveKeyByHash(db, tokenHash));
  if (!row) return null;
  return {
    teamId: row.team_id,
    keyId: row.id,
    permission: row.permission,
    domainId: row.domain_id,
    rateLimitPerSecond: row.rate_limit_per_second,
    actor: { type: 'apiKey', id: row.id, label: row.name ?? `key ${row.token_hint}`, ip },
  };
}

export async function listApiKeys({ db }: KeyDeps, caller: Pick<Caller, 'teamId' | 'role'>) {
  assertAllowed(caller, 'keys', 'read');
  const { teamId } = caller;
  if (!(await findTeam(db, teamId))) throw notFound(`Team ${teamId}`);
  const rows = await keys.listApiKeys(db, teamId);
  return rows.map((row) => ({
    id: row.id,
    teamId: row.team_id,
    name: row.name,
    permission: row.permission,
    domainId: row.domain_id,
    hint: row.token_hint,
    createdAt: row.created_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString() ?? null,
  }));
}

const teamKeySchema = z.object({
  name: z.string().trim().min(1).max(200),
  permission: z.enum(['full', 'sending']),
  domainId: z.number().int().positive().nullable(),
});

/** A key made by a person of the team (the dashboard): named, and scoped only to a domain of that team. */
export async function createTeamApiKey({ db }: KeyDeps, caller: Caller, input: { name: string; permission: string; domainId: number | null }) {
  assertTeamWide(caller, 'only the whole team may create API keys');
  assertAllowed(caller, 'keys', 'change');
  const key = parseOrThrow(teamKeySchema, input);
  if (key.domainId !== null && !(await findDomainSummary(db, caller.teamId, { id: key.domainId }))) {
    throw invalid('domainId', 'is not a domain of this team');
  }
  return createApiKey({ db }, { teamId: caller.teamId, ...key }, caller.actor);
}

/**
 * Revoking twice is harmless: the key stays revoked from the first time (and the audit log has the
 * one revocation). The row goes to the key's own team, whichever team `teamId` asks for.
 */
async function revoke({ db, recentKeys }: OperatorKeyDeps, id: string, teamId?: number, actor?: Actor) {
  const revoked = await db.transaction().execute(async (tx) => {
    const row = await keys.revokeApiKey(tx, id, teamId);
    if (row) await audit(tx, { teamId: row.team_id, actor }, { action: 'apiKey.revoked', targetType: 'apiKey', targetId: row.id });
    return row;
  });
  recentKeys?.clear();
  if (revoked) return { id: revoked.id, revokedAt: revoked.revoked_at!.toISOString() };
  const existing = await keys.findApiKey(db, id, teamId);
  if (!existing) throw notFound(`API key ${id}`);
  return { id: existing.id, revokedAt: existing.revoked_at!.toISOString() };
}

/** The operator's revoke (the CLI): any team's key, by id. */
export const revokeApiKey = (deps: OperatorKeyDeps, { id }: { id: string }, actor?: Actor) => revoke(deps, id, undefined, actor);

/** A person's revoke: a key of another team answers exactly like a missing one. */
export async function revokeTeamApiKey(deps: KeyReadDeps, caller: Caller, { id }: { id: string }) {
  assertTeamWide(caller, 'only the whole team may revoke API keys');
  assertAllowed(caller, 'keys', 'change');
  return revoke(deps, id, caller.teamId, caller.actor);
}
