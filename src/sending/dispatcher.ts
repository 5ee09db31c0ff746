import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../config.js';
import type { Db } from '../db/connection.js';
import * as emails from '../data/emails.js';
import type { ClaimedEmail, Outcome } from '../data/emails.js';
import { deleteExpiredIdempotencyKeys } from '../data/idempotency-keys.js';
import { CampaignRenderer, type CampaignMail } from '../campaigns/render.js';
import { escapeHtml } from '../campaigns/template.js';
import { loadDkimSigner, type DkimSigner } from '../domains/dkim.js';
import { confirmationUrl, DOUBLE_OPT_IN_PLACEHOLDER } from '../feedback/links.js';
import type { RecipientTokens } from '../feedback/tokens.js';
import type { Logger } from '../log.js';
import { addressOf, buildMessage, envelopeOf, outgoingEmail, returnPathAddress, type OutgoingEmail } from './message.js';
import { nextAttempt } from './retry-policy.js';
import { createTransport, type DeliveryResult, type Transport } from './transports/index.js';

export type DispatcherDeps = { db: Db; config: Config; log: Logger; tokens: RecipientTokens };
export type Dispatcher = { stop(): Promise<void> };

// A domain's key is read once per this long, so a deleted domain stops signing soon after.
const SIGNER_TTL_MS = 5 * 60_000;
const IDEMPOTENCY_SWEEP_MS = 10 * 60_000;
// Outcomes are retried this often before the batch is left to its lease (and so may go out twice).
const OUTCOME_WRITE_TRIES = 5;

// The dispatcher of this process, per database, so an API call can have due mail claimed at once.
const localDispatchers = new WeakMap<Db, () => void>();

/** Has this process's dispatcher look for due mail now; other processes find it on their next poll. */
export function wakeDispatcher(db: Db): void {
  localDispatchers.get(db)?.();
}

type SignerCache = Map<number, { signer: Promise<DkimSigner | null>; loadedAt: number }>;

function signerFor(db: Db, cache: SignerCache, email: ClaimedEmail): Promise<DkimSigner | null> {
  if (email.domain_id === null) return Promise.resolve(null);
  const cached = cache.get(email.domain_id);
  if (cached && Date.now() - cached.loadedAt < SIGNER_TTL_MS) return cached.signer;
  const signer = loadDkimSigner(db, email.team_id, email.domain_id);
  cache.set(email.domain_id, { signer, loadedAt: Date.now() });
  signer.catch(() => cache.delete(email.domain_id!));
  return signer;
}


/** The outcome of one attempt, from what the transport answered. */
export function outcomeOf(email: ClaimedEmail, result: DeliveryResult, skipped: string[], now: Date, config: Config): Outcome {
  const base = { teamId: email.team_id, id: email.id, campaignId: email.campaign_id, contactId: email.contact_id, attempts: email.attempts + 1 };
  const suppressedNote = skipped.length > 0 ? { suppressed: skipped } : {};
  if (result.kind === 'sent') {
    const bounced = result.rejected.filter((r) => r.code !== null && r.code >= 500);
    const last = result.feedback.at(-1);
    return {
      ...base,
      status: last?.status ?? 'SENT',
      sendAt: null,
      events: [
        { status: 'SENT', data: { response: result.response, ...(result.rejected.length > 0 ? { rejected: result.rejected } : {}), ...suppressedNote } },
        ...result.feedback.map((feedback) => ({ status: feedback.status, data: feedback.data })),
      ],
      suppress: [
        ...bounced.map((r) => ({ address: r.address, reason: 'HARD_BOUNCE' as const })),
        ...result.feedback.flatMap((f) => (f.suppress ? f.suppress.addresses.map((address) => ({ address, reason: f.suppress!.reason })) : [])),
      ],
    };
  }
  if (result.kind === 'permanent') {
    const recipients = envelopeOf(outgoingEmail(email), '').to.filter((address) => !skipped.includes(address));
    // A refusal of the whole message names no recipient; with only one, it is that one's.
    const refused = result.rejected.length > 0 ? result.rejected.map((r) => r.address) : recipients.length === 1 ? recipients : [];
    return {
      ...base,
      status: 'BOUNCED',
      sendAt: null,
      events: [{ status: 'BOUNCED', data: { bounceType: 'Permanent', response: result.response, code: result.code, recipients: refused, ...suppressedNote } }],
      suppress: refused.map((address) => ({ address, reason: 'HARD_BOUNCE' as const })),
    };
  }
  const retryAt = nextAttempt(email, base.attempts, now, config);
  if (retryAt === null) {
    return {
      ...base,
      status: 'FAILED',
      sendAt: null,
      events: [{ status: 'FAILED', data: { reason: 'not delivered within the retry window', response: result.response, code: result.code, attempts: base.attempts } }],
      suppress: [],
    };
  }
  return {
    ...base,
    status: 'DELIVERY_DELAYED',
    sendAt: retryAt,
    events: [{ status: 'DELIVERY_DELAYED', data: { response: result.response, code: result.code, attempt: base.attempts, nextAttemptAt: retryAt.toISOString() } }],
    suppress: [],
  };
}

const finalOutcome = (email: ClaimedEmail, status: 'FAILED' | 'SUPPRESSED' | 'CANCELLED', data: Record<string, unknown>): Outcome => ({
  teamId: email.team_id, id: email.id, campaignId: email.campaign_id, contactId: email.contact_id, attempts: email.attempts, status, sendAt: null, events: [{ status, data }], suppress: [],
});

/** Back as it was, without a send time: the mail of a paused campaign waits for its resume. */
const heldOutcome = (email: ClaimedEmail): Outcome => ({
  teamId: email.team_id, id: email.id, campaignId: email.campaign_id, contactId: email.contact_id, attempts: email.attempts, status: email.status, sendAt: null, events: [], suppress: [],
});

/**
 * Claims due emails in batches under a lease, builds, signs and hands each to the transport, and
 * writes each batch's outcomes in one transaction. Up to DISPATCH_CONCURRENCY batches are in
 * flight; that many batches are all a crash can send twice.
 */
export function startDispatcher(deps: DispatcherDeps, transport: Transport = createTransport(deps.config)): Dispatcher {
  const { db, config, log } = deps;
  const signers: SignerCache = new Map();
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

  const send = async (email: ClaimedEmail, campaignMail: CampaignMail | undefined, suppressed: Set<string>, now: Date, leaseUntil: Date): Promise<Outcome | null> => {
    if (campaignMail?.kind === 'hold') return heldOutcome(email);
    if (campaignMail?.kind === 'cancel') return finalOutcome(email, 'CANCELLED', { reason: campaignMail.reason });
    const signer = await signerFor(db, signers, email);
    // A claim about to run out may already be another dispatcher's: leave the email to it.
    if (Date.now() > leaseUntil.getTime() - config.dispatchLeaseMs / 4) return null;
    if (!signer) return finalOutcome(email, 'FAILED', { reason: 'the sending domain no longer exists' });
    const message = campaignMail?.message ?? withConfirmationLink(outgoingEmail(email), email);
    const all = envelopeOf(message, returnPathAddress(email.id, signer.domain, config.returnPathSubdomain));
    const skipped = all.to.filter((address) => suppressed.has(emails.suppressionKey(email.team_id, address.toLowerCase())));
    const envelope = { from: all.from, to: all.to.filter((address) => !skipped.includes(address)) };
    if (envelope.to.length === 0) return finalOutcome(email, 'SUPPRESSED', { recipients: skipped, reason: 'every recipient is on the suppression list' });
    const signed = signer.sign(buildMessage(message, now), now);
    const result = await transport.send(email.id, signed, envelope);
    if (result.kind === 'sent') totals.sent++;
    return outcomeOf(email, result, skipped, new Date(), config);
  };

  const writeOutcomes = async (token: string, outcomes: Outcome[]) => {
    for (let attempt = 1; ; attempt++) {
      try {
        totals.written += await emails.recordOutcomes(db, token, outcomes, new Date());
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

  localDispatchers.set(db, pump);
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
