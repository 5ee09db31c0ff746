/**
 * The header fields Mailroom writes itself; a caller's `headers` may not set them (compared
 * lower-case; `List-Unsubscribe*` and `Content-*` are prefixes).
 */
export const OWN_HEADERS = ['from', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'return-path', 'dkim-signature', 'mime-version', 'sender', 'reply-to'];
export const OWN_HEADER_PREFIXES = ['content-', 'list-unsubscribe'];

export const isOwnHeader = (name: string) => {
  const lower = name.toLowerCase();
  return OWN_HEADERS.includes(lower) || OWN_HEADER_PREFIXES.some((prefix) => lower.startsWith(prefix));
};
