import type { Deps } from '../deps.js';
import type { TeamRateLimiter } from './rate-limit.js';

export type AppDeps = Deps & { rateLimiter: TeamRateLimiter };
