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
 * Each key's state in the current fixed window (numbered from the epoch), begun afresh by `fresh`
 * when the key's next window starts. Past a number of keys, those whose window has ended are
 * forgotten, so a flood of keys cannot grow it without bound.
 */
export class FixedWindows<K, W extends { number: number }> {
  private readonly windows = new Map<K, W>();

  constructor(
    readonly windowMs: number,
    private readonly fresh: (number: number) => W,
    private readonly forgetAbove = 10_000,
  ) {}

  numberAt(ms: number): number {
    return Math.floor(ms / this.windowMs);
  }

  current(key: K, ms: number): W {
    const number = this.numberAt(ms);
    let window = this.windows.get(key);
    if (!window || window.number !== number) {
      window = this.fresh(number);
      this.windows.set(key, window);
      if (this.windows.size > this.forgetAbove) {
        for (const [other, state] of this.windows) if (state.number !== number) this.windows.delete(other);
      }
    }
    return window;
  }

  /** The key's state when its window is the one at `ms`; nothing when that has not begun. */
  ifCurrent(key: K, ms: number): W | undefined {
    const window = this.windows.get(key);
    return window?.number === this.numberAt(ms) ? window : undefined;
  }
}

/**
 * Fixed windows per key (a team, a client address), kept in this process's memory: exact where one
 * process holds the database (PGlite), and the per-address throttle of failed authentications.
 */
export class RateLimiter<K = number> {
  private readonly windows: FixedWindows<K, { number: number; count: number }>;

  constructor(
    windowMs = 1000,
    private readonly now: () => number = Date.now,
  ) {
    this.windows = new FixedWindows(windowMs, (number) => ({ number, count: 0 }));
  }

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
    const entry = this.windows.ifCurrent(key, this.now());
    if (entry && entry.count > 0) entry.count--;
  }

  private decide(key: K, limit: number, count: boolean): RateDecision {
    const ms = this.now();
    const entry = this.windows.current(key, ms);
    const allowed = entry.count < limit;
    if (allowed && count) entry.count++;
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - entry.count),
      resetSeconds: secondsToReset(entry.number, this.windows.windowMs, ms),
    };
  }
}
