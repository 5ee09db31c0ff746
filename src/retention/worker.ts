import { setImmediate as yieldToOthers } from 'node:timers/promises';
import { IDEMPOTENCY_TTL_MS } from '../data/idempotency-keys.js';
import * as retention from '../data/retention.js';
import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import { startWorkerLoop } from '../workers/loop.js';

export type RetentionDeps = Pick<Deps, 'db' | 'dbKind' | 'config' | 'log'>;
export type RetentionWorker = { stop(): Promise<void> };

/** Rows one statement changes: small enough that it holds its rows for milliseconds. */
export const RETENTION_BATCH_SIZE = 1000;
const DAY_MS = 86_400_000;

/** What one run removed, and in how many statements. */
export type RetentionRun = { emailBodies: number; inboundMail: number; webhookCalls: number; idempotencyKeys: number; sessions: number; auditRows: number; batches: number };
type Pass = keyof Omit<RetentionRun, 'batches'>;

/**
 * One run: email bodies, received mail's content and finished webhook calls older than RETENTION_DAYS, idempotency keys
 * past their 24 hours, expired sessions, and audit rows older than AUDIT_RETENTION_DAYS, each removed a batch at a
 * time until a batch comes back short; between batches the database is left to other work. An aborted `signal` ends
 * the run after the statement in flight. Answers what was removed, or undefined when another process is running it.
 */
export async function runRetention(
  deps: Pick<RetentionDeps, 'db' | 'dbKind' | 'config'>,
  options: { now?: Date; batchSize?: number; signal?: AbortSignal } = {},
): Promise<RetentionRun | undefined> {
  const now = options.now ?? new Date();
  const limit = options.batchSize ?? RETENTION_BATCH_SIZE;
  const windowStart = new Date(now.getTime() - deps.config.retentionDays * DAY_MS);
  const passes: [Pass, (db: Db) => Promise<number>][] = [
    ['emailBodies', (db) => retention.dropEmailBodies(db, windowStart, now, limit)],
    ['inboundMail', (db) => retention.dropInboundContent(db, windowStart, now, limit)],
    ['webhookCalls', (db) => retention.deleteFinishedCalls(db, windowStart, limit)],
    ['idempotencyKeys', (db) => retention.deleteIdempotencyKeys(db, new Date(now.getTime() - IDEMPOTENCY_TTL_MS), limit)],
    ['sessions', (db) => retention.deleteExpiredSessions(db, now, limit)],
    ['auditRows', (db) => retention.deleteAuditRows(db, new Date(now.getTime() - deps.config.auditRetentionDays * DAY_MS), limit)],
  ];
  return retention.withRetentionLock(deps.db, deps.dbKind, async (db) => {
    const run: RetentionRun = { emailBodies: 0, inboundMail: 0, webhookCalls: 0, idempotencyKeys: 0, sessions: 0, auditRows: 0, batches: 0 };
    for (const [pass, removeBatch] of passes) {
      for (let removed = limit; removed === limit && !options.signal?.aborted; ) {
        if (run.batches > 0) await yieldToOthers();
        removed = await removeBatch(db);
        run[pass] += removed;
        run.batches++;
      }
    }
    return run;
  });
}

/**
 * Runs retention at start and then every RETENTION_INTERVAL_MS; with several worker processes on
 * one PostgreSQL, whichever gets there first runs it and the others skip that round.
 */
export function startRetention(deps: RetentionDeps, options: { batchSize?: number } = {}): RetentionWorker {
  const loop = startWorkerLoop({
    pass: async (stopping) => {
      const run = await runRetention(deps, { batchSize: options.batchSize, signal: stopping });
      if (!run) deps.log.debug('retention skipped: another process is running it');
      else if (run.emailBodies + run.inboundMail + run.webhookCalls + run.idempotencyKeys + run.sessions + run.auditRows > 0) deps.log.info('retention run', run);
    },
    pollMs: deps.config.retentionIntervalMs,
    onError: (error) => deps.log.error('retention run failed; it runs again at the next interval', { error }),
  });
  return { stop: () => loop.stop() };
}
