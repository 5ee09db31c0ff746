import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { beat, CLAIM_SEPARATOR, forgetWorkers, markStopped, releaseEveryClaim, silentWorkers } from '../data/workers.js';
import type { DatabaseKind, Db } from '../db/connection.js';
import type { Logger } from '../log.js';

/** What a worker needs to claim work: tokens that name it, and whose claims it may take over. */
export type Claims = {
  /** A new claim's token, `<worker id>.<claim id>`. */
  token(): string;
  /** Workers fallen silent, whose claims are anyone's now; never this one. */
  silent(): readonly string[];
};

export type WorkerRegistry = Claims & { readonly id: string; stop(): Promise<void> };

const BEAT_MS = 1_000;
/** Silent this long, a worker is taken for dead: five missed beats, far above a busy event loop's pause. */
export const SILENT_AFTER_SECONDS = 5;
/** Longer than any lease: by then a dead worker's claims have run out by themselves. */
const FORGET_AFTER_SECONDS = 3_600;
const FORGET_EVERY_BEATS = 60;

function tokenFor(id: string): () => string {
  return () => `${id}${CLAIM_SEPARATOR}${randomUUID()}`;
}

/** Claims of a worker started on its own (a test, a benchmark): named, never taking over anyone's. */
export function ownClaims(): Claims {
  const token = tokenFor(randomUUID());
  return { token, silent: () => [] };
}

/**
 * This process's place among the workers. On PostgreSQL it beats every second and learns which
 * workers fell silent, so the dispatcher, the webhook sender and the domain checker take a dead
 * process's claims over within seconds instead of waiting out their leases. (The releaser holds
 * no lease: its row locks go with the dead process's connection.) On the embedded database one
 * process holds the data, so every claim found at the start is a dead process's and is let go at
 * once; there is nobody to take over from later.
 */
export async function startWorkerRegistry(deps: { db: Db; dbKind: DatabaseKind; log: Logger }): Promise<WorkerRegistry> {
  const { db, log } = deps;
  const id = randomUUID();
  const token = tokenFor(id);
  if (deps.dbKind === 'pglite') {
    const released = await releaseEveryClaim(db);
    if (released.emails + released.webhookCalls + released.domains > 0) log.info('claims of an earlier run released', released);
    return { id, token, silent: () => [], stop: async () => {} };
  }

  const self = { id, host: os.hostname(), pid: process.pid };
  let silent: readonly string[] = [];
  let beats = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const tick = async () => {
    try {
      await beat(db, self);
      const found = (await silentWorkers(db, SILENT_AFTER_SECONDS)).filter((worker) => worker !== id);
      if (found.some((worker) => !silent.includes(worker))) log.info('taking over the claims of silent workers', { workers: found });
      silent = found;
      if (++beats % FORGET_EVERY_BEATS === 0) await forgetWorkers(db, FORGET_AFTER_SECONDS);
    } catch (error) {
      log.warn('worker heartbeat failed', { error: error instanceof Error ? error.message : error });
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().then(schedule);
    }, BEAT_MS);
  };
  await tick();
  schedule();

  return {
    id,
    token,
    silent: () => silent,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await markStopped(db, id).catch((error: unknown) => log.warn('could not mark this worker stopped', { error }));
    },
  };
}
