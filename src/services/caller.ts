import type { Db } from '../db/connection.js';
import { findDomainSummary } from '../data/domains.js';
import { ApiError } from '../errors.js';
import { addressOf, domainOf } from '../mail/address.js';
import type { Caller } from '../people/caller.js';

export type { Caller };

// The checks below are the only places a key's domain scope is enforced (a person's role:
// people/roles.ts).

/** Refuses a key scoped to a domain for anything of another domain (or of none). */
export function assertDomainInScope(caller: Caller, domainId: number | null, action: string): void {
  if (caller.domainId !== null && caller.domainId !== domainId) {
    throw new ApiError('FORBIDDEN', `This API key is scoped to domain ${caller.domainId} and cannot ${action}`);
  }
}

/** Refuses a key scoped to a domain for what belongs to the whole team. */
export function assertTeamWide(caller: Caller, reason: string): void {
  if (caller.domainId !== null) throw new ApiError('FORBIDDEN', `This API key is scoped to domain ${caller.domainId}; ${reason}`);
}

/**
 * Refuses a key scoped to a domain for any write to a book whose double opt-in mails its
 * confirmations from another domain: the book and its contacts (each added contact is mailed from
 * there) are that domain's to change.
 */
export async function assertBookInScope(db: Db, caller: Caller, book: { double_opt_in_enabled: boolean; double_opt_in_from: string | null }): Promise<void> {
  if (caller.domainId === null || !book.double_opt_in_enabled || !book.double_opt_in_from) return;
  const name = domainOf(addressOf(book.double_opt_in_from));
  const domain = await findDomainSummary(db, caller.teamId, { name });
  assertDomainInScope(caller, domain?.id ?? null, `change a contact book, or its contacts, whose confirmations are sent from ${name}`);
}
