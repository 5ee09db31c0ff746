import { AnswerCache } from '../reuse-for.js';

/** How long another process's change (a key revoked, a domain deleted) may go unseen: a second. */
export const RECENT_READ_TTL_MS = 1_000;

/**
 * What this process read from the database moments ago, kept for at most RECENT_READ_TTL_MS: the
 * longest a change made by another process goes unseen here. A change made by this process forgets
 * them at once (`clear`). Only answers worth keeping are kept (`keep`): a key found, a domain
 * verified; a miss is read again every time, so what was just created or verified is seen at once.
 */
export function recentReads<V>(keep: (value: V) => boolean): AnswerCache<string, Promise<V>> {
  return new AnswerCache<string, Promise<V>>({ ttlMs: RECENT_READ_TTL_MS, maxEntries: 10_000, keep });
}
