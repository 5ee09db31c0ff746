import type { Config } from '../config.js';
import type { ClaimedEmail } from '../data/emails.js';
import { escapeHtml } from '../mail/html.js';
import { addTracking, confirmationUrl, DOUBLE_OPT_IN_PLACEHOLDER, SYSTEM_LINK_PLACEHOLDER, systemLinkUrl } from '../mail/links.js';
import { buildMessage, envelopeOf, type Envelope, type OutgoingEmail } from '../mail/mime.js';
import type { RecipientTokens } from '../mail/tokens.js';
import { bounceAddress, FEEDBACK_TAG_HEADER, feedbackTagValue } from '../mail/verp.js';
import type { DomainSettings } from './domain-settings.js';

/** What becomes of a claimed campaign email: its message, or why it is not sent now. */
export type CampaignMail =
  | { kind: 'send'; message: OutgoingEmail }
  | { kind: 'hold' }
  | { kind: 'cancel'; reason: string };

/**
 * Renders the campaign mail of a claimed batch (the campaigns room provides it): the dispatcher
 * does not know how campaigns are personalised, only that their mail comes out of here.
 */
export type CampaignComposer = { prepare(batch: ClaimedEmail[]): Promise<Map<string, CampaignMail>> };

export type ComposeDeps = { config: Pick<Config, 'publicUrl' | 'returnPathSubdomain'>; tokens: RecipientTokens };

/** A claimed email row as the MIME builder takes it. */
export const outgoingEmail = (email: ClaimedEmail): OutgoingEmail => ({
  id: email.id,
  from: email.from_address,
  to: email.to_addresses,
  cc: email.cc_addresses,
  bcc: email.bcc_addresses,
  replyTo: email.reply_to_addresses,
  subject: email.subject,
  html: email.html,
  text: email.text,
  headers: email.headers,
  attachments: email.attachments,
  messageId: email.message_id,
});

/** A double opt-in confirmation gets its signed link now, so no token is ever stored. */
function withConfirmationLink(deps: ComposeDeps, message: OutgoingEmail, email: ClaimedEmail): OutgoingEmail {
  if (email.contact_book_id === null || email.contact_id === null) return message;
  const target = { teamId: email.team_id, bookId: email.contact_book_id, contactId: email.contact_id };
  const url = confirmationUrl(deps.config.publicUrl, deps.tokens, target, email.created_at);
  return {
    ...message,
    html: message.html?.replace(DOUBLE_OPT_IN_PLACEHOLDER, escapeHtml(url)) ?? null,
    text: message.text?.replace(DOUBLE_OPT_IN_PLACEHOLDER, url) ?? null,
  };
}

/** Mail to a person of a team gets its link now, from its row's id and nonce: the token is never stored. */
function withSystemLink(deps: ComposeDeps, message: OutgoingEmail, email: ClaimedEmail): OutgoingEmail {
  if (email.system_link === null) return message;
  const url = systemLinkUrl(deps.config.publicUrl, deps.tokens, email.system_link);
  return {
    ...message,
    html: message.html?.replace(SYSTEM_LINK_PLACEHOLDER, escapeHtml(url)) ?? null,
    text: message.text?.replace(SYSTEM_LINK_PLACEHOLDER, url) ?? null,
  };
}

/**
 * The open pixel and tracked links the sending domain asks for. A confirmation, an invite or a
 * reset is never tracked: its link goes straight to its page.
 */
function withTracking(deps: ComposeDeps, message: OutgoingEmail, email: ClaimedEmail, domain: DomainSettings): OutgoingEmail {
  if (message.html === null || (!domain.openTracking && !domain.clickTracking) || email.contact_book_id !== null || email.system_link !== null) return message;
  const options = { open: domain.openTracking, click: domain.clickTracking, publicUrl: deps.config.publicUrl, tokens: deps.tokens, emailId: email.id };
  return { ...message, html: addTracking(message.html, options) };
}

/** A message ready to sign: who it goes to, and which recipients were left out as suppressed. */
export type Composed = { message: OutgoingEmail; envelope: Envelope; skipped: string[] };

/**
 * The message a claimed email becomes: the campaign's rendered mail or the row's own, with its
 * confirmation link, tracking and feedback tag, addressed from the email's tagged VERP return path
 * to every recipient still owed that is not suppressed.
 */
export function compose(
  deps: ComposeDeps,
  email: ClaimedEmail,
  campaignMessage: OutgoingEmail | undefined,
  domain: DomainSettings,
  isSuppressed: (address: string) => boolean,
): Composed {
  const tagged = { emailId: email.id, tag: deps.tokens.addressTag(email.id) };
  const content = withTracking(deps, campaignMessage ?? withSystemLink(deps, withConfirmationLink(deps, outgoingEmail(email), email), email), email, domain);
  const message = { ...content, headers: { ...content.headers, [FEEDBACK_TAG_HEADER]: feedbackTagValue(tagged) } };
  const all = envelopeOf(message, bounceAddress(tagged, domain.signer.domain, deps.config.returnPathSubdomain));
  // After an attempt that settled some recipients, only those still owed are sent to.
  const owed = email.pending_recipients && new Set(email.pending_recipients.map((address) => address.toLowerCase()));
  const recipients = owed ? all.to.filter((address) => owed.has(address.toLowerCase())) : all.to;
  const skipped = recipients.filter(isSuppressed);
  return { message, envelope: { from: all.from, to: recipients.filter((address) => !skipped.includes(address)) }, skipped };
}

/** The message on the wire: built, then DKIM-signed with the domain's key. */
export const signedMessage = (composed: Composed, domain: DomainSettings, now: Date) => domain.signer.sign(buildMessage(composed.message, now), now);
