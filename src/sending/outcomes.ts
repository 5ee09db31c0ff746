import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../config.js';
import type { ClaimedEmail } from '../data/emails.js';
import type { Deps } from '../deps.js';
import { applyClaimOutcomes, type ClaimOutcome } from '../events/apply-events.js';
import { envelopeOf } from '../mail/mime.js';
import { outgoingEmail } from './compose.js';
import { nextAttempt } from './retry-policy.js';
import type { DeliveryResult } from './transports/index.js';

/** What one attempt did to an email: its events, and when to try again (null: nothing left to send). */
export type Outcome = ClaimOutcome;

/** The row an outcome is written to, under the claim it was sent with. */
const claimOf = (email: ClaimedEmail) => ({ teamId: email.team_id, id: email.id, claimedBy: email.claimed_by!, email });

/** The outcome of one attempt, from what the transport answered. */
export function outcomeOf(email: ClaimedEmail, result: DeliveryResult, skipped: string[], now: Date, config: Config): Outcome {
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
