/** How long an address that failed too often is refused. */
export const BLOCK_MS = 10 * 60_000;
// Failures count within a minute, like the HTTP API's AUTH_FAILURES_PER_MINUTE.
const WINDOW_MS = 60_000;
// Each failure after the first answers this much later than the one before, up to the cap: a
// client with a typo loses nothing, a guesser on one connection gets a handful of tries a minute.
const STEP_MS = 250;
const MAX_DELAY_MS = 3_000;
// Addresses remembered at most; the oldest window is forgotten first.
const MAX_ADDRESSES = 10_000;

type Standing = { windowStart: number; failures: number; blockedUntil: number };

/**
 * Failed AUTH attempts per client address on the submission listeners: each failure answers a
 * little later than the last, and `limit` of them within a minute refuse the address (every
 * connection and AUTH) for BLOCK_MS. Kept in this process's memory.
 */
export class AuthThrottle {
  private readonly standings = new Map<string, Standing>();

  constructor(
    private readonly limit: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Until when the address is refused, or null when it is not. */
  blockedUntil(address: string): number | null {
    const standing = this.standings.get(address);
    return standing && standing.blockedUntil > this.now() ? standing.blockedUntil : null;
  }

  /** Counts a failure; answers how long to wait before the reply says so. */
  fail(address: string): number {
    const now = this.now();
    let standing = this.standings.get(address);
    if (!standing || now - standing.windowStart >= WINDOW_MS) {
      standing = { windowStart: now, failures: 0, blockedUntil: standing?.blockedUntil ?? 0 };
      this.standings.delete(address);
      this.standings.set(address, standing);
      if (this.standings.size > MAX_ADDRESSES) this.forgetOldest();
    }
    standing.failures++;
    if (standing.failures >= this.limit) standing.blockedUntil = now + BLOCK_MS;
    return Math.min(MAX_DELAY_MS, (standing.failures - 1) * STEP_MS);
  }

  private forgetOldest(): void {
    const now = this.now();
    for (const [address, standing] of this.standings) {
      if (this.standings.size <= MAX_ADDRESSES) return;
      if (standing.blockedUntil <= now) this.standings.delete(address);
    }
  }
}
