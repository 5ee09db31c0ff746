import type { Config } from '../config.js';
import { domainNameExists } from '../data/domains.js';
import type { Deps } from '../deps.js';
import { signedHeaderFields } from '../domains/dkim.js';
import { findEmailForFeedback, type FeedbackEmail } from '../data/emails.js';
import type { EmailStatus } from '../db/schema.js';
import { recordEvents, type EventDeps, type EventInput } from '../events/apply-events.js';
import { addressOf } from '../mail/address.js';
import { parseFeedbackTag, parseVerp, returnPathHost, type TaggedEmail, type VerpAddress } from '../mail/verp.js';
import { unsubscribe } from '../services/subscriptions.js';
import { fieldValue } from '../mail/header-fields.js';
import { angleAddress, type DsnRecipient, type Report } from './reports.js';

export type FeedbackDeps = EventDeps & Pick<Deps, 'tokens'> & { config: EventDeps['config'] & Pick<Config, 'returnPathSubdomain'> };

/** The email an address on a return-path host names, when that host is its domain's. */
async function emailAt(deps: FeedbackDeps, emailId: string, host: string): Promise<FeedbackEmail | null> {
  const email = await findEmailForFeedback(deps.db, emailId);
  if (!email?.domain_name) return null;
  return returnPathHost(email.domain_name, deps.config.returnPathSubdomain) === host ? email : null;
}

/** The email a tagged id names, when its tag is the one we made for it and `host` is its domain's return-path host. */
async function emailOfTagged(deps: FeedbackDeps, tagged: TaggedEmail, host: string): Promise<FeedbackEmail | null> {
  if (!deps.tokens.checkAddressTag(tagged.emailId, tagged.tag)) return null;
  return emailAt(deps, tagged.emailId, host);
}

/**
 * Which of Mailroom's addresses an inbound recipient is: a VERP address (with its valid tag) of an
 * email sent from that host's domain, or the feedback-loop address of a known domain. Null: refuse
 * it at RCPT.
 */
export async function resolveInboundRecipient(deps: FeedbackDeps, address: string): Promise<VerpAddress | null> {
  const verp = parseVerp(address);
  if (!verp) return null;
  const prefix = `${deps.config.returnPathSubdomain}.`;
  if (!verp.host.startsWith(prefix)) return null;
  if (verp.kind === 'fbl') return (await domainNameExists(deps.db, verp.host.slice(prefix.length))) ? verp : null;
  return (await emailOfTagged(deps, verp, verp.host)) ? verp : null;
}

/**
 * The email a report is about, believed only with proof that the sender of the report holds mail
 * we sent: the tagged VERP address it came to; or else (mail to the feedback-loop address) the
 * tagged return path or feedback header the quoted original carries, or the quoted original's
 * header block bearing a DKIM signature made with the domain's key over its Message-ID. A
 * Message-ID alone proves nothing: it is no secret. A quoted block that repeats a field
 * attribution reads proves nothing either (reports.ts reads none of it).
 */
async function attribute(deps: FeedbackDeps, to: VerpAddress, report: Report): Promise<FeedbackEmail | null> {
  if (to.kind !== 'fbl') return emailOfTagged(deps, to, to.host);
  const returnPath = report.original.returnPath ? parseVerp(report.original.returnPath) : null;
  if (returnPath?.kind === 'bounces') return emailOfTagged(deps, returnPath, to.host);
  const feedbackTag = report.original.feedbackTag ? parseFeedbackTag(report.original.feedbackTag) : null;
  if (feedbackTag) return emailOfTagged(deps, feedbackTag, to.host);
  const { messageId, headers } = report.original;
  if (!messageId?.includes('@') || !headers) return null;
  const email = await emailAt(deps, messageId.slice(0, messageId.lastIndexOf('@')), to.host);
  if (!email?.dkim_selector || !email.dkim_public_key) return null;
  const signed = signedHeaderFields(headers, { domain: email.domain_name!, selector: email.dkim_selector, publicKey: email.dkim_public_key });
  // The Message-ID that names the email must be the very field the signature covers.
  const signedMessageIds = signed?.filter((field) => field.name === 'message-id').map((field) => angleAddress(fieldValue(field))) ?? [];
  return signedMessageIds.length === 1 && `<${signedMessageIds[0]}>` === email.message_id ? email : null;
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

/**
 * The events a report makes for its email; each carries a key from the report, so the same report
 * applies once. Only what the report says of the email's own recipients counts, and only once the
 * email was handed over: nothing can bounce or be complained about before it left.
 */
function reportEvents(email: FeedbackEmail, report: Report): EventInput[] {
  if (!email.handed_over) return [];
  const base = { teamId: email.team_id, email };
  const own = recipientsOf(email);
  if (report.kind === 'dsn') {
    return report.recipients.flatMap((recipient): EventInput[] => {
      const event = dsnEvent(recipient, report.reportingMta);
      const address = recipient.recipient.toLowerCase();
      if (!event || !own.includes(address)) return [];
      const suppress = event.status === 'BOUNCED' ? { suppress: { addresses: [address], reason: 'HARD_BOUNCE' as const } } : {};
      return [{ ...base, ...event, dedupeKey: `dsn:${report.fingerprint}:${address}`, ...suppress }];
    });
  }
  // "not-spam" is a recipient taking a message out of their spam folder: good news, no complaint.
  if (report.feedbackType === 'not-spam') return [];
  const named = report.recipients.map((address) => address.toLowerCase()).filter((address) => own.includes(address));
  // A report that names its complainants, none of them a recipient of this email, is about someone else.
  if (report.recipients.length > 0 && named.length === 0) return [];
  const complainants = named.length > 0 ? named : own.length === 1 ? own : [];
  return [{
    ...base,
    status: 'COMPLAINED',
    data: { feedbackType: report.feedbackType, recipients: complainants, userAgent: report.userAgent, sourceIp: report.sourceIp, arrivalDate: report.arrivalDate },
    dedupeKey: `arf:${report.fingerprint}`,
    ...(complainants.length > 0 ? { suppress: { addresses: complainants, reason: 'COMPLAINT' as const } } : {}),
  }];
}

/**
 * Applies a bounce or complaint report that came to one of Mailroom's addresses; null when it
 * proves no email of ours, or says nothing believable about one.
 */
export async function applyReport(deps: FeedbackDeps, to: VerpAddress, report: Report): Promise<{ emailId: string; events: string[] } | null> {
  const email = await attribute(deps, to, report);
  if (!email) return null;
  const events = reportEvents(email, report);
  if (events.length === 0) return null;
  await recordEvents(deps, events);
  return { emailId: email.id, events: events.map((event) => event.status) };
}

/** A message to the List-Unsubscribe mailto: address unsubscribes the campaign or automation recipient, as the link does. */
export async function unsubscribeByMail(deps: FeedbackDeps, to: VerpAddress): Promise<boolean> {
  if (to.kind !== 'unsubscribe') return false;
  const email = await emailOfTagged(deps, to, to.host);
  if (!email?.contact_id || !email.contact_book_id) return false;
  return unsubscribe(deps, { teamId: email.team_id, campaignId: email.campaign_id ?? '', emailId: email.id, bookId: email.contact_book_id, contactId: email.contact_id });
}
