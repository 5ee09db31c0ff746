import { domainToASCII } from 'node:url';

// RFC 5322 atext, plus any non-ASCII character for internationalised local parts (RFC 6531).
const ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\u{10FFFF}-]+$/u;
const QUOTED = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e\u0080-\u{10FFFF}]|\\[\x20-\x7e])*"$/u;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

// Addresses come in bulk from few domains, and checking a host name (IDNA conversion, label by
// label) costs more than the rest of an address: answers are kept for names of host name length,
// a bounded number of them.
const MEMO_ENTRIES = 10_000;
const MEMO_NAME_LENGTH = 253;
const hostnameMemo = new Map<string, string | null>();

/** A host name's ASCII (punycode) form, or null when it is no valid DNS host name. */
export function asciiHostname(name: string): string | null {
  let ascii = hostnameMemo.get(name);
  if (ascii !== undefined) return ascii;
  ascii = checkHostname(name);
  if (name.length <= MEMO_NAME_LENGTH) {
    if (hostnameMemo.size === MEMO_ENTRIES) hostnameMemo.clear();
    hostnameMemo.set(name, ascii);
  }
  return ascii;
}

function checkHostname(name: string): string | null {
  // domainToASCII reads a URL host, so it would percent-decode a `%`, which no host name holds.
  if (name.length === 0 || name.endsWith('.') || /[\s/\\@[\]%]/.test(name)) return null;
  const ascii = domainToASCII(name);
  if (!ascii || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) return null;
  // A numeric top-level label would make it an IP address, not a host name.
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return null;
  return ascii;
}

/**
 * Validates an address (RFC 5321/5322; internationalised domains and local parts allowed) and
 * returns it trimmed with its domain lower-cased, or null when it is not a deliverable address.
 */
export function normalizeEmail(input: string): string | null {
  const value = input.trim();
  if (value.length === 0 || value.length > 254) return null;
  const at = value.lastIndexOf('@');
  if (at <= 0) return null;
  const local = value.slice(0, at);
  const domain = value.slice(at + 1).toLowerCase();
  if (Buffer.byteLength(local) > 64) return null;
  const localOk = QUOTED.test(local) || local.split('.').every((atom) => ATOM.test(atom));
  if (!localOk || asciiHostname(domain) === null) return null;
  return `${local}@${domain}`;
}

export const isEmail = (input: string) => normalizeEmail(input) !== null;

/** Splits `Name <addr@host>` or a bare `addr@host`; the address comes back normalised, or null. */
export function parseMailbox(input: string): { name: string | null; address: string } | null {
  const match = /^\s*(?:"?([^"<]*?)"?\s*)?<([^<>]+)>\s*$/.exec(input);
  const name = match ? match[1]?.trim() || null : null;
  const address = normalizeEmail(match ? match[2]! : input);
  return address ? { name, address } : null;
}

export function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1);
}

/** The bare address of a mailbox as stored (`"Name" <a@b>` or `a@b`), its domain in ASCII. */
export function addressOf(mailbox: string): string {
  const address = parseMailbox(mailbox)?.address ?? mailbox;
  const domain = domainOf(address);
  return `${address.slice(0, address.length - domain.length)}${asciiHostname(domain) ?? domain}`;
}

/**
 * A mailbox as it is stored: `addr`, or `"Name" <addr>`. Quotes, backslashes and `<` are dropped
 * from the name, so the stored form always parses back to the same name and address.
 */
export const formatMailbox = (mailbox: { name: string | null; address: string }) =>
  mailbox.name ? `"${mailbox.name.replace(/["\\<]/g, '')}" <${mailbox.address}>` : mailbox.address;

/** Splits a comma-separated list at the commas outside quotes and angle brackets. */
export function splitAddressList(value: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  let angle = false;
  let escaped = false;
  for (const char of value) {
    if (escaped) escaped = false;
    else if (char === '\\') escaped = quoted;
    else if (char === '"') quoted = !quoted;
    else if (char === '<' && !quoted) angle = true;
    else if (char === '>' && !quoted) angle = false;
    if (char === ',' && !quoted && !angle) {
      parts.push(current);
      current = '';
    } else current += char;
  }
  parts.push(current);
  return parts.map((part) => part.trim()).filter(Boolean);
}
