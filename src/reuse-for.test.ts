import { afterEach, describe, expect, it, vi } from 'vitest';
import { AnswerCache } from './reuse-for.js';

/** A load that counts its calls and answers what it is told, when it is told. */
function pendingLoads<V>() {
  const waiting: { resolve(value: V): void; reject(error: Error): void }[] = [];
  const load = () => new Promise<V>((resolve, reject) => waiting.push({ resolve, reject }));
  return { load, waiting };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('AnswerCache', () => {
  it('callers asking at once share one load, and the answer is reused while fresh', async () => {
    const cache = new AnswerCache<string, Promise<string>>({ maxEntries: 10, ttlMs: 1_000 });
    const { load, waiting } = pendingLoads<string>();
    const first = cache.get('k', load);
    const second = cache.get('k', load);
    expect(waiting).toHaveLength(1);
    waiting[0]!.resolve('answer');
    expect(await Promise.all([first, second])).toEqual(['answer', 'answer']);
    expect(await cache.get('k', load)).toBe('answer');
    expect(waiting).toHaveLength(1);
  });

  it('an answer as old as ttlMs is loaded again', () => {
    vi.useFakeTimers();
    const cache = new AnswerCache<string, number>({ maxEntries: 10, ttlMs: 1_000 });
    let loads = 0;
    const load = () => ++loads;
    expect(cache.get('k', load)).toBe(1);
    vi.advanceTimersByTime(999);
    expect(cache.get('k', load)).toBe(1);
    vi.advanceTimersByTime(1);
    expect(cache.get('k', load)).toBe(2);
  });

  it('without ttlMs an answer stands until it is forgotten', () => {
    vi.useFakeTimers();
    const cache = new AnswerCache<string, number>({ maxEntries: 10 });
    let loads = 0;
    const load = () => ++loads;
    cache.get('k', load);
    vi.advanceTimersByTime(86_400_000);
    expect(cache.get('k', load)).toBe(1);
    cache.forget('k');
    expect(cache.get('k', load)).toBe(2);
    cache.clear();
    expect(cache.get('k', load)).toBe(3);
  });

  it('an answer not worth keeping is loaded again every time', async () => {
    const cache = new AnswerCache<string, Promise<string | undefined>>({ maxEntries: 10, ttlMs: 60_000, keep: (value) => value !== undefined });
    let loads = 0;
    const miss = async () => {
      loads++;
      return undefined;
    };
    await cache.get('k', miss);
    await cache.get('k', miss);
    expect(loads).toBe(2);
    await cache.get('k', async () => 'found');
    expect(await cache.get('k', miss)).toBe('found');
  });

  it('a load that fails is not kept: the next caller loads again', async () => {
    const cache = new AnswerCache<string, Promise<string>>({ maxEntries: 10 });
    const { load, waiting } = pendingLoads<string>();
    const failed = cache.get('k', load);
    waiting[0]!.reject(new Error('database down'));
    await expect(failed).rejects.toThrow('database down');
    const retried = cache.get('k', load);
    expect(waiting).toHaveLength(2);
    waiting[1]!.resolve('back');
    expect(await retried).toBe('back');
  });

  it('an answer forgotten while it was loading is not kept when it arrives', async () => {
    const cache = new AnswerCache<string, Promise<string>>({ maxEntries: 10 });
    const { load, waiting } = pendingLoads<string>();
    const before = cache.get('k', load);
    cache.clear();
    waiting[0]!.resolve('read before the change');
    expect(await before).toBe('read before the change');
    const after = cache.get('k', load);
    expect(waiting).toHaveLength(2);
    waiting[1]!.resolve('read after the change');
    expect(await after).toBe('read after the change');
  });

  it('past maxEntries the answer used least lately goes first', () => {
    const cache = new AnswerCache<string, string>({ maxEntries: 2 });
    const loaded: string[] = [];
    const load = (key: string) => () => {
      loaded.push(key);
      return key;
    };
    cache.get('a', load('a'));
    cache.get('b', load('b'));
    cache.get('a', load('a'));
    cache.get('c', load('c'));
    cache.get('a', load('a'));
    expect(loaded).toEqual(['a', 'b', 'c']);
    cache.get('b', load('b'));
    expect(loaded).toEqual(['a', 'b', 'c', 'b']);
  });

  it('an answer that names its own lifetime (a DNS TTL) is fresh for that long, whatever ttlMs says', async () => {
    vi.useFakeTimers();
    const cache = new AnswerCache<string, Promise<{ ttlMs: number }>>({ maxEntries: 10, ttlMs: 60_000, ttlOf: (answer) => answer.ttlMs });
    let loads = 0;
    const load = (ttlMs: number) => () => {
      loads++;
      return Promise.resolve({ ttlMs });
    };
    await cache.get('short', load(5_000));
    await cache.get('long', load(120_000));
    vi.advanceTimersByTime(4_999);
    await cache.get('short', load(5_000));
    expect(loads).toBe(2);
    vi.advanceTimersByTime(1);
    await cache.get('short', load(5_000));
    expect(loads).toBe(3);
    vi.advanceTimersByTime(100_000);
    await cache.get('long', load(120_000));
    expect(loads).toBe(3);
  });
});
