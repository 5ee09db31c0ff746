import type { Db } from '../db/connection.js';
import type { SuppressionReason } from '../db/schema.js';
import { addSuppressions, appendEvents, countKinds, countOnce, unsubscribeRecipients, type Counted, type NewEvent } from '../data/email-events.js';
import type { Metrics } from '../metrics/metrics.js';
import { guardReputation, type GuardDeps } from './reputation-guard.js';

export type EventInput = NewEvent & {
  /** Addresses the event shows undeliverable or unwilling: they go on the team's suppression list. */
  suppress?: { addresses: string[]; reason: SuppressionReason };
};

/**
 * The one way an event reaches an email, whatever its source (the dispatcher, a DSN or ARF report,
 * a tracking hit): appends it (once per dedupe key), moves the email's status by precedence,
 * counts each email once per kind on its campaign and its domain's day, suppresses the addresses it
 * names, and takes a campaign recipient who bounced hard or complained out of the book's mailing.
 * Runs in the caller's transaction; answers the events appended and what was newly counted.
 * `statusMoved`: the caller has moved the emails' status already (releaseClaims).
 */
export async function applyEvents(tx: Db, events: EventInput[], now: Date, statusMoved = false): Promise<{ appended: NewEvent[]; counted: Counted[] }> {
  const appended = await appendEvents(tx, events, now, statusMoved);
  await addSuppressions(
    tx,
    events.flatMap((event) =>
      (event.suppress?.addresses ?? []).map((email) => ({ teamId: event.teamId, email, reason: event.suppress!.reason, sourceEmailId: event.emailId })),
    ),
    now,
  );
  const counted = await countOnce(tx, appended.flatMap((event) => countKinds(event).map((kind) => ({ teamId: event.teamId, emailId: event.emailId, kind }))), now);
  await unsubscribeRecipients(
    tx,
    counted.flatMap((c) =>
      (c.kind === 'hard_bounced' || c.kind === 'complained') && c.campaignId !== null && c.contactId !== null
        ? [{ teamId: c.teamId, campaignId: c.campaignId, contactId: c.contactId, reason: c.kind === 'complained' ? ('COMPLAINED' as const) : ('BOUNCED' as const) }]
        : [],
    ),
    now,
  );
  return { appended, counted };
}

export type EventDeps = GuardDeps & { metrics: Pick<Metrics, 'emailsReached'> };

/** The status changes of committed events, for mailroom_emails_total. */
export function countStatusChanges(metrics: EventDeps['metrics'], appended: Pick<NewEvent, 'status'>[]): void {
  for (const event of appended) metrics.emailsReached(event.status);
}

/** Applies events in a transaction of their own, then has the reputation guard look at what they counted. */
export async function recordEvents(deps: EventDeps, events: EventInput[]): Promise<void> {
  const { appended, counted } = await deps.db.transaction().execute((tx) => applyEvents(tx, events, new Date()));
  countStatusChanges(deps.metrics, appended);
  await guardReputation(deps, counted);
}
