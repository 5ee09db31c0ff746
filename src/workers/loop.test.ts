import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startWorkerLoop, type WorkerLoop, type WorkerLoopOptions } from './loop.js';
import { Signals } from './signals.js';

const POLL_MS = 1_000;

/** Every pass of the test that has not ended yet: ended after it, so that its stop can drain. */
const unfinished = new Set<() => void>();

/** Passes that end when the test says so, recording how many ran and how many ran at once. */
function controlledPasses() {
  const ends: { finish(more?: boolean): void; fail(error: Error): void; stopping: AbortSignal }[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const pass: WorkerLoopOptions['pass'] = (stopping) => {
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    return new Promise<boolean>((resolve, reject) => {
      const end = (settle: () => void) => {
        unfinished.delete(abandon);
        running--;
        settle();
      };
      const abandon = () => end(() => resolve(false));
      unfinished.add(abandon);
      ends.push({ finish: (more = false) => end(() => resolve(more)), fail: (error) => end(() => reject(error)), stopping });
    });
  };
  return { pass, ends, mostAtOnce: () => mostAtOnce };
}

/** Lets the loop's promise callbacks and due timers run. */
const settle = (ms = 0) => vi.advanceTimersByTimeAsync(ms);

let loop: WorkerLoop | undefined;
const errors: unknown[] = [];

function start(options: Partial<WorkerLoopOptions> & Pick<WorkerLoopOptions, 'pass'>): WorkerLoop {
  loop = startWorkerLoop({ pollMs: POLL_MS, onError: (error) => errors.push(error), ...options });
  return loop;
}

beforeEach(() => {
  vi.useFakeTimers();
  errors.length = 0;
});
afterEach(async () => {
  const stopping = loop?.stop();
  loop = undefined;
  for (const abandon of unfinished) abandon();
  await stopping;
  vi.useRealTimers();
});

describe('the worker loop', () => {
  it('runs a pass at start, then one pollMs after each pass ends', async () => {
    const { pass, ends } = controlledPasses();
    start({ pass });
    await settle();
    expect(ends).toHaveLength(1);
    await settle(5 * POLL_MS);
    expect(ends, 'no pass while one is under way').toHaveLength(1);
    ends[0]!.finish();
    await settle(POLL_MS - 1);
    expect(ends).toHaveLength(1);
    await settle(1);
    expect(ends).toHaveLength(2);
  });

  it('a wake runs a pass at once; wakes during a pass run one more right after it, never two at once', async () => {
    const { pass, ends, mostAtOnce } = controlledPasses();
    const worker = start({ pass });
    await settle();
    ends[0]!.finish();
    await settle();
    worker.wake();
    await settle();
    expect(ends, 'woken before the poll').toHaveLength(2);
    worker.wake();
    worker.wake();
    await settle();
    expect(ends).toHaveLength(2);
    ends[1]!.finish();
    await settle();
    expect(ends).toHaveLength(3);
    ends[2]!.finish();
    await settle(POLL_MS / 2);
    expect(ends, 'the wakes were one more pass, not two').toHaveLength(3);
    expect(mostAtOnce()).toBe(1);
  });

  it('a pass that finds more due is followed at once, without waiting for the poll', async () => {
    const { pass, ends } = controlledPasses();
    start({ pass });
    await settle();
    ends[0]!.finish(true);
    await settle();
    expect(ends).toHaveLength(2);
  });

  it('a signal named in wakeOn makes a pass due, until the loop stops', async () => {
    const { pass, ends } = controlledPasses();
    const signals = new Signals();
    const worker = start({ pass, wakeOn: { signals, names: ['emailsDue'] } });
    await settle();
    ends[0]!.finish();
    await settle();
    signals.emit('webhookCallsDue');
    await settle();
    expect(ends, 'another signal wakes nothing').toHaveLength(1);
    signals.emit('emailsDue');
    await settle();
    expect(ends).toHaveLength(2);
    ends[1]!.finish();
    await worker.stop();
    signals.emit('emailsDue');
    await settle(5 * POLL_MS);
    expect(ends).toHaveLength(2);
  });

  it('holdBack keeps a due pass waiting until its time is up', async () => {
    const { pass, ends } = controlledPasses();
    let holdUntil = 0;
    const worker = start({ pass, holdBack: () => holdUntil - Date.now() });
    await settle();
    ends[0]!.finish();
    await settle();
    holdUntil = Date.now() + 300;
    worker.wake();
    await settle(299);
    expect(ends).toHaveLength(1);
    await settle(1);
    expect(ends).toHaveLength(2);
  });

  it('a pass that throws is reported, and the next pass comes as usual', async () => {
    const { pass, ends } = controlledPasses();
    start({ pass });
    await settle();
    ends[0]!.fail(new Error('database down'));
    await settle(POLL_MS);
    expect(errors).toEqual([new Error('database down')]);
    expect(ends).toHaveLength(2);
  });

  it('stop starts no new pass and waits for the pass under way and the work it left running', async () => {
    const { pass, ends } = controlledPasses();
    const worker = start({ pass });
    await settle();
    let finishWork!: () => void;
    void worker.track(new Promise<void>((resolve) => (finishWork = resolve)));
    expect(worker.busy).toBe(1);

    let stopped = false;
    const stopping = worker.stop().then(() => (stopped = true));
    expect(ends[0]!.stopping.aborted, 'the pass under way is told').toBe(true);
    worker.wake();
    await settle(5 * POLL_MS);
    expect(stopped).toBe(false);
    ends[0]!.finish(true);
    await settle();
    expect(stopped, 'the tracked work still runs').toBe(false);
    finishWork();
    await stopping;
    expect(worker.busy).toBe(0);
    expect(ends, 'no pass after the stop, whatever was due').toHaveLength(1);
  });

  it('without start it runs passes only when asked, each after the one under way', async () => {
    const { pass, ends } = controlledPasses();
    const worker = start({ pass, start: false, wakeOn: { signals: new Signals(), names: ['emailsDue'] } });
    await settle(5 * POLL_MS);
    worker.wake();
    await settle();
    expect(ends).toHaveLength(0);
    const first = worker.runNow();
    const second = worker.runNow();
    await settle();
    expect(ends).toHaveLength(1);
    ends[0]!.finish();
    await first;
    await settle();
    expect(ends).toHaveLength(2);
    ends[1]!.finish();
    await second;
    await settle(5 * POLL_MS);
    expect(ends).toHaveLength(2);
  });
});
