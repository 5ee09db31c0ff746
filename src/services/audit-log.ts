import { listAuditRows, type AuditRow } from '../data/audit-log.js';
import type { ActorType } from '../db/schema.js';
import type { Deps } from '../deps.js';
import { validationError } from '../validation.js';
import { assertTeamWide, type Caller } from './caller.js';

export type AuditLogQuery = {
  page: number;
  limit: number;
  /** An actor's id: a user's, an API key's, or the CLI's. */
  actor?: string;
  actorType?: ActorType;
  actions?: string[];
  /** From this time on, inclusive. */
  from?: Date;
  /** Up to this time, exclusive. */
  to?: Date;
};

// The log names changes to every domain of the team, and who made them.
const TEAM_WIDE = 'the audit log records changes to the whole team, so only a key for the whole team may read it';

/** An entry as answered: who, what, to what, from where. */
export function toAuditEntry(row: AuditRow) {
  return {
    id: row.id,
    at: row.at.toISOString(),
    actor: { type: row.actor_type, id: row.actor_id, label: row.actor_label },
    action: row.action,
    targetType: row.target_type,
    targetId: row.target_id,
    ip: row.ip,
  };
}

/** A page of the team's audit log, newest first, narrowed by actor, actions and a time window. */
export async function listAuditLog(deps: Pick<Deps, 'db'>, caller: Caller, query: AuditLogQuery) {
  assertTeamWide(caller, TEAM_WIDE);
  if (query.from && query.to && query.from > query.to) throw validationError([{ path: 'to', message: 'must not be before from' }]);
  const { rows, count } = await listAuditRows(
    deps.db,
    caller.teamId,
    { actorId: query.actor, actorType: query.actorType, actions: query.actions, from: query.from, to: query.to },
    { offset: (query.page - 1) * query.limit, limit: query.limit },
  );
  return { data: rows.map(toAuditEntry), count };
}
