import type { Deps } from '../deps.js';
import type { RateLimiter } from './rate-limit.js';

export type AppDeps = Deps & { rateLimiter: RateLimiter };
