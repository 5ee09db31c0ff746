import { QueueFronts } from './queue-fronts.js';
import { claimDueCalls, recordAttempts, type AttemptRecord, type ClaimedCall } from '../data/webhook-delivery.js';
import { refreshStatistics } from '../data/statistics.js';
import type { Deps } from '../deps.js';
import { AnswerCache } from '../reuse-for.js';
import { startWorkerLoop } from '../workers/loop.js';
import { ownClaims, type Claims } from '../workers/registry.js';
import { AllowList, PortList, systemLookup } from './address-guard.js';
import { callBody } from './payload.js';
import { WebhookPoster, type PostResult } from './post.js';
import { signedHeaders } from './signing.js';

export type WebhookSenderDeps = Pick<Deps, 'db' | 'dbKind' | 'config' | 'log' | 'keyVault' | 'signals' | 'metrics'>;
export type WebhookSender = { stop(): Promise<void> };

/** Attempts are recorded in batches of up to this many, at most this long after they ended. */
const RECORD_BATCH = 200;
const RECORD_DELAY_MS = 20;
/**
 * Claims come at most this often (unless the last one left due calls for want of room): each
 * reads the front of every webhook's queue, and on the embedded database every statement waits
 * its turn with the dispatcher's, so sending is never starved by the calls that report it.
 */
const CLAIM_SPACING_MS = 25;
/**
 * While this process's dispatcher sends, no calls are claimed: the mail goes out first and its
 * calls catch up when the run is over. A trickle of claims meanwhile cost more than it sent: the
 * run's calls pile up faster than the planner's statistics follow (see STATISTICS_CHECK_MS), and
 * on PostgreSQL delivery with a webhook on ran at 0.74 of the rate without one (0.77–0.97 with
 * no claims meanwhile), for 3 % of the calls sent early. On the embedded database every
 * statement and every call would take the dispatcher's one thread. A run holds calls back no
 * longer than this, though: then they go at full speed.
 */
const MAX_DEFER_MS = 30_000;
/** Batches of one run of sending follow each other closely; a pause longer than this ends the run. */
const RUN_GAP_MS = 1_000;
/** Past the longest a transaction that writes webhook calls stays open (see QueueFronts). */
const FRONTS_LAG_MS = 10_000;
const FRONTS_MAX_AGE_MS = 60_000;
/**
 * How often the claim looks at whether the calls table has outgrown its statistics: a backlog
 * written moments ago (a campaign's calls) is planned as a few rows without them, and checking each
 * claimed call against its subject's earlier calls then reads every pending call of the webhook.
 * The look is one cheap read, and gathering follows only when the table has grown half again. Once
 * every 10 s, claims made while calls piled up (a sender in a process that is not the one sending
 * the mail) went unplanned for that long: 0.5 to 1.3 s of the database's time each, 20 ms once
 * the statistics were there.
 */
const STATISTICS_CHECK_MS = 1_000;
/** Each retry waits this many times longer than the one before. */
const BACKOFF_FACTOR = 5;

/**
 * How long to wait before the attempt after `attempts` failed ones: WEBHOOK_RETRY_BASE_MS, then
 * five times longer each time, ±20% so that receivers coming back are not hit by every sender in
 * the same second. With the defaults, 8 attempts span about a day.
 */
function retryDelayMs(attempts: number, baseMs: number): number {
  return Math.round(baseMs * BACKOFF_FACTOR ** (attempts - 1) * (0.8 + 0.4 * Math.random()));
}

/** What an attempt's result makes of its call. */
function attemptOutcome(
  call: Pick<ClaimedCall, 'team_id' | 'webhook_id' | 'id'>,
  attempt: number,
  result: PostResult,
  now: Date,
  limits: { maxAttempts: number; retryBaseMs: number },
): AttemptRecord {
  const base = { teamId: call.team_id, webhookId: call.webhook_id, id: call.id, responseStatus: result.status, responseTimeMs: result.timeMs };
  if (result.ok) return { ...base, outcome: 'DELIVERED', error: null, nextAttemptAt: null };
  if (result.gone) return { ...base, outcome: 'GONE', error: result.error, nextAttemptAt: null };
  if (attempt >= limits.maxAttempts) return { ...base, outcome: 'FAILED', error: result.error, nextAttemptAt: null };
  // The poster has already capped a Retry-After at a day.
  const delay = result.retryAfterMs ?? retryDelayMs(attempt, limits.retryBaseMs);
  return { ...base, outcome: 'RETRY', error: result.error, nextAttemptAt: new Date(now.getTime() + delay) };
}

/** How many of the sender's `concurrency` slots one webhook may hold: a slow receiver half at most, the rest go to the other webhooks. */
export const slotsPerWebhook = (concurrency: number) => Math.max(1, Math.floor(concurrency / 2));

/**
 * Delivers webhook calls: claims due calls under a lease (see claimDueCalls), posts each signed
 * afresh over kept-alive connections, WEBHOOK_CONCURRENCY at once and at most half of that per
 * webhook, and records the attempts in batches. A crash leaves claimed calls whose lease runs
 * out and which are claimed again: delivery is at least once, each attempt of a call carrying the
 * same webhook-id so a receiver can drop a repeat.
 */
export function startWebhookSender(deps: WebhookSenderDeps, options: { poster?: WebhookPoster; claims?: Claims } = {}): WebhookSender {
  const { db, config, log } = deps;
  const poster = options.poster ?? new WebhookPoster({
    allow: new AllowList(config.webhookAllowedHosts),
    lookup: systemLookup(config),
    ports: new PortList(config.webhookAllowedPorts),
    timeoutMs: config.webhookTimeoutMs,
    // perWebhook bounds each webhook; webhooks sharing a host share its connections.
    maxSocketsPerHost: config.webhookConcurrency,
  });
  const claims = options.claims ?? ownClaims();
  const token = claims.token();
  // Past the slowest attempt and the wait to record it, so a lease only runs out when its sender
  // died (or its database stalled that long: the call is then sent again, which at-least-once allows).
  const leaseMs = config.webhookTimeoutMs + 15_000;
  const perWebhook = slotsPerWebhook(config.webhookConcurrency);
  // On PostgreSQL a claim takes half of a webhook's slots at most, so the next is made while its
  // calls are posted and recorded: a claim of every slot waited for the last one's records, and
  // was a third of each round of a backlog's sending. The embedded database runs on this thread,
  // so nothing goes on beside its claims: each takes all it can, since twice the claims cost it
  // twice the reading of each queue's front (a backlog went out at half the rate).
  const perClaim = deps.dbKind === 'pglite' ? perWebhook : Math.ceil(perWebhook / 2);
  // Opened once each: decrypting a secret costs more than signing with it.
  const secrets = new AnswerCache<string, string>({ maxEntries: 10_000 });
  const inFlight = new Map<string, number>();
  const queueFronts = new QueueFronts({ lagMs: FRONTS_LAG_MS, maxAgeMs: FRONTS_MAX_AGE_MS });
  const totals = { delivered: 0, retried: 0, failed: 0 };
  let slotsUsed = 0;
  // The last claim left due calls for want of room: the next may come as soon as there is room.
  let backlog = false;
  let lastClaimAt = 0;
  let statisticsCheckedAt = 0;
  let sending = false;
  let sendingSince = 0;
  let idleSince = 0;
  let toRecord: { record: AttemptRecord; key: string }[] = [];
  let recordTimer: NodeJS.Timeout | undefined;
  let recording: Promise<void> = Promise.resolve();

  const secretOf = (call: ClaimedCall) =>
    secrets.get(call.secret, () => deps.keyVault.openText(call.secret, `The signing secret of webhook ${call.webhook_id}`));

  const post = async (call: ClaimedCall): Promise<AttemptRecord> => {
    const attempt = call.attempt + 1;
    const limits = { maxAttempts: config.webhookMaxAttempts, retryBaseMs: config.webhookRetryBaseMs };
    try {
      const body = JSON.stringify(callBody(call, attempt));
      const headers = signedHeaders({ secret: secretOf(call), callId: call.id, type: call.type, body, retry: attempt > 1, now: new Date() });
      return attemptOutcome(call, attempt, await poster.post(call.url, headers, body), new Date(), limits);
    } catch (error) {
      log.error('a webhook call could not be made', { webhookId: call.webhook_id, callId: call.id, error: (error as Error).message });
      const failed: PostResult = { ok: false, status: null, timeMs: 0, error: (error as Error).message, retryAfterMs: null, gone: false };
      return attemptOutcome(call, attempt, failed, new Date(), limits);
    }
  };

  const flush = () => {
    clearTimeout(recordTimer);
    recordTimer = undefined;
    const batch = toRecord;
    toRecord = [];
    if (batch.length === 0) return recording;
    recording = recording.then(async () => {
      try {
        await recordAttempts(db, token, batch.map((item) => item.record), new Date(), config.webhookAutoDisableAfter);
        for (const { record } of batch) {
          deps.metrics.webhookCall(record.outcome.toLowerCase());
          if (record.outcome === 'DELIVERED') totals.delivered++;
          else if (record.outcome === 'RETRY') totals.retried++;
          else totals.failed++;
        }
      } catch (error) {
        log.error('recording webhook attempts failed; their calls are tried again when the lease runs out', { error, calls: batch.length });
      } finally {
        for (const { key } of batch) release(key);
        loop.wake();
      }
    });
    return recording;
  };

  const release = (key: string) => {
    slotsUsed--;
    const left = (inFlight.get(key) ?? 1) - 1;
    if (left === 0) inFlight.delete(key);
    else inFlight.set(key, left);
  };

  const keyOf = (call: Pick<ClaimedCall, 'team_id' | 'webhook_id'>) => `${call.team_id}:${call.webhook_id}`;

  /** Posts one call of a claim; `claim.posting` counts that claim's posts still under way. */
  const start = (call: ClaimedCall, claim: { posting: number }) => {
    const key = keyOf(call);
    slotsUsed++;
    inFlight.set(key, (inFlight.get(key) ?? 0) + 1);
    claim.posting++;
    const work = post(call).then((record) => {
      claim.posting--;
      toRecord.push({ record, key });
      // Once a claim's posts are all done, nothing more of it is coming to wait for: its slots
      // are freed, and the claim after the next made, only when the attempts are recorded.
      if (toRecord.length >= RECORD_BATCH || claim.posting === 0) void flush();
      else recordTimer ??= setTimeout(() => void flush(), RECORD_DELAY_MS);
    });
    void loop.track(work);
  };

  /**
   * `again`: a claim made at once finds other calls (see claimDueCalls). `refill`: due calls were
   * left for want of room in this claim alone, and a webhook it took calls of has slots left.
   */
  const claimOnce = async (): Promise<{ again: boolean; refill: boolean }> => {
    const free = config.webhookConcurrency - slotsUsed;
    if (free <= 0) return { again: false, refill: false };
    const now = new Date();
    if (now.getTime() - statisticsCheckedAt >= STATISTICS_CHECK_MS) {
      statisticsCheckedAt = now.getTime();
      await refreshStatistics(db, ['webhook_calls']);
    }
    const fronts = queueFronts.forClaim();
    const { calls, more, again } = await claimDueCalls(db, {
      now, leaseUntil: new Date(now.getTime() + leaseMs), token, limit: free, perWebhook, perClaim, inFlight, fronts, silent: claims.silent(),
    });
    queueFronts.found(fronts);
    backlog = more;
    const claim = { posting: 0 };
    for (const call of calls) start(call, claim);
    // The next claim follows at once only while there is room it could fill: one made with every
    // such slot taken would read the same fronts, take nothing, and cost as much as this one (on
    // the embedded database, half of what catching up on a backlog took).
    const refill = more && slotsUsed < config.webhookConcurrency && calls.some((call) => inFlight.get(keyOf(call))! < perWebhook);
    return { again, refill };
  };

  const deferring = () => sending && Date.now() - sendingSince < MAX_DEFER_MS;

  /** Claims while there are free slots and due calls; then a wake-up, a recorded batch or the poll brings the next pass. */
  const loop = startWorkerLoop({
    pass: async (stopping) => {
      let claimed: { again: boolean; refill: boolean };
      do {
        lastClaimAt = Date.now();
        claimed = await claimOnce();
      } while (claimed.again && !stopping.aborted && !deferring());
      // The next claim at once, while this one's calls are posted.
      return claimed.refill && !deferring();
    },
    pollMs: config.webhookPollMs,
    onError: (error) => log.error('claiming due webhook calls failed', { error }),
    wakeOn: { signals: deps.signals, names: ['webhookCallsDue'] },
    // Claims are spaced, and held back while this process's dispatcher sends.
    holdBack: () => (deferring() ? sendingSince + MAX_DEFER_MS : backlog ? 0 : lastClaimAt + CLAIM_SPACING_MS) - Date.now(),
  });

  const unsubscribe = [
    deps.signals.on('dispatching', (busy) => {
      const now = Date.now();
      if (busy && !sending && now - idleSince > RUN_GAP_MS) sendingSince = now;
      sending = busy;
      if (busy) return;
      idleSince = now;
      // The run may be over: the calls it held back go once no batch followed for a moment.
      setTimeout(() => {
        if (!sending) loop.wake();
      }, RUN_GAP_MS).unref();
    }),
  ];

  return {
    async stop() {
      for (const off of unsubscribe) off();
      await loop.stop();
      await flush();
      poster.close();
      log.info('webhook sender stopped', totals);
    },
  };
}
