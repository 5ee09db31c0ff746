import { renderEditorContent } from '../campaigns/editor-content.js';
import { markConfirmationSent } from '../data/contacts.js';
import type { NewEmail } from '../data/emails.js';
import { storeNewEmails } from '../events/email-changes.js';
import { newId } from '../ids.js';
import { formatMailbox } from '../mail/address.js';
import { htmlToText } from '../mail/html.js';
import { assertDomainInScope, type Caller } from './caller.js';
import { assertVerifiedSender, type SenderDeps } from './verified-sender.js';

/** A contact is sent at most one confirmation per this long, however often it is added again. */
export const CONFIRMATION_INTERVAL_MS = 24 * 3_600_000;
// Rows per INSERT: each email takes about twenty parameters, and a statement takes at most 65,535.
const INSERT_CHUNK = 1000;

type DoubleOptInBook = {
  id: string;
  double_opt_in_from: string | null;
  double_opt_in_subject: string | null;
  double_opt_in_content: string | null;
};

/** The book's confirmation body as HTML: its content is HTML, or editor JSON rendered. */
function confirmationHtml(content: string): string {
  if (!content.trimStart().startsWith('{')) return content;
  try {
    return renderEditorContent(content, 'doubleOptInContent');
  } catch {
    return content;
  }
}

/**
 * Stores the confirmation emails for these contacts in the caller's transaction, `deps.db` (the
 * email row is the job), and records when they went. The body keeps its {{doubleOptInUrl}}
 * placeholder; the dispatcher puts in the signed link when it sends, and picks the rows up on its
 * next poll.
 * Answers how many were queued.
 */
export async function queueConfirmations(deps: SenderDeps, caller: Caller, book: DoubleOptInBook, recipients: { id: string; email: string }[]): Promise<number> {
  if (recipients.length === 0 || !book.double_opt_in_from) return 0;
  const { teamId } = caller;
  const { mailbox, domain } = await assertVerifiedSender(deps, teamId, book.double_opt_in_from, 'doubleOptInFrom');
  assertDomainInScope(caller, domain.id, `send confirmations from ${domain.name}`);
  const now = new Date();
  const html = confirmationHtml(book.double_opt_in_content ?? '');
  const text = htmlToText(html);
  const rows: NewEmail[] = recipients.map((contact) => {
    const id = newId();
    return {
      teamId, id, domainId: domain.id,
      from: formatMailbox(mailbox),
      to: [contact.email], cc: [], bcc: [], replyTo: [],
      subject: book.double_opt_in_subject ?? 'Please confirm your subscription',
      html, text, headers: {}, attachments: [],
      messageId: `<${id}@${domain.name}>`,
      scheduledAt: null, sendAt: now, createdAt: now,
      confirms: { bookId: book.id, contactId: contact.id },
    };
  });
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) await storeNewEmails(deps.db, rows.slice(start, start + INSERT_CHUNK));
  await markConfirmationSent(deps.db, teamId, book.id, recipients.map((contact) => contact.id), now);
  return rows.length;
}
