import { ApiError } from '../errors.js';

/**
 * Who asks: a team, through a key that may be scoped to one of its domains. Every service of a
 * team's resources takes it, and the two checks below are the only places a scope is enforced.
 */
export type Caller = { teamId: number; domainId: number | null };

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
