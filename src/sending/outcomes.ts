import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../config.js';
import * as emails from '../data/emails.js';
import type { ClaimedEmail, ClaimRelease } from '../data/emails.js';
import type { Deps } from '../deps.js';
import { countKinds, statusAfter } from '../data/email-events.js';
import { applyEvents, countStatusChanges, type EventInput } from '../events/apply-events.js';
import { guardReputation } from '../events/reputation-guard.js';
import { envelopeOf } from '../mail/mime.js';
import { outgoingEmail } from './compose.js';
import { nextAttempt } from './retry-policy.js';
import type { DeliveryResult } from './transports/index.js';

/** What one attempt did to an email: its events, and when to try again (null: nothing left to send). */
export type Outcome = Omit<ClaimRelease, 'status'> & { events: Omit<EventInput, 'teamId' | 'emailId' | 'dedupeKey'>[] };

/** The row an outcome is written to, under the claim it was sent with. */
const claimOf = (email: ClaimedEmail) => ({ teamId: email.team_id, id: email.id, claimedBy: email.claimed_by! });

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

/** Whether an outcome is what sending usually leaves: nothing to suppress, no hard bounce or complaint to count. */
const isPlain = (outcome: Outcome) =>
  outcome.events.every((event) => !event.suppress && countKinds(event).every((kind) => kind !== 'hard_bounced' && kind !== 'complained'));

/**
 * Writes outcomes at once: the rows whose claim still holds get their next attempt and their
 * events; a lost claim's events are its new claimant's to write. Plain outcomes take one statement;
 * the rest a transaction through applyEvents, after which the reputation guard looks at what was
 * counted. Answers how many rows were written.
 */
async function writeOutcomes(deps: Pick<Deps, 'db' | 'config' | 'log' | 'metrics'>, outcomes: Outcome[], now: Date): Promise<number> {
  const releases = outcomes.map((outcome) => ({ ...outcome, status: statusAfter(outcome.events) }));
  if (outcomes.every(isPlain)) {
    const events = outcomes.flatMap((outcome) =>
      outcome.events.map((event) => ({ teamId: outcome.teamId, emailId: outcome.id, status: event.status, data: event.data, kinds: countKinds(event) })),
    );
    const { written, appended } = await emails.releaseWithEvents(deps.db, releases, events, now);
    countStatusChanges(deps.metrics, appended);
    return written.size;
  }
  const { written, appended, counted } = await deps.db.transaction().execute(async (tx) => {
    const written = await emails.releaseClaims(tx, releases, now);
    const events = outcomes
      .filter((outcome) => written.has(outcome.id))
      .flatMap((outcome) => outcome.events.map((event) => ({ ...event, teamId: outcome.teamId, emailId: outcome.id, dedupeKey: null })));
    return { written, ...(await applyEvents(tx, events, now, true)) };
  });
  countStatusChanges(deps.metrics, appended);
  await guardReputation(deps, counted);
  return written.size;
}

/** Records outcomes (writeOutcomes), trying again a few times when the database fails. Answers how many rows were written. */
export async function recordOutcomes(
  deps: Pick<Deps, 'db' | 'config' | 'log' | 'metrics'>,
  outcomes: Outcome[],
  stopped: () => boolean,
): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await writeOutcomes(deps, outcomes, new Date());
    } catch (error) {
      if (attempt >= WRITE_TRIES || stopped()) throw error;
      deps.log.warn('writing outcomes failed; trying again', { error, attempt });
      await delay(250 * 2 ** attempt);
    }
  }
}
