import type { Db } from '../db/connection.js';
import { activeSubscriptions, insertCalls, type CallRow } from '../data/webhook-outbox.js';
import type { Event, EventType } from './contract.js';

/**
 * One event for the outbox: whose it is, its subject (one subject's calls to a webhook go out in
 * the order they were written), the domain whose webhooks may filter on it (email events), when
 * it happened, the event itself, and the only webhooks that may hear it (an inbound route's).
 */
export type Reported = { teamId: number; subjectKey: string | null; domainId: number | null; at: Date; event: Event; onlyWebhooks?: string[] };

export const callRow = (reported: Reported): CallRow => ({
  team_id: reported.teamId,
  type: reported.event.type,
  subject_key: reported.subjectKey,
  domain_id: reported.domainId,
  data: reported.event.data,
  at_ms: reported.at.getTime(),
  ...(reported.onlyWebhooks && { webhook_ids: reported.onlyWebhooks }),
});

/** Writes the calls the events owe to the webhooks that take them, in the caller's transaction, in order. */
export async function report(tx: Db, reported: Reported[]): Promise<void> {
  await insertCalls(tx, reported.map(callRow));
}

export type Listening = (teamId: number, type: EventType, domainId: number | null) => boolean;

/**
 * Whether any active webhook of a team takes an event: where building a payload needs more reads
 * than the change itself (a campaign's released mail, a contact's row), they are made only when
 * someone listens. Read in the writing transaction, so a webhook made before it is heard.
 */
export async function listening(tx: Db, teamIds: number[]): Promise<Listening> {
  const subscriptions = await activeSubscriptions(tx, teamIds);
  return (teamId, type, domainId) =>
    subscriptions.some(
      (s) => s.team_id === teamId && (s.events.length === 0 || s.events.includes(type)) && (domainId === null || s.domain_ids.length === 0 || s.domain_ids.includes(domainId)),
    );
}
