/** How long a key (an address, an account) that failed too often is refused. */
export const BLOCK_MS = 10 * 60_000;
// Failures count within a minute, like the HTTP API's AUTH_FAILURES_PER_MINUTE.
const WINDOW_MS = 60_000;
// Each failure after the first answers this much later than the one before, up to the cap: a
// client with a typo loses nothing, a guesser on one connection gets a handful of tries a minute.
const STEP_MS = 250;
const MAX_DELAY_MS = 3_000;
// Keys remembered at most; the oldest window is forgotten first.
const MAX_ADDRESSES = 10_000;

type Standing = { windowStart: number; failures: number; blockedUntil: number };

/** An attempt counted by `reserve`: how long its failure waits before answering, or its count given back. */
export type Reservation = { delay: number; giveBack(): void };

/**
 * Failed sign-ins per key (a client address, an account): each failure answers a little later
 * than the last, and `limit` of them within a minute refuse the key for BLOCK_MS. Shared by the
 * dashboard's sign-in and SMTP submission's AUTH; kept in this process's memory.
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

  /**
   * Counts an attempt as failed for every key before its outcome is known, so attempts running at
   * once see each other and no more than `limit` of them are ever checked; or, counting nothing,
   * until when one of the keys is refused. An attempt that turns out not to have failed (the
   * right password, or never checked) gives its count back, lifting the block it caused.
   */
  reserve(keys: readonly string[]): Reservation | { blockedUntil: number } {
    const blockedUntil = keys.map((key) => this.blockedUntil(key)).find((until) => until !== null);
    if (blockedUntil) return { blockedUntil };
    const at = this.now();
    const delay = Math.max(...keys.map((key) => this.fail(key)));
    return { delay, giveBack: () => keys.forEach((key) => this.uncount(key, at)) };
  }

  private uncount(key: string, reservedAt: number): void {
    const standing = this.standings.get(key);
    // A window begun since the reservation (or the key forgotten meanwhile) does not hold its count.
    if (!standing || standing.windowStart > reservedAt || standing.failures === 0) return;
    if (standing.failures-- === this.limit) standing.blockedUntil = 0;
  }

  private forgetOldest(): void {
    const now = this.now();
    for (const [address, standing] of this.standings) {
      if (this.standings.size <= MAX_ADDRESSES) return;
      if (standing.blockedUntil <= now) this.standings.delete(address);
    }
  }
}
