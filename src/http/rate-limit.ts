export type RateDecision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

/**
 * Fixed one-second windows per team, kept in this process's memory. Each API node enforces the
 * limit on its own share of the traffic, which is what a per-second burst guard needs.
 */
export class RateLimiter {
  private readonly windows = new Map<number, { second: number; count: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  take(teamId: number, limit: number): RateDecision {
    const ms = this.now();
    const second = Math.floor(ms / 1000);
    let window = this.windows.get(teamId);
    if (!window || window.second !== second) {
      window = { second, count: 0 };
      this.windows.set(teamId, window);
      if (this.windows.size > 10_000) this.forgetOld(second);
    }
    const allowed = window.count < limit;
    if (allowed) window.count++;
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - window.count),
      resetSeconds: Math.max(1, Math.ceil(((second + 1) * 1000 - ms) / 1000)),
    };
  }

  private forgetOld(second: number) {
    for (const [team, window] of this.windows) if (window.second !== second) this.windows.delete(team);
  }
}
