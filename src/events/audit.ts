import { insertAuditRows } from '../data/audit-log.js';
import type { Db } from '../db/connection.js';
import { newSortableId } from '../ids.js';
import type { ActorType } from '../db/schema.js';

/**
 * Who made a change, as the audit log names them: a person signed in to the dashboard, an API
 * key, or the operator's CLI; `ip` is the client's address (none for the CLI).
 */
export type Actor = { type: ActorType; id: string; label: string; ip: string | null };

/**
 * Every action the audit log records, each `<targetType>.<what happened>`: the one list that the
 * services write and a reader of the log may filter by (docs/audit-log.md says what each records).
 */
export const AUDIT_ACTIONS = [
  'apiKey.created', 'apiKey.revoked',
  'automation.created', 'automation.updated', 'automation.deleted',
  'campaign.created', 'campaign.updated', 'campaign.deleted', 'campaign.scheduled', 'campaign.paused', 'campaign.resumed',
  'contact.created', 'contact.updated', 'contact.deleted', 'contact.imported', 'contact.bulkDeleted',
  'contactBook.created', 'contactBook.updated', 'contactBook.deleted',
  'domain.created', 'domain.updated', 'domain.deleted', 'domain.verificationRequested',
  'email.rescheduled', 'email.cancelled',
  'inboundRoute.created', 'inboundRoute.updated', 'inboundRoute.deleted',
  'segment.created', 'segment.updated', 'segment.deleted',
  'suppression.added', 'suppression.removed',
  'team.created', 'team.rateLimitChanged',
  'template.created', 'template.updated', 'template.deleted',
  'user.invited', 'user.roleChanged', 'user.removed',
  'user.passwordChanged', 'user.passwordReset', 'user.twoFactorEnabled', 'user.twoFactorDisabled', 'user.recoveryCodesRegenerated',
  'webhook.created', 'webhook.updated', 'webhook.deleted', 'webhook.secretRotated', 'webhook.tested',
  'webhookCall.retried',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What a change may name as its target: the kinds of thing the actions are about. */
export type AuditTargetType = AuditAction extends `${infer Target}.${string}` ? Target : never;

/**
 * One change as the audit log names it: `action` is `<targetType>.<what happened>` ("domain.created"),
 * its target usually of that type (a bulk change of contacts names their book).
 */
export type AuditedChange = { action: AuditAction; targetType: AuditTargetType; targetId: string | number | null };

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
