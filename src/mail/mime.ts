import { addressOf, parseMailbox } from './address.js';

export type MailAttachment = {
  filename: string;
  contentType: string;
  /** base64 */
  content: string;
  /** Set: an inline part the HTML shows by `cid:` (without the angle brackets). */
  contentId?: string;
};

/** An email as the builder takes it: mailboxes as stored (`addr` or `"Name" <addr>`). */
export type OutgoingEmail = {
  id: string;
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo: string[];
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachments: MailAttachment[];
  messageId: string;
};

export type Envelope = { from: string; to: string[] };

const ASCII_PRINTABLE = /^[\x20-\x7e]*$/;
const PLAIN_PHRASE = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~ -]*$/;

// RFC 2047 keeps lines holding encoded words within 76 characters; other lines fold there too
// when they can, but must never pass RFC 5322's 998.
const LINE = 76;
const MAX_LINE = 998;

/** RFC 2047 B-encoded words of at most 72 characters, never splitting a character, each after a space where a line may fold. */
function encodedWords(text: string): string[] {
  const words: string[] = [];
  let chunk = '';
  let bytes = 0;
  for (const char of text) {
    const size = Buffer.byteLength(char);
    if (bytes + size > 45) {
      words.push(chunk);
      chunk = '';
      bytes = 0;
    }
    chunk += char;
    bytes += size;
  }
  if (chunk) words.push(chunk);
  return words.map((word) => ` =?UTF-8?B?${Buffer.from(word).toString('base64')}?=`);
}

/**
 * `ascii` in pieces, each starting with the white space a line may fold at (before a word, the
 * first included); or `text` as encoded words when there is no `ascii`, or a piece too long for
 * any line.
 */
function foldable(ascii: string | null, text: string): string[] {
  const pieces = ascii === null ? null : ` ${ascii}`.split(/(?= [^ ])/);
  return pieces?.every((piece) => piece.length <= MAX_LINE) ? pieces : encodedWords(text);
}

/** `start` then the pieces, a line folded before a piece that would take it past 76 characters; never left empty. */
function fold(start: string, pieces: string[]): string {
  let out = start;
  let width = start.length;
  for (const piece of pieces) {
    if (width > 0 && width + piece.length > LINE) {
      out += '\r\n';
      width = 0;
    }
    out += piece;
    width += piece.length;
  }
  return out;
}

/** An unstructured header field (Subject, custom headers): the value as it is when ASCII, else encoded words; folded. */
export const unstructuredField = (name: string, value: string) =>
  fold(`${name}:`, foldable(ASCII_PRINTABLE.test(value) ? value : null, value));

function mailboxPieces(mailbox: string): string[] {
  const name = parseMailbox(mailbox)?.name;
  const address = addressOf(mailbox);
  if (!name) return [` ${address}`];
  const ascii = PLAIN_PHRASE.test(name) ? name : ASCII_PRINTABLE.test(name) ? `"${name.replace(/["\\]/g, '\\$&')}"` : null;
  return [...foldable(ascii, name), ` <${address}>`];
}

/** An address field, each mailbox starting a line. */
const addressField = (name: string, mailboxes: string[]) =>
  mailboxes.map((mailbox, i) => fold(i === 0 ? `${name}:` : '', mailboxPieces(mailbox))).join(',\r\n');

/** RFC 5322 date-time in UTC. */
export const rfc5322Date = (date: Date) => date.toUTCString().replace(/GMT$/, '+0000');

/** Lines of at most 76 characters (RFC 2045), soft breaks marked with `=`. */
export function quotedPrintable(text: string): string {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const bytes = Buffer.from(line);
    let encoded = '';
    let width = 0;
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]!;
      const last = i === bytes.length - 1;
      const literal = (byte >= 33 && byte <= 126 && byte !== 61) || ((byte === 32 || byte === 9) && !last);
      const piece = literal ? String.fromCharCode(byte) : `=${byte.toString(16).toUpperCase().padStart(2, '0')}`;
      if (width + piece.length > 75) {
        encoded += '=\r\n';
        width = 0;
      }
      encoded += piece;
      width += piece.length;
    }
    out.push(encoded);
  }
  return out.join('\r\n');
}

const wrap76 = (base64: string) => base64.replace(/.{76}/g, '$&\r\n');

/** Whether a line reaches 999 characters (RFC 5322's limit is 998); linear, unlike a {999} pattern that backtracks. */
function hasLongLine(text: string): boolean {
  let start = 0;
  for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
    if (end - start - (text[end - 1] === '\r' ? 1 : 0) >= 999) return true;
    start = end + 1;
  }
  return text.length - start >= 999;
}

/** A body part: 7bit when it is short-lined ASCII that cannot contain a boundary, else quoted-printable. */
function textPart(type: 'plain' | 'html', body: string): string {
  // Text goes in its canonical form (RFC 2046 §4.1.1): a lone CR or LF is a line break, written CRLF.
  const text = body.replace(/\r\n?|\n/g, '\r\n');
  const plain = /^[\x20-\x7e\t\r\n]*$/.test(text) && !text.includes('=_mr') && !hasLongLine(text);
  const content = plain ? text : quotedPrintable(text);
  return `Content-Type: text/${type}; charset=utf-8\r\nContent-Transfer-Encoding: ${plain ? '7bit' : 'quoted-printable'}\r\n\r\n${content}`;
}

/** The file name as a parameter; a long non-ASCII one in RFC 2231 continuations, one to a line. */
function filenameParams(attribute: 'name' | 'filename', filename: string): string {
  if (ASCII_PRINTABLE.test(filename)) return `; ${attribute}="${filename.replace(/["\\]/g, '\\$&')}"`;
  // RFC 2231: percent-encoded UTF-8.
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  // Sections of at most 50 characters that never end inside a %XX.
  const sections = encoded.match(/.{1,50}(?<!%.?)/g)!;
  if (sections.length === 1) return `; ${attribute}*=utf-8''${encoded}`;
  return sections.map((section, i) => `;\r\n ${attribute}*${i}*=${i === 0 ? "utf-8''" : ''}${section}`).join('');
}

function attachmentPart(attachment: MailAttachment): string {
  const { contentId } = attachment;
  return (
    `Content-Type: ${attachment.contentType}${filenameParams('name', attachment.filename)}\r\n` +
    `Content-Disposition: ${contentId ? 'inline' : 'attachment'}${filenameParams('filename', attachment.filename)}\r\n` +
    (contentId ? `Content-ID: <${contentId}>\r\n` : '') +
    `Content-Transfer-Encoding: base64\r\n\r\n${wrap76(attachment.content)}`
  );
}

function multipart(subtype: 'alternative' | 'mixed' | 'related', boundary: string, parts: string[]): string {
  const body = parts.map((part) => `--${boundary}\r\n${part}\r\n`).join('');
  return `Content-Type: multipart/${subtype}; boundary="${boundary}"\r\n\r\n${body}--${boundary}--`;
}

/**
 * The message as it goes on the wire, before DKIM: header fields, then text and html as
 * multipart/alternative; with inline parts (images the HTML shows by Content-ID), that and those
 * as multipart/related; with attachments, all of it inside multipart/mixed. Bcc never appears,
 * and mail to Bcc recipients alone says so in its To field.
 */
export function buildMessage(email: OutgoingEmail, date: Date): Buffer {
  const headers = [
    addressField('From', [email.from]),
    email.to.length > 0 ? addressField('To', email.to) : 'To: undisclosed-recipients:;',
    ...(email.cc.length > 0 ? [addressField('Cc', email.cc)] : []),
    ...(email.replyTo.length > 0 ? [addressField('Reply-To', email.replyTo)] : []),
    unstructuredField('Subject', email.subject),
    `Date: ${rfc5322Date(date)}`,
    `Message-ID: ${email.messageId}`,
    'MIME-Version: 1.0',
    ...Object.entries(email.headers).map(([name, value]) => unstructuredField(name, value)),
  ];
  const text = textPart('plain', email.text ?? '');
  const alternative = email.html === null ? text : multipart('alternative', `=_mr_a_${email.id}`, [text, textPart('html', email.html)]);
  const inline = email.html === null ? [] : email.attachments.filter((attachment) => attachment.contentId);
  const attached = email.attachments.filter((attachment) => !inline.includes(attachment));
  const related = inline.length === 0 ? alternative : multipart('related', `=_mr_r_${email.id}`, [alternative, ...inline.map(attachmentPart)]);
  const body = attached.length === 0 ? related : multipart('mixed', `=_mr_m_${email.id}`, [related, ...attached.map(attachmentPart)]);
  return Buffer.from(`${headers.join('\r\n')}\r\n${body}\r\n`);
}

/** Who the transport delivers to: every To, Cc and Bcc address once, in ASCII form. */
export function envelopeOf(email: OutgoingEmail, returnPath: string): Envelope {
  return { from: returnPath, to: [...new Set([...email.to, ...email.cc, ...email.bcc].map(addressOf))] };
}
