/**
 * `load`, asked again only once its last answer is `ttlMs` old: callers within that time share the
 * last answer, or the question still under way. For reads a probe or a scraper may repeat as often
 * as it likes, which must not load what they read.
 */
export function reuseFor<T>(ttlMs: number, load: () => Promise<T>): () => Promise<T> {
  let last: { at: number; answer: Promise<T> } | null = null;
  return () => {
    if (!last || Date.now() - last.at >= ttlMs) last = { at: Date.now(), answer: load() };
    return last.answer;
  };
}

export type AnswerCacheOptions<V> = {
  /** At most this many answers are kept; past it, the one asked for least lately goes. */
  maxEntries: number;
  /** An answer is asked again once it is this old; without it, an answer stands until evicted or forgotten. */
  ttlMs?: number;
  /** Whether an answer is worth keeping (a key found, a domain verified); a promise is judged by what it resolves to. */
  keep?: (value: Awaited<V>) => boolean;
  /** How long this answer stays fresh (a DNS answer's TTL), instead of `ttlMs`; a promise's once it resolves. */
  ttlOf?: (value: Awaited<V>) => number;
};

type Entry<V> = { value: V; at: number; ttlMs?: number };

/**
 * The process's one cache: answers by key, each loaded once and reused while fresh. An answer that
 * is a promise is shared while it is under way, so callers asking at once cause one load; one that
 * rejects is dropped, so the next caller loads again. Forgetting an answer still under way also
 * keeps it from being kept when it arrives.
 */
export class AnswerCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>();

  constructor(private readonly options: AnswerCacheOptions<V>) {}

  get(key: K, load: () => V): V {
    const hit = this.entries.get(key);
    this.entries.delete(key);
    const ttlMs = hit?.ttlMs ?? this.options.ttlMs;
    if (hit && (ttlMs === undefined || Date.now() - hit.at < ttlMs)) {
      // Put back last: the Map's order is then the order of use, its first key the least used.
      this.entries.set(key, hit);
      return hit.value;
    }
    const entry: Entry<V> = { value: load(), at: Date.now() };
    this.entries.set(key, entry);
    if (this.entries.size > this.options.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    const drop = () => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    };
    const { keep, ttlOf } = this.options;
    const settle = (value: Awaited<V>) => {
      if (ttlOf) entry.ttlMs = ttlOf(value);
      if (keep && !keep(value)) drop();
    };
    if (entry.value instanceof Promise) (entry.value as Promise<Awaited<V>>).then(settle, drop);
    else settle(entry.value as Awaited<V>);
    return entry.value;
  }

  forget(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}
