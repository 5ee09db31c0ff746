/**
 * The header fields Mailroom writes itself; a caller's `headers` may not set them (compared
 * lower-case; `List-Unsubscribe*` and `Content-*` are prefixes).
 */
export const OWN_HEADERS = [
  'from', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'return-path', 'dkim-signature', 'mime-version', 'sender', 'reply-to',
  'x-mailroom-feedback',
];
export const OWN_HEADER_PREFIXES = ['content-', 'list-unsubscribe'];

export const isOwnHeader = (name: string) => {
  const lower = name.toLowerCase();
  return OWN_HEADERS.includes(lower) || OWN_HEADER_PREFIXES.some((prefix) => lower.startsWith(prefix));
};

/**
 * Header fields that record what receiving servers did or concluded, or that route replies and
 * receipts elsewhere: a sender who writes them could fake authentication results or a trace, so a
 * caller's `headers` may not set them either (`ARC-*` and `Resent-*` are prefixes).
 */
export const TRUST_HEADERS = [
  'received', 'received-spf', 'authentication-results', 'domainkey-signature', 'delivered-to', 'x-original-to',
  'return-receipt-to', 'disposition-notification-to', 'errors-to',
];
export const TRUST_HEADER_PREFIXES = ['arc-', 'resent-'];

export const isTrustHeader = (name: string) => {
  const lower = name.toLowerCase();
  return TRUST_HEADERS.includes(lower) || TRUST_HEADER_PREFIXES.some((prefix) => lower.startsWith(prefix));
};
