import PostalMime from 'postal-mime';
import type { Address, Attachment, Mailbox } from 'postal-mime';
import { addressOf, formatMailbox } from '../mail/address.js';
import { isOwnHeader, isTrustHeader } from '../mail/headers.js';
import type { EmailInput } from '../services/emails.js';

export type SubmittedEmail = {
  email: EmailInput;
  /** Header fields of the message that Mailroom writes itself or that receiving servers write: not kept. */
  dropped: string[];
};

// A reply's thread fields are kept even though they name other messages' ids.
const THREAD_HEADERS = new Set(['in-reply-to', 'references']);
// A field name as RFC 5322 §3.6.8 allows it (and as the API takes them).
const FIELD_NAME = /^[!-9;-~]{1,100}$/;

const mailboxesOf = (addresses: Address[] | undefined): Mailbox[] =>
  (addresses ?? []).flatMap((address) => (address.group ? address.group : [address]));

/**
 * Compared the way the envelope and the header fields can differ: case, and an internationalised
 * domain in Unicode on one side and punycode on the other.
 */
const addressKey = (address: string) => addressOf(address).toLowerCase();

const display = (mailbox: Mailbox) => formatMailbox({ name: mailbox.name || null, address: mailbox.address });

function attachmentOf(part: Attachment, index: number): NonNullable<EmailInput['attachments']>[number] {
  const content = typeof part.content === 'string' ? part.content : Buffer.from(part.content as ArrayBuffer).toString('base64');
  const contentId = part.disposition !== 'attachment' && part.contentId ? part.contentId.replace(/^<|>$/g, '') : undefined;
  return {
    filename: part.filename || `attachment-${index + 1}`,
    content,
    contentType: part.mimeType,
    ...(contentId ? { contentId } : {}),
  };
}

/**
 * A submitted message as the email the API would be given: From, Subject, text and HTML,
 * attachments (inline ones with their Content-ID), Reply-To and every other header field it may
 * carry (In-Reply-To and References among them). The recipients are the envelope's: those the To
 * and Cc fields name keep their place and display name, the rest are Bcc, and addresses the
 * fields name but the envelope does not get nothing.
 */
export async function readSubmission(raw: Buffer, envelopeRecipients: string[]): Promise<SubmittedEmail> {
  const parsed = await PostalMime.parse(raw, { attachmentEncoding: 'base64', forceRfc822Attachments: true });
  const envelope = new Map(envelopeRecipients.map((address) => [addressKey(address), address]));
  const take = (field: Address[] | undefined) =>
    mailboxesOf(field).flatMap((mailbox) => {
      const key = addressKey(mailbox.address);
      if (!envelope.has(key)) return [];
      envelope.delete(key);
      return [display(mailbox)];
    });
  const to = take(parsed.to);
  const cc = take(parsed.cc);
  const bcc = [...envelope.values()];

  const headers: Record<string, string> = {};
  const dropped: string[] = [];
  for (const header of parsed.headers) {
    const name = header.originalKey || header.key;
    const kept = FIELD_NAME.test(name) && (THREAD_HEADERS.has(header.key) || !(isOwnHeader(name) || isTrustHeader(name)));
    if (kept) {
      // A field given twice keeps its first value: the record holds one per name.
      if (!Object.keys(headers).some((other) => other.toLowerCase() === header.key)) headers[name] = header.value.replace(/\r?\n[ \t]*/g, ' ');
    } else if (!dropped.includes(header.key)) {
      dropped.push(header.key);
    }
  }

  const from = parsed.from && !parsed.from.group ? display(parsed.from) : '';
  return {
    email: {
      from,
      to,
      cc,
      bcc,
      replyTo: mailboxesOf(parsed.replyTo).map(display),
      subject: parsed.subject ?? '',
      html: parsed.html ?? null,
      text: parsed.text ?? null,
      headers,
      attachments: parsed.attachments.map(attachmentOf),
    },
    dropped,
  };
}
