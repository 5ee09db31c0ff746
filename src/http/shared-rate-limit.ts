import { leaseRateLimitSlice } from '../data/rate-limit-windows.js';
import type { Deps } from '../deps.js';
import { FixedWindows, RateLimiter, secondsToReset, type RateDecision, type TeamRateLimiter } from './rate-limit.js';

const WINDOW_MS = 1000;

/**
 * How much of a team's per-second limit one lease takes. A process holds at most one slice it may
 * not get to use before the window ends, so with P processes a window lets through at least
 * limit − P × slice when every process had more demand than it could serve: within 10 % up to five
 * processes at 2 % (and exact when each process keeps getting requests, as each then uses what it
 * leased). A team pays at most about 50 leases a window however busy it is, one per 50 requests at
 * its limit.
 */
export const sliceOf = (limit: number) => Math.max(1, Math.floor(limit / 50));

/** This process's part of one team's current window. */
type Window = {
  /** Window number: milliseconds since the epoch over WINDOW_MS, on this process's clock. */
  number: number;
  /** Leased by this process in this window, and used of that. */
  leased: number;
  used: number;
  /** How much of the window's budget all processes had leased at this process's last lease. */
  global: number;
  /** The lease in flight: requests that find the slice used up wait for it, not for leases of their own. */
  leasing: Promise<void> | null;
  /** A lease failed: until the window ends this process counts the whole limit alone. */
  alone: boolean;
};

/**
 * The team limit shared by every process of a PostgreSQL database. A process leases a slice of
 * the team's budget for the current second from rate_limit_windows and serves requests from it
 * in memory, leasing again when it runs out, until the window's budget is spent; a refused request
 * then costs no round trip either.
 *
 * X-RateLimit-Remaining is the window's budget less what the other processes had leased at this
 * one's last lease, less what this one used: exact for one process, and with several off by at most
 * what the others did since, which a busy window keeps to about a slice each.
 *
 * When a lease fails, the request is not failed with it: that team's window is counted by this
 * process alone, against the whole limit (as each process did before the limit was shared), the
 * first failure is logged, and the team's next window asks the database again. A database that
 * keeps failing thus lets a team through up to once per process, rather than refusing everything.
 */
export class SharedRateLimiter implements TeamRateLimiter {
  private readonly windows = new FixedWindows<number, Window>(WINDOW_MS, (number) => ({ number, leased: 0, used: 0, global: 0, leasing: null, alone: false }));
  private failing = false;

  constructor(
    private readonly deps: Pick<Deps, 'db' | 'log'>,
    private readonly now: () => number = Date.now,
  ) {}

  take(teamId: number, limit: number): RateDecision | Promise<RateDecision> {
    const ms = this.now();
    const window = this.windows.current(teamId, ms);
    if (window.used < (window.alone ? limit : window.leased)) {
      window.used++;
      return this.decision(window, limit, true, ms);
    }
    if (window.alone || window.global >= limit) return this.decision(window, limit, false, ms);
    window.leasing ??= this.lease(teamId, window, limit);
    return window.leasing.then(() => this.take(teamId, limit));
  }

  refund(teamId: number): void {
    const window = this.windows.ifCurrent(teamId, this.now());
    if (window && window.used > 0) window.used--;
  }

  private decision(window: Window, limit: number, allowed: boolean, ms: number): RateDecision {
    const left = window.alone ? limit - window.used : limit - window.global + window.leased - window.used;
    return { allowed, limit, remaining: Math.min(limit, Math.max(0, left)), resetSeconds: secondsToReset(window.number, WINDOW_MS, ms) };
  }

  private async lease(teamId: number, window: Window, limit: number): Promise<void> {
    try {
      const windowStart = new Date(window.number * WINDOW_MS);
      const { granted, leased } = await leaseRateLimitSlice(this.deps.db, { teamId, windowStart, want: sliceOf(limit), limit });
      window.leased += granted;
      window.global = leased;
      if (this.failing) {
        this.failing = false;
        this.deps.log.info('the shared rate limit answers again: teams are limited across all processes');
      }
    } catch (error) {
      window.alone = true;
      if (!this.failing) {
        this.failing = true;
        this.deps.log.error('leasing from the shared rate limit failed: each process counts the team limits alone until the database answers', { error });
      }
    } finally {
      window.leasing = null;
    }
  }
}

/**
 * The team limiter for this database: shared on PostgreSQL, where any number of API processes may
 * serve one team; in memory on PGlite, whose one process sees every request and needs no trip to
 * the database to count them. `now` is for tests, which move the clock themselves.
 */
export function teamRateLimiter(deps: Pick<Deps, 'db' | 'dbKind' | 'log'>, now: () => number = Date.now): TeamRateLimiter {
  return deps.dbKind === 'postgres' ? new SharedRateLimiter(deps, now) : new RateLimiter(WINDOW_MS, now);
}
