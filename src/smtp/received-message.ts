import type { Email } from 'postal-mime';
import { parseMime } from './mime-thread.js';

/** An attachment of a received message, as it is stored and shown: its bytes stay in the raw message. */
export type InboundAttachment = { id: string; filename: string | null; contentType: string; size: number };

/** A received message as postal-mime reads it. */
export type Parsed = Email;

/** Parsed on the parsing thread (src/smtp/mime-thread.ts): a message of up to the size limit from anyone never holds the event loop. */
export const parseReceived = (raw: Buffer): Promise<Parsed> => parseMime(raw);

/** The addresses of an address field, groups opened. */
export const addressesOf = (list: Parsed['to']) =>
  (list ?? []).flatMap((entry) => ('group' in entry && entry.group ? entry.group.map((member) => member.address) : [entry.address])).filter((a): a is string => !!a);

export const bytesOf = (content: ArrayBuffer | Uint8Array | string) => (typeof content === 'string' ? Buffer.from(content) : Buffer.from(content as ArrayBuffer));

/** The attachments' ids are their places in the message: the raw message is the one copy of their bytes. */
const attachmentId = (index: number) => `att_${index + 1}`;

export function attachmentsOf(parsed: Parsed): InboundAttachment[] {
  return parsed.attachments.map((attachment, index) => ({
    id: attachmentId(index),
    filename: attachment.filename ?? null,
    contentType: attachment.mimeType,
    size: typeof attachment.content === 'string' ? Buffer.byteLength(attachment.content) : attachment.content.byteLength,
  }));
}

/** The bytes and type of one attachment of a stored message, read again from its raw form. */
export async function attachmentOf(raw: Buffer, id: string): Promise<{ content: Buffer; contentType: string; filename: string | null } | null> {
  const parsed = await parseReceived(raw);
  const index = parsed.attachments.findIndex((_, i) => attachmentId(i) === id);
  if (index === -1) return null;
  const attachment = parsed.attachments[index]!;
  return { content: bytesOf(attachment.content), contentType: attachment.mimeType, filename: attachment.filename ?? null };
}
