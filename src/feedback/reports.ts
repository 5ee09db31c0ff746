import { hash } from 'node:crypto';
import { fieldValue, parseHeaderFields } from '../mail/header-fields.js';
import { FEEDBACK_TAG_HEADER } from '../mail/verp.js';
import { parseMime } from '../smtp/mime-thread.js';

/**
 * Reads the machine part of the reports receivers send back: RFC 3464 delivery status
 * notifications and RFC 5965 (ARF) feedback reports, each a multipart/report. postal-mime keeps
 * the report parts apart as attachments (mailparser folds message/delivery-status into the text).
 */

export type DsnRecipient = {
  recipient: string;
  /** failed, delayed, delivered, relayed or expanded. */
  action: string;
  /** The enhanced status code (RFC 3463), e.g. 5.1.1; null when the report gives none. */
  status: string | null;
  diagnostic: string | null;
  remoteMta: string | null;
};

/**
 * What the report quotes of the message it is about: how it is attributed, and the quoted header
 * block itself, whose DKIM signature can prove the message was ours. `repeated` names the fields
 * attribution reads that the block holds more than once: such a block attributes nothing.
 */
export type OriginalMessage = { messageId: string | null; returnPath: string | null; feedbackTag: string | null; headers: string | null; repeated: string[] };

export type Report =
  | { kind: 'dsn'; reportingMta: string | null; recipients: DsnRecipient[]; original: OriginalMessage; fingerprint: string }
  | {
      kind: 'arf';
      feedbackType: string;
      /** Often redacted by the provider; then the email's own recipient is the complainant. */
      recipients: string[];
      userAgent: string | null;
      sourceIp: string | null;
      arrivalDate: string | null;
      original: OriginalMessage;
      fingerprint: string;
    };

type Fields = Map<string, string[]>;

/** Header-style fields ("Name: value", folded lines joined), in groups separated by blank lines. */
function fieldGroups(text: string): Fields[] {
  const groups: Fields[] = [];
  let current: Fields | null = null;
  let last: { name: string; values: string[] } | null = null;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      current = null;
      last = null;
      continue;
    }
    if (/^[ \t]/.test(line) && last) {
      last.values[last.values.length - 1] += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    if (!current) groups.push((current = new Map()));
    const name = line.slice(0, colon).trim().toLowerCase();
    const values = current.get(name) ?? [];
    values.push(line.slice(colon + 1).trim());
    current.set(name, values);
    last = { name, values };
  }
  return groups;
}

const first = (fields: Fields | undefined, name: string) => fields?.get(name)?.[0] ?? null;

/** What stands between angle brackets (`<id@host>`), or the whole value when it has none. */
export const angleAddress = (value: string | null) => value?.match(/<([^<>]+)>/)?.[1] ?? value?.trim() ?? null;

/** `rfc822; user@example.com` (and `<user@example.com>`) to the bare address. */
function addressField(value: string | null): string | null {
  if (!value) return null;
  const address = (value.includes(';') ? value.slice(value.indexOf(';') + 1) : value).trim().replace(/^<|>$/g, '');
  return address.includes('@') ? address : null;
}

// The fields a report is attributed by. A block with two of one of them could show one to the
// reader and another to the signature check (which takes the bottom-most, RFC 6376 §5.4.2).
const ATTRIBUTING = ['message-id', 'return-path', 'from', 'to', FEEDBACK_TAG_HEADER.toLowerCase()];
const NO_ORIGINAL: OriginalMessage = { messageId: null, returnPath: null, feedbackTag: null, headers: null, repeated: [] };

/** The header block of a quoted message (a message/rfc822 part, or just its headers). */
function originalOf(text: string | null): OriginalMessage {
  if (!text) return NO_ORIGINAL;
  const headerBlock = text.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const fields = parseHeaderFields(headerBlock.replace(/\r?\n/g, '\r\n'));
  const repeated = ATTRIBUTING.filter((name) => fields.filter((field) => field.name === name).length > 1);
  if (repeated.length > 0) return { ...NO_ORIGINAL, repeated };
  const value = (name: string) => {
    const field = fields.find((f) => f.name === name);
    return field ? fieldValue(field) : null;
  };
  return {
    messageId: angleAddress(value('message-id')),
    returnPath: angleAddress(value('return-path')),
    feedbackTag: value(FEEDBACK_TAG_HEADER.toLowerCase()),
    headers: headerBlock,
    repeated,
  };
}

const fingerprint = (...parts: string[]) => hash('sha256', parts.join('\n'), 'hex').slice(0, 32);
const STATUS_CODE = /\b([245])\.(\d{1,3})\.(\d{1,3})\b/;

function parseDsn(status: string, original: string | null): Report | null {
  const [perMessage, ...perRecipient] = fieldGroups(status);
  const recipients = perRecipient.flatMap((fields): DsnRecipient[] => {
    const recipient = addressField(first(fields, 'final-recipient')) ?? addressField(first(fields, 'original-recipient'));
    const action = first(fields, 'action')?.toLowerCase().split(/\s/)[0];
    if (!recipient || !action) return [];
    return [{
      recipient,
      action,
      status: STATUS_CODE.exec(first(fields, 'status') ?? '')?.[0] ?? null,
      diagnostic: first(fields, 'diagnostic-code'),
      remoteMta: first(fields, 'remote-mta')?.replace(/^[^;]*;\s*/, '') ?? null,
    }];
  });
  if (recipients.length === 0) return null;
  return {
    kind: 'dsn',
    reportingMta: first(perMessage, 'reporting-mta')?.replace(/^[^;]*;\s*/, '') ?? null,
    recipients,
    original: originalOf(original),
    fingerprint: fingerprint(status.replace(/\r\n/g, '\n').trim()),
  };
}

function parseArf(report: string, original: string | null): Report | null {
  const fields = fieldGroups(report)[0];
  const feedbackType = first(fields, 'feedback-type')?.toLowerCase();
  if (!feedbackType) return null;
  const quoted = originalOf(original);
  return {
    kind: 'arf',
    feedbackType,
    recipients: (fields!.get('original-rcpt-to') ?? []).map(addressField).filter((address): address is string => address !== null),
    userAgent: first(fields, 'user-agent'),
    sourceIp: first(fields, 'source-ip'),
    arrivalDate: first(fields, 'arrival-date') ?? first(fields, 'received-date'),
    // The envelope sender the report names stands in for a Return-Path the quoted original lacks.
    original: { ...quoted, returnPath: quoted.returnPath ?? addressField(first(fields, 'original-mail-from')) },
    fingerprint: fingerprint(report.replace(/\r\n/g, '\n').trim(), original ?? ''),
  };
}

const asText = (content: string | ArrayBuffer | Uint8Array) =>
  typeof content === 'string' ? content : Buffer.from(content instanceof ArrayBuffer ? new Uint8Array(content) : content).toString('utf8');

/** The report a message carries, or null when it is no DSN or ARF report this can read. */
export async function parseReport(raw: Buffer): Promise<Report | null> {
  const email = await parseMime(raw, { attachmentEncoding: 'utf8', forceRfc822Attachments: true });
  const parts = email.attachments.map((part) => ({ type: part.mimeType.toLowerCase(), text: asText(part.content) }));
  const find = (...types: string[]) => parts.find((part) => types.includes(part.type))?.text ?? null;
  const original = find('message/rfc822', 'text/rfc822-headers', 'message/global', 'message/global-headers');
  const status = find('message/delivery-status', 'message/global-delivery-status');
  if (status !== null) return parseDsn(status, original);
  const feedback = find('message/feedback-report');
  if (feedback !== null) return parseArf(feedback, original);
  return null;
}
