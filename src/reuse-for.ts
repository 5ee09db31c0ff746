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
