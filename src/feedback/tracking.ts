import { hash } from 'node:crypto';
import { findEmailForFeedback } from '../data/emails.js';
import { recordEvents, type EventDeps, type EventInput } from '../events/apply-events.js';

/** A tracking hit on an email, kept once per dedupe key; false when no such email exists. */
async function recordTracking(deps: EventDeps, emailId: string, event: Pick<EventInput, 'status' | 'data' | 'dedupeKey'>): Promise<boolean> {
  const email = await findEmailForFeedback(deps.db, emailId);
  if (!email) return false;
  await recordEvents(deps, [{ teamId: email.team_id, email, ...event }]);
  return true;
}

/** Who loaded the pixel or followed the link: their user agent, and the address the request came from. */
export type Reader = { userAgent: string | null; ip: string | null };

/** The first open of an email (the pixel loaded). */
export const recordOpen = (deps: EventDeps, emailId: string, reader: Reader) =>
  recordTracking(deps, emailId, { status: 'OPENED', data: { ...reader }, dedupeKey: 'open' });

/** The first click on each link of an email. */
export const recordClick = (deps: EventDeps, emailId: string, url: string, reader: Reader) =>
  recordTracking(deps, emailId, { status: 'CLICKED', data: { url, ...reader }, dedupeKey: `click:${hash('sha256', url, 'hex').slice(0, 32)}` });
