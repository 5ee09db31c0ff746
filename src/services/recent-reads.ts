/**
 * What this process read from the database moments ago, kept for at most `ttlMs`: the longest a
 * change made by another process goes unseen here. A change made by this process forgets them at
 * once (`clear`). Only answers worth keeping are kept (`keep`): a key found, a domain verified; a
 * miss is read again every time, so what was just created or verified is seen at once.
 */
export class RecentReads<K, V> {
  private readonly entries = new Map<K, { value: V; at: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly keep: (value: V) => boolean,
    private readonly maxEntries = 10_000,
  ) {}

  async get(key: K, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.value;
    const at = Date.now();
    const value = await load();
    if (!this.keep(value)) {
      this.entries.delete(key);
      return value;
    }
    // A flood of distinct keys starts the cache afresh rather than growing it without bound.
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, at });
    return value;
  }

  clear(): void {
    this.entries.clear();
  }
}

/**
 * One of `make` per database handle, so that services of several databases in one process never
 * share; made from the handle (and what else `make` takes) on the first call for it.
 */
export function perDatabase<D extends object, A extends unknown[], T>(make: (db: D, ...rest: A) => T): (db: D, ...rest: A) => T {
  const all = new WeakMap<D, T>();
  return (db, ...rest) => {
    let found = all.get(db);
    if (!found) {
      found = make(db, ...rest);
      all.set(db, found);
    }
    return found;
  };
}

/** How long another process's change (a key revoked, a domain deleted) may go unseen: a second. */
export const RECENT_READ_TTL_MS = 1_000;
