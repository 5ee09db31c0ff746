export type RateDecision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

/**
 * A team's requests per second, as the entrances (HTTP, SMTP submission) charge them: answered at
 * once from memory, or after a trip to the database when the limit is shared (shared-rate-limit.ts).
 */
export type TeamRateLimiter = {
  take(teamId: number, limit: number): RateDecision | Promise<RateDecision>;
  /** Gives back one request counted in the current window (one that turned out not to count). */
  refund(teamId: number): void;
};

/** Whole seconds until the window `window` (of `windowMs`) ends, at least 1: what Retry-After says. */
export const secondsToReset = (window: number, windowMs: number, ms: number) => Math.max(1, Math.ceil(((window + 1) * windowMs - ms) / 1000));

/**
 * Fixed windows per key (a team, a client address), kept in this process's memory: exact where one
 * process holds the database (PGlite), and the per-address throttle of failed authentications.
 */
export class RateLimiter<K = number> {
  private readonly windows = new Map<K, { window: number; count: number }>();

  constructor(
    private readonly windowMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request against `limit` when it is within it. */
  take(key: K, limit: number): RateDecision {
    return this.decide(key, limit, true);
  }

  /** What `take` would answer, counting nothing. */
  peek(key: K, limit: number): RateDecision {
    return this.decide(key, limit, false);
  }

  /** Gives back one request counted in the current window (one that turned out not to count). */
  refund(key: K): void {
    const entry = this.windows.get(key);
    if (entry && entry.window === Math.floor(this.now() / this.windowMs) && entry.count > 0) entry.count--;
  }

  private decide(key: K, limit: number, count: boolean): RateDecision {
    const ms = this.now();
    const window = Math.floor(ms / this.windowMs);
    let entry = this.windows.get(key);
    if (!entry || entry.window !== window) {
      entry = { window, count: 0 };
      this.windows.set(key, entry);
      if (this.windows.size > 10_000) this.forgetOld(window);
    }
    const allowed = entry.count < limit;
    if (allowed && count) entry.count++;
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - entry.count),
      resetSeconds: secondsToReset(window, this.windowMs, ms),
    };
  }

  private forgetOld(window: number) {
    for (const [key, entry] of this.windows) if (entry.window !== window) this.windows.delete(key);
  }
}
