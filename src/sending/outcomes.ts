import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../config.js';
import type { ClaimedEmail } from '../data/emails.js';
import type { Deps } from '../deps.js';
import { applyClaimOutcomes, type ClaimOutcome } from '../events/apply-events.js';
import { envelopeOf } from '../mail/mime.js';
import { outgoingEmail } from './compose.js';
import { nextAttempt } from './retry-policy.js';
import type { DeliveryResult, RecipientResult } from './transports/index.js';

/** What one attempt did to an email: its events, and when to try again (null: nothing left to send). */
export type Outcome = ClaimOutcome;

/** The row an outcome is written to, under the claim it was sent with. */
const claimOf = (email: ClaimedEmail) => ({ teamId: email.team_id, id: email.id, claimedBy: email.claimed_by!, email });

/** The outcome of one attempt, from what the transport answered. */
export function outcomeOf(email: ClaimedEmail, result: DeliveryResult, skipped: string[], now: Date, config: Config): Outcome {
  if (result.kind === 'recipients') return recipientsOutcome(email, result.results, skipped, now, config);
  const base = { ...claimOf(email), attempts: email.attempts + 1 };
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

type Result<S extends RecipientResult['status']> = Extract<RecipientResult, { status: S }>;

/** Results that share what they say (the same server's same reply), each group with its recipients. */
function grouped<R extends RecipientResult>(results: R[], key: (result: R) => string): R[][] {
  const groups = new Map<string, R[]>();
  for (const result of results) groups.set(key(result), [...(groups.get(key(result)) ?? []), result]);
  return [...groups.values()];
}

const addresses = (results: RecipientResult[]) => results.map((result) => result.address);

/** Where an answer came from, as event details name it (the reply is the diagnostic). */
const remoteOf = (result: Result<'delivered'> | Result<'bounced'> | Result<'deferred'>) =>
  result.remote ? { remoteMta: result.remote.host, remoteAddress: result.remote.address, tls: result.remote.tls } : {};

/**
 * The outcome of an attempt whose recipients each had their own answer (direct delivery). Those
 * delivered make SENT and DELIVERED (one DELIVERED per server), those refused for good BOUNCED
 * (Permanent; suppressed where the refusal was the recipient's), those refused for now
 * DELIVERY_DELAYED with a retry, or BOUNCED (Transient) once the retry window has passed. Only the
 * recipients still owed are tried next time; those postponed untried (a paused or busy
 * destination) count no attempt and wait for the time they were given.
 */
function recipientsOutcome(email: ClaimedEmail, results: RecipientResult[], skipped: string[], now: Date, config: Config): Outcome {
  const of = <S extends RecipientResult['status']>(status: S) => results.filter((r): r is Result<S> => r.status === status);
  const [delivered, bounced, deferred, postponed] = [of('delivered'), of('bounced'), of('deferred'), of('postponed')];
  const attempts = email.attempts + (results.length > postponed.length ? 1 : 0);
  const suppressedNote = skipped.length > 0 ? { suppressed: skipped } : {};
  const events: Outcome['events'] = [];
  if (delivered.length > 0) {
    events.push({ status: 'SENT', data: { recipients: addresses(delivered), ...suppressedNote } });
    for (const group of grouped(delivered, (r) => `${r.remote.host} ${r.remote.address}`)) {
      events.push({ status: 'DELIVERED', data: { recipients: addresses(group), ...remoteOf(group[0]!), response: group[0]!.reply } });
    }
  }
  const bounce = (group: Array<Result<'bounced'> | Result<'deferred'>>, bounceType: 'Permanent' | 'Transient') => ({
    status: 'BOUNCED' as const,
    data: { bounceType, recipients: addresses(group), ...remoteOf(group[0]!), response: group[0]!.reply, code: group[0]!.code },
    ...(bounceType === 'Permanent' && group[0]!.suppress ? { suppress: { addresses: addresses(group), reason: 'HARD_BOUNCE' as const } } : {}),
  });
  for (const group of grouped(bounced, (r) => `${r.suppress} ${r.remote?.address} ${r.reply}`)) events.push(bounce(group, 'Permanent'));

  let retryAt: Date | null = null;
  if (deferred.length > 0) {
    retryAt = nextAttempt(email, attempts, now, config);
    for (const group of grouped(deferred, (r) => `${r.remote?.address} ${r.reply}`)) {
      events.push(
        retryAt === null
          ? bounce(group, 'Transient')
          : { status: 'DELIVERY_DELAYED', data: { recipients: addresses(group), ...remoteOf(group[0]!), response: group[0]!.reply, code: group[0]!.code, attempt: attempts, nextAttemptAt: retryAt.toISOString() } },
      );
    }
  }
  // Still owed: the deferred while their window lasts, and the postponed, who were never tried.
  const owed = [...(retryAt ? deferred : []), ...postponed];
  const dueAgain = [...(retryAt ? [retryAt.getTime()] : []), ...postponed.map((r) => r.until.getTime())];
  return {
    ...claimOf(email),
    attempts,
    sendAt: owed.length > 0 ? new Date(Math.min(...dueAgain)) : null,
    pendingRecipients: owed.length > 0 ? addresses(owed) : null,
    destination: owed.find((r) => r.destination)?.destination ?? null,
    events,
  };
}

/** An email that ends without being sent (deleted domain, every recipient suppressed, cancelled). */
export const finalOutcome = (email: ClaimedEmail, status: 'FAILED' | 'SUPPRESSED' | 'CANCELLED', data: Record<string, unknown>): Outcome => ({
  ...claimOf(email), attempts: email.attempts, sendAt: null, events: [{ status, data }],
});

/** Back as it was, without a send time: the mail of a paused campaign waits for its resume. */
export const heldOutcome = (email: ClaimedEmail): Outcome => ({ ...claimOf(email), attempts: email.attempts, sendAt: null, events: [] });

/** An email let go unsent, due again at once: what a stopping dispatcher does with mail it has not begun to send. */
export const releasedOutcome = (email: ClaimedEmail, now: Date): Outcome => ({ ...heldOutcome(email), sendAt: now });

// Outcomes are retried this often before the batch is left to its lease (and so may go out twice).
const WRITE_TRIES = 5;

/** Records outcomes (applyClaimOutcomes), trying again a few times when the database fails. Answers how many rows were written. */
export async function recordOutcomes(
  deps: Pick<Deps, 'db' | 'config' | 'log' | 'metrics'>,
  outcomes: Outcome[],
  stopped: () => boolean,
): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await applyClaimOutcomes(deps, outcomes, new Date())).size;
    } catch (error) {
      if (attempt >= WRITE_TRIES || stopped()) throw error;
      deps.log.warn('writing outcomes failed; trying again', { error, attempt });
      await delay(250 * 2 ** attempt);
    }
  }
}
