/**
 * The addresses on a domain's return-path host (`mail.example.com`, whose MX points at the inbound
 * listener): each names the email it is about, so whatever comes back to it is attributed without
 * guessing. `bounces+ID.TAG` is the envelope sender (DSNs come back there), `unsubscribe+ID.TAG`
 * the mailto: of List-Unsubscribe, and `fbl` the one address to register with mailbox providers'
 * feedback loops. TAG is a MAC of the email id (RecipientTokens.addressTag): knowing an email's id
 * is not enough to speak for it.
 */
export type VerpAddress =
  | { kind: 'bounces' | 'unsubscribe'; emailId: string; tag: string; host: string }
  | { kind: 'fbl'; host: string };

/** An email's id with the tag that proves an address naming it was made by us. */
export type TaggedEmail = { emailId: string; tag: string };

export const returnPathHost = (domainName: string, returnPathSubdomain: string) => `${returnPathSubdomain}.${domainName}`;

export const bounceAddress = (email: TaggedEmail, domainName: string, returnPathSubdomain: string) =>
  `bounces+${email.emailId}.${email.tag}@${returnPathHost(domainName, returnPathSubdomain)}`;

export const unsubscribeAddress = (email: TaggedEmail, domainName: string, returnPathSubdomain: string) =>
  `unsubscribe+${email.emailId}.${email.tag}@${returnPathHost(domainName, returnPathSubdomain)}`;

const LOCAL = /^(?:(bounces|unsubscribe)\+([A-Za-z0-9_-]{3,64})\.([0-9a-f]{16})|(fbl))$/i;

/**
 * A header field every message carries with its email's id and tag. Feedback loops that quote the
 * original without its envelope, and with the recipient redacted (which breaks the DKIM
 * signature), still quote it: it proves the report is about mail we sent, as the return path would.
 */
export const FEEDBACK_TAG_HEADER = 'X-Mailroom-Feedback';

export const feedbackTagValue = (email: TaggedEmail) => `${email.emailId}.${email.tag}`;

const TAGGED_ID = /^([A-Za-z0-9_-]{3,64})\.([0-9a-f]{16})$/i;

/** The email id and tag a FEEDBACK_TAG_HEADER value carries, or null. */
export function parseFeedbackTag(value: string): TaggedEmail | null {
  const match = TAGGED_ID.exec(value.trim());
  return match ? { emailId: match[1]!, tag: match[2]!.toLowerCase() } : null;
}

/** What an address on a return-path host stands for, or null when it is none of Mailroom's. */
export function parseVerp(address: string): VerpAddress | null {
  const at = address.lastIndexOf('@');
  if (at <= 0) return null;
  const match = LOCAL.exec(address.slice(0, at));
  const host = address.slice(at + 1).toLowerCase();
  if (!match || !host) return null;
  if (match[4]) return { kind: 'fbl', host };
  return { kind: match[1]!.toLowerCase() as 'bounces' | 'unsubscribe', emailId: match[2]!, tag: match[3]!.toLowerCase(), host };
}
