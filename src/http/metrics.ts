import { hash, timingSafeEqual } from 'node:crypto';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { ApiError } from '../errors.js';
import { BEARER, failedAuthThrottle } from './auth.js';
import type { AppDeps } from './deps.js';

/** The route label of requests no route serves: their paths are the caller's to choose, so unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * The template of the route that serves the request (`/v1/emails/:emailId`), never its path, which
 * carries ids. Middleware (method ALL) serves no route: a request only middleware matched
 * (a 404 or a 405) is `unmatched`. A request refused before its handler ran (401, 429) still has
 * the handler's template.
 */
function routeOf(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) if (routes[i]!.method !== 'ALL') return routes[i]!.path;
  return UNMATCHED_ROUTE;
}

const digest = (text: string) => hash('sha256', text, 'buffer');

/**
 * Counts and times every request by route template, when METRICS_TOKEN is set (else it only passes
 * the request on). Registered first, so that it times everything, on every role.
 */
export function requestMetrics(deps: Pick<AppDeps, 'config' | 'metrics'>): MiddlewareHandler {
  if (deps.config.metricsToken === null) return (_c, next) => next();
  const { metrics } = deps;
  return async (c, next) => {
    const started = performance.now();
    await next();
    metrics.request(c.req.method, routeOf(c), c.res.status, (performance.now() - started) / 1000);
  };
}

/**
 * GET /metrics, in Prometheus text format, to the bearer of METRICS_TOKEN alone, outside the API
 * and its keys. Without the token it serves nothing: /metrics is then the 404 of any unknown path.
 * Wrong tokens are throttled per client address as wrong API keys are.
 */
export function metricsRoute(deps: Pick<AppDeps, 'config' | 'metrics'>): Hono {
  const route = new Hono();
  const { metricsToken } = deps.config;
  if (metricsToken === null) return route;
  const { metrics } = deps;
  // Digests compare in constant time whatever the lengths, and take no time that tells the length.
  const expected = digest(metricsToken);
  const throttle = failedAuthThrottle(deps, 'metrics token');
  route.get('/', async (c) => {
    const client = throttle.admit(c);
    const token = BEARER.exec(c.req.header('authorization')?.trim() ?? '')?.[1];
    if (token === undefined || !timingSafeEqual(digest(token), expected)) {
      throttle.failed(client);
      throw new ApiError('UNAUTHORIZED', 'Missing or wrong metrics token: expected "Authorization: Bearer <METRICS_TOKEN>"');
    }
    return c.body(await metrics.render(), 200, { 'Content-Type': metrics.contentType });
  });
  return route;
}
