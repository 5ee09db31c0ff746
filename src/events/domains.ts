import type { Db } from '../db/connection.js';
import { report } from './outbox.js';
import { domainChange, domainEvent, type DomainState } from './payloads.js';

/**
 * Reports what a write did to a domain (null before: created; null after: deleted), when it is
 * worth telling (domainChange), with the domain as the write left it, in the caller's transaction.
 */
export async function reportDomainChange(tx: Db, before: DomainState | null, after: DomainState | null, at: Date): Promise<void> {
  const type = domainChange(before, after);
  const row = after ?? before;
  if (type === null || row === null) return;
  await report(tx, [{ teamId: row.team_id, subjectKey: `domain:${row.id}`, domainId: null, at, event: domainEvent(type, row) }]);
}
