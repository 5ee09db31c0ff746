import { ApiError } from '../errors.js';
import { assertAllowed, type Area } from '../people/roles.js';
import type { AuthContext } from './auth.js';
import type { RouteDef } from './route.js';

/** The area of each tag's routes, unless a route names its own. */
const TAG_AREAS: Record<string, Area> = {
  Analytics: 'reports',
  'Audit log': 'audit',
  Automations: 'automations',
  Campaigns: 'campaigns',
  'Contact books': 'audience',
  Contacts: 'audience',
  Deliverability: 'reports',
  Domains: 'domains',
  Emails: 'mail',
  Inbound: 'inbound',
  Segments: 'audience',
  Suppressions: 'suppressions',
  Templates: 'templates',
  Webhooks: 'webhooks',
};

export function areaOf(route: Pick<RouteDef, 'area' | 'tag'>): Area {
  const area = route.area ?? TAG_AREAS[route.tag];
  if (!area) throw new Error(`Route tag "${route.tag}" has no area in TAG_AREAS`);
  return area;
}

export const accessOf = (route: Pick<RouteDef, 'access' | 'method'>) => route.access ?? (route.method === 'get' ? 'read' : 'change');

/**
 * Whether the caller may make this call at all, checked before its input is read: a key by its
 * permission, a person by their role. Every call of the API and of the dashboard passes here.
 */
export function authorize(auth: AuthContext, route: RouteDef): void {
  if ((route.permission ?? 'full') === 'full' && auth.permission !== 'full') {
    throw new ApiError('FORBIDDEN', 'This API key may only send email; this call needs a key with full permission');
  }
  assertAllowed(auth, areaOf(route), accessOf(route));
}
