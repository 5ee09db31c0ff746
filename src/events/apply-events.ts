import type { Db } from '../db/connection.js';
import type { EmailStatus, SuppressionReason } from '../db/schema.js';
import { addSuppressions, appendEvents, countOnce, unsubscribeRecipients, type Counted } from '../data/email-events.js';
import { releaseClaims, releaseWithEvents, type ClaimRelease } from '../data/emails.js';
import { engages, recordEngagement } from '../data/engagement.js';
import type { Metrics } from '../metrics/metrics.js';
import { countKinds, emailEventType, STATUS_RANK, statusAfter } from './contract.js';
import { runsEnded } from './automations.js';
import { callRow, listening, report, type Reported } from './outbox.js';
import { contactEvent, emailEvent, type EmailSnapshot } from './payloads.js';
import { guardReputation, type GuardDeps } from './reputation-guard.js';

/** One event of an email. */
export type EventInput = {
  teamId: number;
  /** The email as it is when the event happens: the event's payload tells of it. */
  email: EmailSnapshot;
  status: EmailStatus;
  data: Record<string, unknown> | null;
  /** Derived from a report: an event whose key the email already has is not applied again. */
  dedupeKey: string | null;
  /** Addresses the event shows undeliverable or unwilling: they go on the team's suppression list. */
  suppress?: { addresses: string[]; reason: SuppressionReason };
};

/** An email event as the outbox reports it. */
export const emailReported = (teamId: number, email: EmailSnapshot, event: { status: EmailStatus; data: Record<string, unknown> | null }, at: Date): Reported => ({
  teamId,
  subjectKey: email.id,
  domainId: email.domain_id,
  at,
  event: emailEvent(email, event.status, event.data, at),
});

/**
 * The one way an event reaches an email, whatever its source (the dispatcher, a DSN or ARF report,
 * a tracking hit): appends it (once per dedupe key), moves the email's status by rank, counts each
 * email once per kind on its campaign and its domain's day, suppresses the addresses it names,
 * takes a campaign or automation recipient who bounced hard or complained out of the book's mailing
 * (and out of its automation runs), keeps when
 * a campaign recipient last opened or clicked (after the campaign's counters, as every event takes
 * its locks: email, campaign, then contact), and writes the webhook calls all of that owes. Runs in
 * the caller's transaction; answers the events appended and what was newly counted.
 * `statusMoved`: the caller has moved the emails' status already (releaseClaims).
 */
export async function applyEvents(tx: Db, events: EventInput[], now: Date, statusMoved = false): Promise<{ appended: EventInput[]; counted: Counted[] }> {
  const fresh = await appendEvents(
    tx,
    events.map((event) => ({ teamId: event.teamId, emailId: event.email.id, status: event.status, data: event.data, dedupeKey: event.dedupeKey })),
    now,
    statusMoved ? null : STATUS_RANK,
  );
  const appended = events.filter((_, index) => fresh[index]);
  await addSuppressions(
    tx,
    events.flatMap((event) =>
      (event.suppress?.addresses ?? []).map((email) => ({ teamId: event.teamId, email, reason: event.suppress!.reason, sourceEmailId: event.email.id })),
    ),
    now,
  );
  const counted = await countOnce(tx, appended.flatMap((event) => countKinds(event).map((kind) => ({ teamId: event.teamId, emailId: event.email.id, kind }))), now);
  const unsubscribed = await unsubscribeRecipients(
    tx,
    counted.flatMap((c) =>
      (c.kind === 'hard_bounced' || c.kind === 'complained') && c.contactId !== null
        ? [{ teamId: c.teamId, emailId: c.emailId, reason: c.kind === 'complained' ? ('COMPLAINED' as const) : ('BOUNCED' as const) }]
        : [],
    ),
    now,
  );
  for (const contact of unsubscribed) {
    await runsEnded(tx, { teamId: contact.team_id, bookId: contact.contact_book_id, contactIds: [contact.id] }, (contact.unsubscribe_reason ?? 'UNSUBSCRIBED').toLowerCase(), now);
  }
  await recordEngagement(
    tx,
    appended.flatMap((event) => (engages(event.status) ? [{ teamId: event.teamId, emailId: event.email.id, status: event.status }] : [])),
    now,
  );
  await report(tx, [
    ...appended.map((event) => emailReported(event.teamId, event.email, event, now)),
    ...unsubscribed.map((contact): Reported => ({ teamId: contact.team_id, subjectKey: contact.id, domainId: null, at: now, event: contactEvent('contact.updated', contact) })),
  ]);
  return { appended, counted };
}

export type EventDeps = GuardDeps & { metrics: Pick<Metrics, 'emailsReached'> };

/** The status changes of committed events, for mailroom_emails_total. */
export function countStatusChanges(metrics: EventDeps['metrics'], appended: { status: EmailStatus }[]): void {
  for (const event of appended) metrics.emailsReached(event.status);
}

/** Applies events in a transaction of their own, then has the reputation guard look at what they counted. */
export async function recordEvents(deps: EventDeps, events: EventInput[]): Promise<void> {
  const { appended, counted } = await deps.db.transaction().execute((tx) => applyEvents(tx, events, new Date()));
  countStatusChanges(deps.metrics, appended);
  await guardReputation(deps, counted);
}

/** What one attempt did to a claimed email: the claim let go with its next attempt, and the events it made. */
export type ClaimOutcome = Omit<ClaimRelease, 'status'> & {
  email: EmailSnapshot;
  events: Pick<EventInput, 'status' | 'data' | 'suppress'>[];
};

/** Whether an outcome is what sending usually leaves: nothing to suppress, no hard bounce or complaint to count, no engagement. */
const isPlain = (outcome: ClaimOutcome) =>
  outcome.events.every(
    (event) => !event.suppress && !engages(event.status) && countKinds(event).every((kind) => kind !== 'hard_bounced' && kind !== 'complained'),
  );

/**
 * Writes what attempts did, at once: the rows whose claim still holds get their next attempt,
 * their new status and their events; a lost claim's events are its new claimant's to write. Plain
 * outcomes, nearly all of them, take one statement (releaseWithEvents) after a read of which
 * webhooks listen; the rest a transaction through applyEvents, after which the reputation guard
 * looks at what was counted. Answers the ids written.
 */
export async function applyClaimOutcomes(deps: EventDeps, outcomes: ClaimOutcome[], now: Date): Promise<Set<string>> {
  const releases = outcomes.map((outcome) => ({ ...outcome, status: statusAfter(outcome.events) }));
  if (outcomes.every(isPlain)) {
    const events = outcomes.flatMap((outcome) =>
      outcome.events.map((event) => ({ teamId: outcome.teamId, emailId: outcome.id, status: event.status, data: event.data, kinds: countKinds(event) })),
    );
    // A payload is built only for an event some webhook takes: most mail has none listening, and
    // building, sending and parsing payloads for nothing cost more than the read that says so.
    const heard = await listening(deps.db, [...new Set(outcomes.map((outcome) => outcome.teamId))]);
    const calls = outcomes.flatMap((outcome) =>
      outcome.events
        .filter((event) => heard(outcome.teamId, emailEventType(event.status), outcome.email.domain_id))
        .map((event) => callRow(emailReported(outcome.teamId, outcome.email, event, now))),
    );
    const { written, appended } = await releaseWithEvents(deps.db, { releases, events, calls, ranks: STATUS_RANK }, now);
    countStatusChanges(deps.metrics, appended);
    return written;
  }
  const { written, appended, counted } = await deps.db.transaction().execute(async (tx) => {
    const written = await releaseClaims(tx, releases, STATUS_RANK, now);
    const events = outcomes
      .filter((outcome) => written.has(outcome.id))
      .flatMap((outcome) => outcome.events.map((event): EventInput => ({ ...event, teamId: outcome.teamId, email: outcome.email, dedupeKey: null })));
    return { written, ...(await applyEvents(tx, events, now, true)) };
  });
  countStatusChanges(deps.metrics, appended);
  await guardReputation(deps, counted);
  return written;
}
