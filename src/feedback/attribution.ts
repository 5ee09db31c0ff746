import type { Config } from '../config.js';
import { domainNameExists } from '../data/domains.js';
import { findEmailForFeedback, type FeedbackEmail } from '../data/emails.js';
import type { EmailStatus } from '../db/schema.js';
import { recordEvents, type EventInput } from '../events/apply-events.js';
import type { GuardDeps } from '../events/reputation-guard.js';
import { addressOf } from '../mail/address.js';
import { parseVerp, returnPathHost, type VerpAddress } from '../mail/verp.js';
import { unsubscribe } from '../services/subscriptions.js';
import type { DsnRecipient, Report } from './reports.js';

export type FeedbackDeps = GuardDeps & { config: GuardDeps['config'] & Pick<Config, 'returnPathSubdomain'> };

/** The email an address on a return-path host names, when that host is its domain's. */
async function emailAt(deps: FeedbackDeps, emailId: string, host: string): Promise<FeedbackEmail | null> {
  const email = await findEmailForFeedback(deps.db, emailId);
  if (!email?.domain_name) return null;
  return returnPathHost(email.domain_name, deps.config.returnPathSubdomain) === host ? email : null;
}

/**
 * Which of Mailroom's addresses an inbound recipient is: a VERP address of an email sent from that
 * host's domain, or the feedback-loop address of a known domain. Null: refuse it at RCPT.
 */
export async function resolveInboundRecipient(deps: FeedbackDeps, address: string): Promise<VerpAddress | null> {
  const verp = parseVerp(address);
  if (!verp) return null;
  const prefix = `${deps.config.returnPathSubdomain}.`;
  if (!verp.host.startsWith(prefix)) return null;
  if (verp.kind === 'fbl') return (await domainNameExists(deps.db, verp.host.slice(prefix.length))) ? verp : null;
  return (await emailAt(deps, verp.emailId, verp.host)) ? verp : null;
}

/**
 * The email a report is about: the one its VERP address names, or else (mail to the feedback-loop
 * address) the one the quoted original names by its Return-Path or Message-ID, sent from the
 * domain the report came to.
 */
async function attribute(deps: FeedbackDeps, to: VerpAddress, report: Report): Promise<FeedbackEmail | null> {
  if (to.kind !== 'fbl') return emailAt(deps, to.emailId, to.host);
  const returnPath = report.original.returnPath ? parseVerp(report.original.returnPath) : null;
  if (returnPath?.kind === 'bounces') return emailAt(deps, returnPath.emailId, to.host);
  const messageId = report.original.messageId;
  if (!messageId?.includes('@')) return null;
  const email = await emailAt(deps, messageId.slice(0, messageId.lastIndexOf('@')), to.host);
  return email?.message_id === `<${messageId}>` ? email : null;
}

const recipientsOf = (email: FeedbackEmail) =>
  [...email.to_addresses, ...email.cc_addresses, ...email.bcc_addresses].map((mailbox) => addressOf(mailbox).toLowerCase());

/** The enhanced status class of a DSN recipient: its Status, or else the reply code in its diagnostic. */
function statusClass(recipient: DsnRecipient): '2' | '4' | '5' | null {
  const code = recipient.status ?? /\b([245])\d\d\b/.exec(recipient.diagnostic ?? '')?.[1] ?? null;
  return (code?.[0] as '2' | '4' | '5' | undefined) ?? null;
}

/** What one DSN recipient line means for the email. */
function dsnEvent(recipient: DsnRecipient, reportingMta: string | null): { status: EmailStatus; data: Record<string, unknown> } | null {
  const detail = { recipient: recipient.recipient, action: recipient.action, status: recipient.status, diagnostic: recipient.diagnostic, remoteMta: recipient.remoteMta, reportingMta };
  if (recipient.action === 'failed') {
    return statusClass(recipient) === '5'
      ? { status: 'BOUNCED', data: { bounceType: 'Permanent', ...detail } }
      : { status: 'DELIVERY_DELAYED', data: detail };
  }
  if (recipient.action === 'delayed') return { status: 'DELIVERY_DELAYED', data: detail };
  if (['delivered', 'relayed', 'expanded'].includes(recipient.action)) return { status: 'DELIVERED', data: detail };
  return null;
}

/** The events a report makes for its email; each carries a key from the report, so the same report applies once. */
function reportEvents(email: FeedbackEmail, report: Report): EventInput[] {
  const base = { teamId: email.team_id, emailId: email.id };
  const own = recipientsOf(email);
  if (report.kind === 'dsn') {
    return report.recipients.flatMap((recipient): EventInput[] => {
      const event = dsnEvent(recipient, report.reportingMta);
      if (!event) return [];
      const address = recipient.recipient.toLowerCase();
      const suppress = event.status === 'BOUNCED' && own.includes(address) ? { addresses: [address], reason: 'HARD_BOUNCE' as const } : undefined;
      return [{ ...base, ...event, dedupeKey: `dsn:${report.fingerprint}:${address}`, ...(suppress ? { suppress } : {}) }];
    });
  }
  // "not-spam" is a recipient taking a message out of their spam folder: good news, no complaint.
  if (report.feedbackType === 'not-spam') return [];
  const named = report.recipients.map((address) => address.toLowerCase()).filter((address) => own.includes(address));
  const complainants = named.length > 0 ? named : own.length === 1 ? own : [];
  return [{
    ...base,
    status: 'COMPLAINED',
    data: { feedbackType: report.feedbackType, recipients: complainants, userAgent: report.userAgent, sourceIp: report.sourceIp, arrivalDate: report.arrivalDate },
    dedupeKey: `arf:${report.fingerprint}`,
    ...(complainants.length > 0 ? { suppress: { addresses: complainants, reason: 'COMPLAINT' as const } } : {}),
  }];
}

/** Applies a bounce or complaint report that came to one of Mailroom's addresses; null when no email of ours is its subject. */
export async function applyReport(deps: FeedbackDeps, to: VerpAddress, report: Report): Promise<{ emailId: string; events: string[] } | null> {
  const email = await attribute(deps, to, report);
  if (!email) return null;
  const events = reportEvents(email, report);
  await recordEvents(deps, events);
  return { emailId: email.id, events: events.map((event) => event.status) };
}

/** A message to the List-Unsubscribe mailto: address unsubscribes the campaign recipient, as the link does. */
export async function unsubscribeByMail(deps: FeedbackDeps, to: VerpAddress): Promise<boolean> {
  if (to.kind !== 'unsubscribe') return false;
  const email = await emailAt(deps, to.emailId, to.host);
  if (!email?.campaign_id || !email.contact_id || !email.contact_book_id) return false;
  return unsubscribe(deps, { teamId: email.team_id, campaignId: email.campaign_id, emailId: email.id, bookId: email.contact_book_id, contactId: email.contact_id });
}
