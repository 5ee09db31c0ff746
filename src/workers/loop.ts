import type { SignalName, Signals } from './signals.js';

export type WorkerLoopOptions = {
  /**
   * One pass over the work due: claim, act, record. Answers true when more may be due at once (a
   * full batch): the next pass then starts without waiting for the poll. `stopping` is aborted
   * when the loop stops, for a pass that can end early.
   */
  pass: (stopping: AbortSignal) => Promise<boolean | void>;
  /** How long after a pass the next one runs when nothing wakes the loop sooner. */
  pollMs: number;
  /** A pass that throws is reported here; the loop goes on with the next. */
  onError: (error: unknown) => void;
  /** Signals that make a pass due now (work of this process's making). */
  wakeOn?: { signals: Pick<Signals, 'on'>; names: SignalName[] };
  /**
   * How much longer a pass that is due must wait, asked each time one is (0 or less: none): for a
   * worker that spaces its passes. The pass then runs when that time is up.
   */
  holdBack?: () => number;
  /** false: no pass of its own, no polling, no signals; passes run only when `runNow` asks (tests, benchmarks). */
  start?: boolean;
};

export type WorkerLoop = {
  /** Makes a pass due now; one under way is followed by another as soon as it ends. */
  wake(): void;
  /** Waits for the pass under way, if any, then runs one; resolves when it has ended. */
  runNow(): Promise<void>;
  /**
   * Work a pass started and left running (a batch being sent, a call being made), which stop
   * waits for too. It handles its own errors. Answers the work, settled once it is no longer counted.
   */
  track<T>(work: Promise<T>): Promise<T>;
  /** The tracked work still running. */
  readonly busy: number;
  /** Aborted once stop was called: work a pass left running can give back what it has not begun. */
  readonly stopping: AbortSignal;
  /** Starts no pass any more, then waits for the pass under way and the work tracked (the drain). */
  stop(): Promise<void>;
};

/**
 * The one loop of every worker: a pass at start, then one `pollMs` after each pass ends; a wake (a
 * signal, a finished batch) makes one due at once. One pass at a time: a wake during a pass runs
 * another right after it, so no wake is lost and none is run twice over. Stopping starts nothing
 * new and drains what is under way; how long a drain may take is the process's to bound
 * (SHUTDOWN_TIMEOUT_MS in main.ts).
 */
export function startWorkerLoop(options: WorkerLoopOptions): WorkerLoop {
  const stopping = new AbortController();
  const tracked = new Set<Promise<unknown>>();
  const polling = options.start !== false;
  let running: Promise<void> | null = null;
  let wokenDuringPass = false;
  let timer: NodeJS.Timeout | undefined;

  const after = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(due, ms);
  };

  async function runPass(): Promise<void> {
    let more = false;
    try {
      more = (await options.pass(stopping.signal)) === true;
    } catch (error) {
      options.onError(error);
    }
    running = null;
    if (stopping.signal.aborted || !polling) return;
    if (more || wokenDuringPass) {
      wokenDuringPass = false;
      due();
    } else {
      after(options.pollMs);
    }
  }

  function due(): void {
    if (stopping.signal.aborted || !polling) return;
    if (running) {
      wokenDuringPass = true;
      return;
    }
    const wait = options.holdBack?.() ?? 0;
    if (wait > 0) return after(wait);
    clearTimeout(timer);
    running = runPass();
  }

  const unsubscribe = polling ? (options.wakeOn?.names ?? []).map((name) => options.wakeOn!.signals.on(name, due)) : [];
  // The first pass starts once the worker that made the loop has it in hand (its pass may use it).
  if (polling) queueMicrotask(due);

  return {
    wake: due,
    async runNow() {
      while (running) await running;
      if (stopping.signal.aborted) return;
      running = runPass();
      await running;
    },
    track(work) {
      tracked.add(work);
      const untracked = work.finally(() => tracked.delete(work));
      // Handled by whoever awaits the work; here only its end counts.
      untracked.catch(() => undefined);
      return untracked;
    },
    get busy() {
      return tracked.size;
    },
    stopping: stopping.signal,
    async stop() {
      stopping.abort();
      for (const off of unsubscribe) off();
      clearTimeout(timer);
      while (running || tracked.size > 0) await Promise.allSettled([running, ...tracked]);
    },
  };
}
