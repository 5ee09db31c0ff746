import type { Db } from '../db/connection.js';
import { findSendingDomain } from '../data/domains.js';
import { DkimSigner } from './dkim.js';

/** What sending needs of a domain: its signer, and whether its mail is tracked. */
export type SendingDomain = { signer: DkimSigner; openTracking: boolean; clickTracking: boolean };

/** A team's domain as sending needs it, or null when the team has no such domain. */
export async function loadSendingDomain(db: Db, teamId: number, domainId: number): Promise<SendingDomain | null> {
  const row = await findSendingDomain(db, teamId, domainId);
  if (!row) return null;
  return { signer: new DkimSigner(row.name, row.dkim_selector, row.dkim_private_key), openTracking: row.open_tracking, clickTracking: row.click_tracking };
}
