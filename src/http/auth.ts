import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context, MiddlewareHandler } from 'hono';
import { authenticate, type AuthContext } from '../services/api-keys.js';
import { ApiError } from '../errors.js';
import type { AppDeps } from './deps.js';
import { RateLimiter, type RateDecision } from './rate-limit.js';

export type { AuthContext };

// The scheme is case-insensitive and may be followed by several spaces (RFC 9110 §11.4).
export const BEARER = /^Bearer +([\x21-\x7e]{1,512})$/i;

function refuseOverLimit(c: Context, decision: RateDecision, message: string): never {
  c.header('Retry-After', String(decision.resetSeconds));
  throw new ApiError('RATE_LIMITED', message);
}

/**
 * Failed authentications per client address, AUTH_FAILURES_PER_MINUTE in each minute of the clock:
 * an address over the limit is refused with 429 for the rest of the minute before any secret is
 * compared or looked up, so secrets cannot be guessed or the database flooded for free.
 */
export function failedAuthThrottle(deps: Pick<AppDeps, 'config'>, secret: string) {
  const failures = new RateLimiter<string>(60_000);
  const perMinute = deps.config.authFailuresPerMinute;
  return {
    /** Refuses an address over the limit; answers the address, to count a failure against. */
    admit(c: Context): string {
      const client = getConnInfo(c).remote.address ?? 'unknown';
      const standing = failures.peek(client, perMinute);
      if (!standing.allowed) refuseOverLimit(c, standing, `Too many requests with a missing or invalid ${secret} from ${client}; retry after ${standing.resetSeconds} s`);
      return client;
    },
    failed(client: string): void {
      failures.take(client, perMinute);
    },
  };
}

/**
 * Resolves the bearer token to its team and key, then charges the team's rate limit. Failed
 * authentications are throttled per client address (failedAuthThrottle). A call the key turns out
 * not to be allowed (403) gives its place in the team's limit back.
 */
export function authMiddleware(deps: AppDeps): MiddlewareHandler<{ Variables: { auth: AuthContext } }> {
  const throttle = failedAuthThrottle(deps, 'API key');
  return async (c, next) => {
    const client = throttle.admit(c);
    const match = BEARER.exec(c.req.header('authorization')?.trim() ?? '');
    const auth = match ? await authenticate(deps, match[1]!, client) : null;
    if (!auth) {
      throttle.failed(client);
      throw new ApiError('UNAUTHORIZED', match ? 'Invalid API key' : 'Missing or malformed Authorization header: expected "Bearer <api key>"');
    }
    c.set('auth', auth);

    const decision = await deps.rateLimiter.take(auth.teamId, auth.rateLimitPerSecond ?? deps.config.rateLimitPerSecond);
    c.header('X-RateLimit-Limit', String(decision.limit));
    c.header('X-RateLimit-Remaining', String(decision.remaining));
    c.header('X-RateLimit-Reset', String(decision.resetSeconds));
    if (!decision.allowed) refuseOverLimit(c, decision, `Rate limit of ${decision.limit} requests per second exceeded; retry after ${decision.resetSeconds} s`);
    await next();
    if (c.res.status === 403) deps.rateLimiter.refund(auth.teamId);
  };
}
