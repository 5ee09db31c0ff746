import { createHash } from 'node:crypto';
import { findEmailForFeedback } from '../data/emails.js';
import { recordEvents, type EventInput } from '../events/apply-events.js';
import type { GuardDeps } from '../events/reputation-guard.js';

/** A tracking hit on an email, kept once per dedupe key; false when no such email exists. */
async function recordTracking(deps: GuardDeps, emailId: string, event: Pick<EventInput, 'status' | 'data' | 'dedupeKey'>): Promise<boolean> {
  const email = await findEmailForFeedback(deps.db, emailId);
  if (!email) return false;
  await recordEvents(deps, [{ teamId: email.team_id, emailId, ...event }]);
  return true;
}

/** The first open of an email (the pixel loaded). */
export const recordOpen = (deps: GuardDeps, emailId: string, userAgent: string | null) =>
  recordTracking(deps, emailId, { status: 'OPENED', data: { userAgent }, dedupeKey: 'open' });

/** The first click on each link of an email. */
export const recordClick = (deps: GuardDeps, emailId: string, url: string, userAgent: string | null) =>
  recordTracking(deps, emailId, { status: 'CLICKED', data: { url, userAgent }, dedupeKey: `click:${createHash('sha256').update(url).digest('hex').slice(0, 32)}` });
