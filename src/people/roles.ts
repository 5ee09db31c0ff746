import { ApiError } from '../errors.js';
import { ROLES, type Caller, type Role } from './caller.js';

/** The parts of a team's account a call reads or changes: each API route and each service outside them names one. */
export const AREAS = [
  'mail', 'audience', 'campaigns', 'templates', 'automations', 'reports', 'suppressions', 'domains', 'inbound', 'webhooks', 'keys', 'people', 'audit',
] as const;
export type Area = (typeof AREAS)[number];
export type Access = 'read' | 'change';

/**
 * The one permission table: for each area, the least role that may read it and the least that
 * may change it (roles rank owner > admin > member > viewer). Members send and run the audience
 * and its mail; keys, webhooks, domains, inbound routes, suppressions and people are for admins;
 * among people, only an owner may touch an owner (team.ts). `change: null`: nobody changes it
 * (reports are read; the audit log is only ever appended to by the changes it records).
 */
export const PERMISSIONS: Record<Area, { read: Role; change: Role | null }> = {
  mail: { read: 'viewer', change: 'member' },
  audience: { read: 'viewer', change: 'member' },
  campaigns: { read: 'viewer', change: 'member' },
  templates: { read: 'viewer', change: 'member' },
  automations: { read: 'viewer', change: 'member' },
  reports: { read: 'viewer', change: null },
  suppressions: { read: 'viewer', change: 'admin' },
  domains: { read: 'viewer', change: 'admin' },
  inbound: { read: 'viewer', change: 'admin' },
  webhooks: { read: 'viewer', change: 'admin' },
  keys: { read: 'admin', change: 'admin' },
  people: { read: 'viewer', change: 'admin' },
  audit: { read: 'admin', change: null },
};

/** Whether `role` ranks at least `least`. */
export const atLeast = (role: Role, least: Role) => ROLES.indexOf(role) <= ROLES.indexOf(least);

/** Whether a caller may read or change an area: a person by their role; a key or the CLI by its permission and scope, checked elsewhere. */
export function may(caller: Pick<Caller, 'role'>, area: Area, access: Access): boolean {
  const least = PERMISSIONS[area][access];
  return caller.role === undefined || (least !== null && atLeast(caller.role, least));
}

const AREA_NAMES: Record<Area, string> = {
  mail: 'email', audience: 'contact books, contacts and segments', campaigns: 'campaigns', templates: 'templates', automations: 'automations',
  reports: 'analytics', suppressions: 'suppressions', domains: 'domains', inbound: 'inbound routes', webhooks: 'webhooks', keys: 'API keys',
  people: 'the people of the team', audit: 'the audit log',
};

/** Refuses (403, nothing changed) what the caller's role does not allow. */
export function assertAllowed(caller: Pick<Caller, 'role'>, area: Area, access: Access): void {
  if (may(caller, area, access)) return;
  const least = PERMISSIONS[area][access];
  const verb = access === 'read' ? 'see' : 'change';
  const takes = least === null ? 'nobody can' : least === 'owner' ? 'that takes an owner' : `that takes the ${least} role or higher`;
  throw new ApiError('FORBIDDEN', `Your role (${caller.role}) cannot ${verb} ${AREA_NAMES[area]}: ${takes}`);
}
