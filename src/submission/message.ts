import type { Address, Attachment, Mailbox } from 'postal-mime';
import { parseInput } from '../http/input.js';
import { addressOf, formatMailbox } from '../mail/address.js';
import { isOwnHeader, isTrustHeader } from '../mail/headers.js';
import { emailBody, HEADER_NAME } from '../services/email-body.js';
import type { EmailInput } from '../services/emails.js';
import { parseMime } from '../smtp/mime-thread.js';

export type SubmittedEmail = {
  email: EmailInput;
  /** Header fields of the message that Mailroom writes itself or that receiving servers write: not kept. */
  dropped: string[];
};

// A reply's thread fields are kept even though they name other messages' ids.
const THREAD_HEADERS = new Set(['in-reply-to', 'references']);

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
 * fields name but the envelope does not get nothing. The MIME is parsed on a thread of its own
 * (src/smtp/mime-thread.ts): a message at the size limit would hold the event loop for seconds.
 */
export async function readSubmission(raw: Buffer, envelopeRecipients: string[]): Promise<SubmittedEmail> {
  const parsed = await parseMime(raw, { attachmentEncoding: 'base64', forceRfc822Attachments: true });
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
  // By lower-case name (postal-mime's key): a message may carry tens of thousands of fields.
  const keptNames = new Set<string>();
  const dropped = new Set<string>();
  for (const header of parsed.headers) {
    const name = header.originalKey || header.key;
    const kept = HEADER_NAME.test(name) && (THREAD_HEADERS.has(header.key) || !(isOwnHeader(name) || isTrustHeader(name)));
    if (!kept) dropped.add(header.key);
    // A field given twice keeps its first value: the record holds one per name.
    else if (!keptNames.has(header.key)) {
      keptNames.add(header.key);
      headers[name] = header.value.replace(/\r?\n[ \t]*/g, ' ');
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
      // No Subject is none, as an API call without one: the empty subject is the service's to store.
      subject: parsed.subject || undefined,
      html: parsed.html ?? null,
      text: parsed.text ?? null,
      headers,
      attachments: parsed.attachments.map(attachmentOf),
    },
    dropped: [...dropped],
  };
}

/**
 * Refuses a submitted email exactly where POST /v1/emails refuses its body: the same schema,
 * through the same door, so both entrances keep one set of limits. A value over one of them is
 * PAYLOAD_TOO_LARGE (SMTP's 552), any other problem VALIDATION_ERROR.
 */
export function assertTakenByApi(email: EmailInput): void {
  parseInput(emailBody, email, 'PAYLOAD_TOO_LARGE');
}
