import type { Role } from '../db/schema.js';
import type { Actor } from '../events/audit.js';

export type { Actor, Role };

/** The roles a person holds in a team, most rights first (see roles.ts for what each may do). */
export const ROLES: readonly Role[] = ['owner', 'admin', 'member', 'viewer'];

/**
 * Who asks: a team, through a key that may be scoped to one of its domains, or a person with a
 * role. Every service of a team's resources takes it. `role` is a person's (a key's rights are
 * its permission and scope); `actor`, when there is one, is named in the audit row of each change.
 */
export type Caller = { teamId: number; domainId: number | null; role?: Role; actor?: Actor };
