export type RateDecision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

/**
 * Fixed windows per key (a team, a client address), kept in this process's memory. Each API node
 * enforces the limit on its own share of the traffic.
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
      resetSeconds: Math.max(1, Math.ceil(((window + 1) * this.windowMs - ms) / 1000)),
    };
  }

  private forgetOld(window: number) {
    for (const [key, entry] of this.windows) if (entry.window !== window) this.windows.delete(key);
  }
}
