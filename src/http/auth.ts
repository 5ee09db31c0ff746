import type { MiddlewareHandler } from 'hono';
import { authenticate, type AuthContext } from '../services/api-keys.js';
import { ApiError } from '../errors.js';
import type { AppDeps } from './deps.js';

export type { AuthContext };

// The scheme is case-insensitive and may be followed by several spaces (RFC 9110 §11.4).
const BEARER = /^Bearer +([\x21-\x7e]{1,512})$/i;

/** Resolves the bearer token to its team and key, then charges the team's rate limit. */
export function authMiddleware(deps: AppDeps): MiddlewareHandler<{ Variables: { auth: AuthContext } }> {
  return async (c, next) => {
    const match = BEARER.exec(c.req.header('authorization')?.trim() ?? '');
    if (!match) throw new ApiError('UNAUTHORIZED', 'Missing or malformed Authorization header: expected "Bearer <api key>"');
    const auth = await authenticate(deps, match[1]!);
    if (!auth) throw new ApiError('UNAUTHORIZED', 'Invalid API key');
    c.set('auth', auth);

    const decision = deps.rateLimiter.take(auth.teamId, auth.rateLimitPerSecond ?? deps.config.rateLimitPerSecond);
    c.header('X-RateLimit-Limit', String(decision.limit));
    c.header('X-RateLimit-Remaining', String(decision.remaining));
    c.header('X-RateLimit-Reset', String(decision.resetSeconds));
    if (!decision.allowed) {
      c.header('Retry-After', String(decision.resetSeconds));
      throw new ApiError('RATE_LIMITED', `Rate limit of ${decision.limit} requests per second exceeded; retry after ${decision.resetSeconds} s`);
    }
    await next();
  };
}
