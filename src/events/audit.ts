import { insertAuditRows } from '../data/audit-log.js';
import type { Db } from '../db/connection.js';
import { newSortableId } from '../ids.js';
import type { ActorType } from '../db/schema.js';

/**
 * Who made a change, as the audit log names them: a person signed in to the dashboard, an API
 * key, or the operator's CLI; `ip` is the client's address (none for the CLI).
 */
export type Actor = { type: ActorType; id: string; label: string; ip: string | null };

/** One change as the audit log names it: `action` is `<targetType>.<what happened>` ("domain.created"). */
export type AuditedChange = { action: string; targetType: string; targetId: string | number | null };

/**
 * Records changes made by the caller's actor in the audit log, in `tx`: the transaction that
 * makes them, so a change and its row commit or roll back together. A caller without an actor
 * (Mailroom's own workers, and services called from tests) records nothing. Never hand it a
 * secret: the row names the target, not its content.
 */
export async function audit(tx: Db, caller: { teamId: number; actor?: Actor }, changes: AuditedChange | AuditedChange[], at = new Date()): Promise<void> {
  const { actor } = caller;
  if (!actor) return;
  await insertAuditRows(
    tx,
    (Array.isArray(changes) ? changes : [changes]).map((change) => ({
      team_id: caller.teamId,
      id: newSortableId(),
      at,
      actor_type: actor.type,
      actor_id: actor.id,
      actor_label: actor.label,
      action: change.action,
      target_type: change.targetType,
      target_id: change.targetId === null ? null : String(change.targetId),
      ip: actor.ip,
    })),
  );
}
