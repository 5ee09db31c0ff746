import * as emails from '../data/emails.js';
import { GroupedWrites } from '../db/grouped-writes.js';
import type { ClaimedEmail } from '../data/emails.js';
import type { Deps } from '../deps.js';
import { KeyVaultError } from '../domains/key-vault.js';
import { addressOf } from '../mail/address.js';
import { compose, signedMessage, type CampaignComposer, type CampaignMail } from './compose.js';
import { giveBackWarmupSlot, takeWarmupSlot } from '../data/warmup.js';
import { DomainSettingsCache, type DomainSettings } from './domain-settings.js';
import { sandboxRefusal } from './sandbox.js';
import { finalOutcome, heldOutcome, outcomeOf, recordOutcomes, releasedOutcome, type Outcome } from './outcomes.js';
import type { Transport } from './transports/index.js';
import { dailyLimit, nextUtcDay, utcDay, warmupDay } from './warmup.js';
import { startWorkerLoop } from '../workers/loop.js';
import { ownClaims, type Claims } from '../workers/registry.js';

export type DispatcherDeps = Pick<Deps, 'db' | 'config' | 'log' | 'tokens' | 'signals' | 'keyVault' | 'metrics' | 'clock'>;
export type Dispatcher = { stop(): Promise<void> };

// Outcomes are written in chunks of this many as they come, joined with other batches' chunks
// (GroupedWrites), with up to two writes under way: one being written while the next gathers.
const OUTCOME_CHUNK = 250;
const OUTCOME_WRITES_IN_FLIGHT = 2;
const OUTCOME_LINGER_MS = 200;
const CAMPAIGN_AFTER_MS = 60_000;

/**
 * Claims due emails in batches under a lease, composes, signs and hands each to the transport, and
 * records the outcomes as the relay answers, in chunks. Up to DISPATCH_BATCH_SIZE ×
 * DISPATCH_CONCURRENCY emails are in flight: a batch makes room as each of its emails is done, so
 * one slow email (a slow destination, under direct delivery) holds back only its own place. What a
 * crash can send twice is mail the relay took whose outcome was not yet written: at most the mail
 * in flight, and usually a chunk or two of each batch; claimed mail not yet sent waits for its
 * lease and then goes once. Campaign mail is rendered by the composer it is given. A warming-up
 * domain's mail past its daily cap waits for the next UTC day.
 */
export function startDispatcher(deps: DispatcherDeps, parts: { transport: Transport; campaigns: CampaignComposer; claims?: Claims }): Dispatcher {
  const { db, config, log } = deps;
  const { transport, campaigns, claims = ownClaims() } = parts;
  const domains = new DomainSettingsCache(deps);
  const totals = { claimed: 0, sent: 0, written: 0 };
  const capacity = config.dispatchBatchSize * config.dispatchConcurrency;
  let inFlight = 0;
  // A claim waits for half a batch of room (unless nothing is in flight): claiming each email's
  // place as it frees would split the queue into batches of a few emails, each paying a claim, its
  // lookups and an outcome write of its own.
  const minimumClaim = Math.ceil(config.dispatchBatchSize / 2);
  const mayClaim = () => capacity - inFlight >= (inFlight === 0 ? 1 : minimumClaim);
  const outcomeWrites = new GroupedWrites<Outcome>(
    async (outcomes) => {
      totals.written += await recordOutcomes(deps, outcomes, () => loop.stopping.aborted);
      // The outcomes' events wrote webhook calls.
      deps.signals.emit('webhookCallsDue');
    },
    OUTCOME_WRITES_IN_FLIGHT,
    { failTogether: true },
  );

  /** One attempt at one email; null when its claim is about to run out and it is left to the next claimant. */
  const send = async (email: ClaimedEmail, campaignMail: CampaignMail | undefined, suppressed: Set<string>, leaseUntil: Date): Promise<Outcome | null> => {
    if (campaignMail?.kind === 'hold') return heldOutcome(email);
    if (campaignMail?.kind === 'cancel') return finalOutcome(email, 'CANCELLED', { reason: campaignMail.reason });
    const domain = email.domain_id === null ? null : await domains.get(email.team_id, email.domain_id);
    if (deps.clock().getTime() > leaseUntil.getTime() - config.dispatchLeaseMs / 4) return null;
    if (!domain) return finalOutcome(email, 'FAILED', { reason: 'the sending domain no longer exists' });
    // Accepted while mail was captured, and the process restarted since with a relay: it never goes out.
    const refusal = sandboxRefusal(domain.signer.domain, transport.name);
    if (refusal) return finalOutcome(email, 'FAILED', { reason: refusal });
    const isSuppressed = (address: string) => suppressed.has(emails.suppressionKey(email.team_id, address.toLowerCase()));
    const composed = compose(deps, email, campaignMail?.message, domain, isSuppressed);
    if (composed.envelope.to.length === 0) {
      return finalOutcome(email, 'SUPPRESSED', { recipients: composed.skipped, reason: 'every recipient is on the suppression list' });
    }
    const context = { teamId: email.team_id, pool: domain.ipPool, deadline: leaseUntil.getTime() - config.dispatchLeaseMs / 4 };
    // Not signed for nothing: mail no destination would take now waits for the time one will.
    const notBefore = await transport.admit?.(composed.envelope, context);
    if (notBefore) return releasedOutcome(email, notBefore);
    const warmupSlot = await takeWarmup(email, domain);
    if (warmupSlot === 'over the cap') return releasedOutcome(email, nextDayFor(email));
    const message = await signedMessage(composed, domain, new Date());
    // A stop lets the messages already with the relay finish and gives the rest back, so a drain
    // takes one SMTP exchange, not a whole batch.
    if (loop.stopping.aborted) {
      await warmupSlot?.giveBack();
      return releasedOutcome(email, deps.clock());
    }
    const result = await transport.send(email.id, message, composed.envelope, context);
    if (result.kind === 'sent') totals.sent++;
    // Nothing was tried (a paused destination): the attempt it took of today's cap is not spent.
    if (result.kind === 'recipients' && result.results.every((r) => r.status === 'postponed')) await warmupSlot?.giveBack();
    return outcomeOf(email, result, composed.skipped, deps.clock(), config);
  };

  /**
   * One of today's attempts of a warming-up domain, or 'over the cap' when they are all taken; null
   * when the domain has no cap today.
   */
  const takeWarmup = async (email: ClaimedEmail, domain: DomainSettings) => {
    if (!domain.warmup || email.domain_id === null) return null;
    const today = utcDay(deps.clock());
    const cap = dailyLimit(warmupDay(domain.warmup.startedOn, today), domain.warmup.dailyLimits);
    if (cap === null) return null;
    const key = { teamId: email.team_id, domainId: email.domain_id, day: today };
    if (!(await takeWarmupSlot(db, key, cap))) return 'over the cap' as const;
    return { giveBack: () => giveBackWarmupSlot(db, key) };
  };

  // Mail past the cap goes the next UTC day, transactional mail first: campaign mail a minute later.
  const nextDayFor = (email: ClaimedEmail) => new Date(nextUtcDay(deps.clock()).getTime() + (email.campaign_id === null ? 0 : CAMPAIGN_AFTER_MS));

  /**
   * An attempt that threw. A key this SECRET cannot decrypt is an operator's mistake that a restart
   * with the right SECRET mends: the email is tried again (never sent unsigned) until its retry
   * window ends. Anything else is a fault, and the email FAILED.
   */
  const attemptFailed = (email: ClaimedEmail, error: unknown): Outcome => {
    if (error instanceof KeyVaultError) {
      log.error('email not sent: the DKIM key of its domain cannot be used; it will be tried again', { emailId: email.id, error: error.message });
      return outcomeOf(email, { kind: 'temporary', response: error.message, code: null }, [], deps.clock(), config);
    }
    log.error('building or sending an email failed', { error, emailId: email.id });
    return finalOutcome(email, 'FAILED', { reason: 'internal error while building the message' });
  };

  /** Sends a claimed batch, telling `emailDone` as each email's outcome is in hand. */
  const processBatch = async (leaseUntil: Date, batch: ClaimedEmail[], emailDone: () => void) => {
    const recipients = batch.flatMap((email) =>
      [...email.to_addresses, ...email.cc_addresses, ...email.bcc_addresses].map((mailbox) => ({ teamId: email.team_id, email: addressOf(mailbox).toLowerCase() })),
    );
    const [suppressed, campaignMail] = await Promise.all([emails.findSuppressed(db, recipients), campaigns.prepare(batch)]);
    let pending: Outcome[] = [];
    const writes: Promise<void>[] = [];
    let lingering: NodeJS.Timeout | undefined;
    const flush = () => {
      clearTimeout(lingering);
      lingering = undefined;
      if (pending.length === 0) return;
      const write = outcomeWrites.add(pending);
      // Seen as handled now; a failure still fails the batch when its writes are awaited below.
      write.catch(() => undefined);
      writes.push(write);
      pending = [];
    };
    await Promise.all(
      batch.map(async (email) => {
        const outcome = await send(email, campaignMail.get(email.id), suppressed, leaseUntil).catch((error: unknown) => attemptFailed(email, error));
        if (outcome) pending.push(outcome);
        if (pending.length >= OUTCOME_CHUNK) flush();
        // A batch whose mail goes out slowly (direct delivery) records what it has after a moment,
        // not at its end: what a crash can send twice is then what went out in that moment.
        else lingering ??= setTimeout(flush, OUTCOME_LINGER_MS);
        emailDone();
      }),
    );
    flush();
    await Promise.all(writes);
    log.debug('batch dispatched', { claimed: batch.length });
  };

  /** Emails done: once half a batch of room is free, claiming goes on without waiting for the batch. */
  let roomSinceWake = 0;
  const madeRoom = (emailsDone: number) => {
    inFlight -= emailsDone;
    roomSinceWake += emailsDone;
    if (roomSinceWake >= config.dispatchBatchSize / 2) {
      roomSinceWake = 0;
      loop.wake();
    }
  };

  const claimOnce = async (): Promise<boolean> => {
    const now = deps.clock();
    const token = claims.token();
    const leaseUntil = new Date(now.getTime() + config.dispatchLeaseMs);
    const limit = Math.min(config.dispatchBatchSize, capacity - inFlight);
    const batch = await emails.claimDueEmails(db, { now, leaseUntil, token, limit, silent: claims.silent() });
    if (batch.length === 0) return false;
    totals.claimed += batch.length;
    inFlight += batch.length;
    if (loop.busy === 0) deps.signals.emit('dispatching', true);
    let accounted = 0;
    const emailDone = () => {
      accounted++;
      madeRoom(1);
    };
    const work = processBatch(leaseUntil, batch, emailDone).catch((error: unknown) => {
      log.error('batch failed; its emails are retried when their lease runs out', { error, claimed: batch.length });
      // What a failed batch had not counted as done is done with all the same.
      madeRoom(batch.length - accounted);
    });
    // A finished batch makes room: claiming goes on at once.
    void loop.track(work).then(() => {
      if (loop.busy === 0) deps.signals.emit('dispatching', false);
      loop.wake();
    });
    return batch.length === limit;
  };

  /** Claims while there is room and due mail; then a wake-up, a finished batch or the poll brings the next pass. */
  const loop = startWorkerLoop({
    pass: async (stopping) => {
      while (!stopping.aborted && mayClaim() && (await claimOnce()));
    },
    pollMs: config.dispatchPollMs,
    onError: (error) => log.error('claiming due emails failed', { error }),
    wakeOn: { signals: deps.signals, names: ['emailsDue'] },
  });
  const forgetDomains = deps.signals.on('domainChanged', (domainId) => domains.forget(domainId));

  return {
    async stop() {
      forgetDomains();
      await loop.stop();
      await transport.close();
      log.info('dispatcher stopped', { transport: transport.name, ...totals });
    },
  };
}
