import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import { apiRoutes } from '../api/index.js';
import { authorize } from '../http/authorize.js';
import type { AppDeps } from '../http/deps.js';
import { parseInput } from '../http/input.js';
import type { Method, RouteDef } from '../http/route.js';
import type { Caller } from '../services/caller.js';
import type { DashboardEnv } from './session.js';

const routes = new Map(apiRoutes.map((route) => [`${route.method} ${route.path}`, route] as const));

/** The signed-in person as a service's caller: the whole team, with their role, named in the audit log by their address. */
export function callerOf(c: Context<DashboardEnv>): Caller {
  const user = c.get('user');
  const ip = getConnInfo(c).remote.address ?? null;
  return { teamId: user.teamId, domainId: null, role: user.role, actor: { type: 'user', id: user.userId, label: user.email, ip } };
}

type Call = { params?: Record<string, string>; query?: Record<string, string | undefined>; body?: unknown };

/**
 * Runs one API call for the signed-in person, through the route's own check, schemas and handler,
 * so the dashboard applies exactly the API's rules: a page is never a second implementation of
 * one. The person acts for the whole team, as a full-permission key would, within their role.
 */
export async function callApi<T = any>(c: Context<DashboardEnv>, deps: AppDeps, method: Method, path: string, call: Call = {}): Promise<T> {
  const route: RouteDef | undefined = routes.get(`${method} ${path}`);
  if (!route) throw new Error(`No API route ${method} ${path}`);
  const user = c.get('user');
  const query = call.query ? Object.fromEntries(Object.entries(call.query).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '')) : {};
  const auth = { ...callerOf(c), keyId: `dashboard:${user.userId}`, permission: 'full' as const, rateLimitPerSecond: null };
  authorize(auth, route);
  const input = {
    params: route.params ? parseInput(route.params, call.params ?? {}) : undefined,
    query: route.query ? parseInput(route.query, query) : undefined,
    body: route.body ? parseInput(route.body, call.body ?? {}) : undefined,
    auth,
    deps,
    c,
  };
  return (await route.handler(input as never)) as T;
}
