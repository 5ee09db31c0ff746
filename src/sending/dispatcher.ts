import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../config.js';
import type { Db } from '../db/connection.js';
import * as emails from '../data/emails.js';
import type { ClaimedEmail, ClaimRelease } from '../data/emails.js';
import { deleteExpiredIdempotencyKeys } from '../data/idempotency-keys.js';
import { CampaignRenderer, type CampaignMail } from '../campaigns/render.js';
import { escapeHtml } from '../campaigns/template.js';
import { loadSendingDomain, type SendingDomain } from '../domains/sending-domain.js';
import { confirmationUrl, DOUBLE_OPT_IN_PLACEHOLDER } from '../feedback/links.js';
import type { RecipientTokens } from '../feedback/tokens.js';
import type { Logger } from '../log.js';
import { applyEvents, type EventInput } from '../services/email-events.js';
import { guardReputation } from '../services/reputation-guard.js';
import { bounceAddress } from '../feedback/verp.js';
import { addressOf, buildMessage, envelopeOf, outgoingEmail, type OutgoingEmail } from './message.js';
import { nextAttempt } from './retry-policy.js';
import { addTracking } from './tracking.js';
import { createTransport, type DeliveryResult, type Transport } from './transports/index.js';

export type DispatcherDeps = { db: Db; config: Config; log: Logger; tokens: RecipientTokens };
export type Dispatcher = { stop(): Promise<void> };

// A domain's key and tracking settings are read once per this long: a change made through another
// process (this one's are applied at once, see domainChanged) reaches the mail within it.
const SENDING_DOMAIN_TTL_MS = 60_000;
const IDEMPOTENCY_SWEEP_MS = 10 * 60_000;
// Outcomes are retried this often before the batch is left to its lease (and so may go out twice).
const OUTCOME_WRITE_TRIES = 5;

// The dispatcher of this process, per database, so an API call can have due mail claimed at once.
const localDispatchers = new WeakMap<Db, { wake(): void; forget(domainId: number): void }>();

/** Has this process's dispatcher look for due mail now; other processes find it on their next poll. */
export function wakeDispatcher(db: Db): void {
  localDispatchers.get(db)?.wake();
}

/** Has this process's dispatcher read the domain afresh (its key, its tracking settings) before its next email. */
export function domainChanged(db: Db, domainId: number): void {
  localDispatchers.get(db)?.forget(domainId);
}

/** Each sending domain, read once per SENDING_DOMAIN_TTL_MS. */
type SendingDomainCache = Map<number, { domain: Promise<SendingDomain | null>; loadedAt: number }>;

function sendingDomainOf(db: Db, cache: SendingDomainCache, email: ClaimedEmail): Promise<SendingDomain | null> {
  if (email.domain_id === null) return Promise.resolve(null);
  const cached = cache.get(email.domain_id);
  if (cached && Date.now() - cached.loadedAt < SENDING_DOMAIN_TTL_MS) return cached.domain;
  const domain = loadSendingDomain(db, email.team_id, email.domain_id);
  cache.set(email.domain_id, { domain, loadedAt: Date.now() });
  domain.catch(() => cache.delete(email.domain_id!));
  return domain;
}

/** What one attempt did to an email: its events, and when to try again (null: nothing left to send). */
export type Outcome = ClaimRelease & { events: Omit<EventInput, 'teamId' | 'emailId' | 'dedupeKey'>[] };

/** The outcome of one attempt, from what the transport answered. */
export function outcomeOf(email: ClaimedEmail, result: DeliveryResult, skipped: string[], now: Date, config: Config): Outcome {
  const base = { teamId: email.team_id, id: email.id, attempts: email.attempts + 1 };
  const suppressedNote = skipped.length > 0 ? { suppressed: skipped } : {};
  if (result.kind === 'sent') {
    const bounced = result.rejected.filter((r) => r.code !== null && r.code >= 500);
    return {
      ...base,
      sendAt: null,
      events: [
        {
          status: 'SENT',
          data: { response: result.response, ...(result.rejected.length > 0 ? { rejected: result.rejected } : {}), ...suppressedNote },
          ...(bounced.length > 0 ? { suppress: { addresses: bounced.map((r) => r.address), reason: 'HARD_BOUNCE' as const } } : {}),
        },
        ...result.feedback,
      ],
    };
  }
  if (result.kind === 'permanent') {
    const recipients = envelopeOf(outgoingEmail(email), '').to.filter((address) => !skipped.includes(address));
    // A refusal of the whole message names no recipient; with only one, it is that one's.
    const refused = result.rejected.length > 0 ? result.rejected.map((r) => r.address) : recipients.length === 1 ? recipients : [];
    return {
      ...base,
      sendAt: null,
      events: [{
        status: 'BOUNCED',
        data: { bounceType: 'Permanent', response: result.response, code: result.code, recipients: refused, ...suppressedNote },
        suppress: { addresses: refused, reason: 'HARD_BOUNCE' },
      }],
    };
  }
  const retryAt = nextAttempt(email, base.attempts, now, config);
  if (retryAt === null) {
    return {
      ...base,
      sendAt: null,
      events: [{ status: 'FAILED', data: { reason: 'not delivered within the retry window', response: result.response, code: result.code, attempts: base.attempts } }],
    };
  }
  return {
    ...base,
    sendAt: retryAt,
    events: [{ status: 'DELIVERY_DELAYED', data: { response: result.response, code: result.code, attempt: base.attempts, nextAttemptAt: retryAt.toISOString() } }],
  };
}

const finalOutcome = (email: ClaimedEmail, status: 'FAILED' | 'SUPPRESSED' | 'CANCELLED', data: Record<string, unknown>): Outcome => ({
  teamId: email.team_id, id: email.id, attempts: email.attempts, sendAt: null, events: [{ status, data }],
});

/** Back as it was, without a send time: the mail of a paused campaign waits for its resume. */
const heldOutcome = (email: ClaimedEmail): Outcome => ({ teamId: email.team_id, id: email.id, attempts: email.attempts, sendAt: null, events: [] });

/**
 * Claims due emails in batches under a lease, builds, signs and hands each to the transport, and
 * writes each batch's outcomes in one transaction. Up to DISPATCH_CONCURRENCY batches are in
 * flight; that many batches are all a crash can send twice.
 */
export function startDispatcher(deps: DispatcherDeps, transport: Transport = createTransport(deps.config)): Dispatcher {
  const { db, config, log } = deps;
  const sendingDomains: SendingDomainCache = new Map();
  const campaigns = new CampaignRenderer(db, config, deps.tokens);
  const inFlight = new Set<Promise<void>>();
  const totals = { claimed: 0, sent: 0, written: 0 };
  let stopped = false;
  let claiming: Promise<void> | null = null;
  let wakeAgain = false;
  let timer: NodeJS.Timeout | undefined;
  let lastSweep = 0;

  /** A double opt-in confirmation gets its signed link now, so no token is ever stored. */
  const withConfirmationLink = (message: OutgoingEmail, email: ClaimedEmail): OutgoingEmail => {
    if (email.contact_book_id === null || email.contact_id === null) return message;
    const url = confirmationUrl(config.publicUrl, deps.tokens, { teamId: email.team_id, bookId: email.contact_book_id, contactId: email.contact_id }, email.created_at);
    return {
      ...message,
      html: message.html?.replace(DOUBLE_OPT_IN_PLACEHOLDER, escapeHtml(url)) ?? null,
      text: message.text?.replace(DOUBLE_OPT_IN_PLACEHOLDER, url) ?? null,
    };
  };

  /** The open pixel and tracked links the sending domain asks for; a confirmation email is never tracked. */
  const withTracking = (message: OutgoingEmail, email: ClaimedEmail, domain: SendingDomain): OutgoingEmail => {
    if (message.html === null || (!domain.openTracking && !domain.clickTracking) || email.contact_book_id !== null) return message;
    const options = { open: domain.openTracking, click: domain.clickTracking, publicUrl: config.publicUrl, tokens: deps.tokens, emailId: email.id };
    return { ...message, html: addTracking(message.html, options) };
  };

  const send = async (email: ClaimedEmail, campaignMail: CampaignMail | undefined, suppressed: Set<string>, now: Date, leaseUntil: Date): Promise<Outcome | null> => {
    if (campaignMail?.kind === 'hold') return heldOutcome(email);
    if (campaignMail?.kind === 'cancel') return finalOutcome(email, 'CANCELLED', { reason: campaignMail.reason });
    const domain = await sendingDomainOf(db, sendingDomains, email);
    // A claim about to run out may already be another dispatcher's: leave the email to it.
    if (Date.now() > leaseUntil.getTime() - config.dispatchLeaseMs / 4) return null;
    if (!domain) return finalOutcome(email, 'FAILED', { reason: 'the sending domain no longer exists' });
    const { signer } = domain;
    const message = withTracking(campaignMail?.message ?? withConfirmationLink(outgoingEmail(email), email), email, domain);
    const all = envelopeOf(message, bounceAddress(email.id, signer.domain, config.returnPathSubdomain));
    const skipped = all.to.filter((address) => suppressed.has(emails.suppressionKey(email.team_id, address.toLowerCase())));
    const envelope = { from: all.from, to: all.to.filter((address) => !skipped.includes(address)) };
    if (envelope.to.length === 0) return finalOutcome(email, 'SUPPRESSED', { recipients: skipped, reason: 'every recipient is on the suppression list' });
    const signed = await signer.sign(buildMessage(message, now), now);
    const result = await transport.send(email.id, signed, envelope);
    if (result.kind === 'sent') totals.sent++;
    return outcomeOf(email, result, skipped, new Date(), config);
  };

  /**
   * One transaction per batch: the rows whose claim still holds get their next attempt and their
   * events; a lost claim's events are its new claimant's to write.
   */
  const writeOutcomes = async (token: string, outcomes: Outcome[]) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const now = new Date();
        const { written, counted } = await db.transaction().execute(async (tx) => {
          const written = await emails.releaseClaims(tx, token, outcomes, now);
          const events = outcomes
            .filter((outcome) => written.has(outcome.id))
            .flatMap((outcome) => outcome.events.map((event) => ({ ...event, teamId: outcome.teamId, emailId: outcome.id, dedupeKey: null })));
          return { written, counted: await applyEvents(tx, events, now) };
        });
        totals.written += written.size;
        await guardReputation(deps, counted);
        return;
      } catch (error) {
        if (attempt >= OUTCOME_WRITE_TRIES || stopped) throw error;
        log.warn('writing outcomes failed; trying again', { error, attempt });
        await delay(250 * 2 ** attempt);
      }
    }
  };

  const processBatch = async (token: string, leaseUntil: Date, batch: ClaimedEmail[]) => {
    const now = new Date();
    const recipients = batch.flatMap((email) =>
      [...email.to_addresses, ...email.cc_addresses, ...email.bcc_addresses].map((mailbox) => ({ teamId: email.team_id, email: addressOf(mailbox).toLowerCase() })),
    );
    const [suppressed, campaignMail] = await Promise.all([emails.findSuppressed(db, recipients), campaigns.prepare(batch)]);
    const outcomes = await Promise.all(
      batch.map((email) =>
        send(email, campaignMail.get(email.id), suppressed, now, leaseUntil).catch((error: unknown) => {
          log.error('building or sending an email failed', { error, emailId: email.id });
          return finalOutcome(email, 'FAILED', { reason: 'internal error while building the message' });
        }),
      ),
    );
    await writeOutcomes(token, outcomes.filter((outcome) => outcome !== null));
    log.debug('batch dispatched', { claimed: batch.length });
  };

  const claimOnce = async (): Promise<boolean> => {
    const now = new Date();
    const token = randomUUID();
    const leaseUntil = new Date(now.getTime() + config.dispatchLeaseMs);
    const batch = await emails.claimDueEmails(db, { now, leaseUntil, token, limit: config.dispatchBatchSize });
    if (batch.length === 0) return false;
    totals.claimed += batch.length;
    const work = processBatch(token, leaseUntil, batch).catch((error: unknown) =>
      log.error('batch failed; its emails are retried when their lease runs out', { error, claimed: batch.length }),
    );
    inFlight.add(work);
    void work.then(() => {
      inFlight.delete(work);
      pump();
    });
    return batch.length === config.dispatchBatchSize;
  };

  const sweep = async () => {
    if (Date.now() - lastSweep < IDEMPOTENCY_SWEEP_MS) return;
    lastSweep = Date.now();
    await deleteExpiredIdempotencyKeys(db, new Date());
  };

  /** Claims while there is room and due mail, then waits for a wake-up, a finished batch or the poll. */
  function pump(): void {
    if (stopped) return;
    if (claiming) {
      wakeAgain = true;
      return;
    }
    clearTimeout(timer);
    claiming = (async () => {
      try {
        let more = true;
        while (!stopped && inFlight.size < config.dispatchConcurrency && (more || wakeAgain)) {
          wakeAgain = false;
          more = await claimOnce();
        }
        await sweep();
      } catch (error) {
        log.error('claiming due emails failed', { error });
      } finally {
        claiming = null;
        if (!stopped) timer = setTimeout(pump, config.dispatchPollMs);
      }
    })();
  }

  localDispatchers.set(db, { wake: pump, forget: (domainId) => sendingDomains.delete(domainId) });
  pump();

  return {
    async stop() {
      stopped = true;
      localDispatchers.delete(db);
      clearTimeout(timer);
      await claiming;
      while (inFlight.size > 0) await Promise.all(inFlight);
      await transport.close();
      log.info('dispatcher stopped', { transport: transport.name, ...totals });
    },
  };
}
