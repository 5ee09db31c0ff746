import type { Db } from '../db/connection.js';
import type { EmailStatus } from '../db/schema.js';
import { cancelCampaignEmails, type CampaignRow } from '../data/campaigns.js';
import { changeSchedule, contactOfNew, insertEmails, type EmailRow, type NewEmail } from '../data/emails.js';
import { emailReported } from './apply-events.js';
import { firstStatus } from './contract.js';
import { callRow, listening, report, type Reported } from './outbox.js';
import type { EmailSnapshot } from './payloads.js';

/** What an email event's payload tells of an email not yet stored. */
const snapshotOfNew = (email: NewEmail): EmailSnapshot => ({
  id: email.id,
  from_address: email.from,
  to_addresses: email.to,
  subject: email.subject,
  campaign_id: null,
  contact_id: contactOfNew(email),
  domain_id: email.domainId,
  template_id: email.templateId ?? null,
});

/**
 * Stores new emails, each with its first status (SCHEDULED or QUEUED) and the webhook call its
 * first event owes, in one statement.
 */
export async function storeNewEmails(db: Db, emails: NewEmail[]): Promise<void> {
  const statuses = emails.map(firstStatus);
  const calls = emails.map((email, index) => callRow(emailReported(email.teamId, snapshotOfNew(email), { status: statuses[index]!, data: null }, email.createdAt)));
  await insertEmails(db, emails, statuses, calls);
}

/**
 * Cancels (`sendAt` null) or reschedules a SCHEDULED email no dispatcher has claimed, with its
 * event and the call it owes; `email` is the row as it was read just before. Undefined when the
 * email was no longer SCHEDULED and unclaimed, and nothing changed.
 */
export function changeEmailSchedule(
  db: Db,
  email: EmailRow,
  change: { status: 'CANCELLED' | 'SCHEDULED'; sendAt: Date | null; data: Record<string, unknown> | null; now: Date },
) {
  const call = callRow(emailReported(email.team_id, email, change, change.now));
  return changeSchedule(db, email.team_id, email.id, { ...change, call });
}

/** Reports events of emails a statement wrote in the caller's transaction, each the email as that statement left it. */
export async function reportEmailEvents(tx: Db, events: Array<{ teamId: number; email: EmailSnapshot; status: EmailStatus; data: Record<string, unknown> | null }>, now: Date) {
  await report(tx, events.map((event): Reported => emailReported(event.teamId, event.email, event, now)));
}

/**
 * Cancels the mail of a campaign being deleted that no dispatcher holds and that has not gone out,
 * each with its CANCELLED event and the calls it owes, in the caller's transaction. Answers how
 * many were cancelled.
 */
export async function cancelCampaignMail(tx: Db, campaign: CampaignRow, now: Date): Promise<number> {
  const teamId = campaign.team_id;
  const heard = (await listening(tx, [teamId]))(teamId, 'email.cancelled', campaign.domain_id);
  const data = { reason: 'campaign deleted' };
  const { count, rows } = await cancelCampaignEmails(tx, { teamId, campaignId: campaign.id, data, now, withRows: heard });
  await reportEmailEvents(tx, rows.map((email) => ({ teamId, email, status: 'CANCELLED' as const, data })), now);
  return count;
}
