import { findInboundEmail, findRawInboundEmail, listInboundEmails } from '../data/inbound-emails.js';
import type { Deps } from '../deps.js';
import { ApiError, notFound } from '../errors.js';
import { inboundEmailData } from '../events/payloads.js';
import { attachmentOf } from '../smtp/received-message.js';
import { assertTeamWide, type Caller } from './caller.js';

export type InboundEmailDeps = Pick<Deps, 'db'>;

const SCOPE = 'received mail is the whole team\'s';

/** Bytes to answer as they are, with their type and, for an attachment, the name to save them as. */
export type Download = { bytes: Buffer; contentType: string; filename: string | null };

const gone = (id: string) => new ApiError('NOT_FOUND', `The content of inbound email ${id} was dropped by retention (RETENTION_DAYS)`);

export async function listReceived(deps: InboundEmailDeps, caller: Caller, query: { page: number; limit: number; routeId?: string; from?: string; to?: string }) {
  assertTeamWide(caller, SCOPE);
  const { rows, count } = await listInboundEmails(
    deps.db,
    caller.teamId,
    { routeId: query.routeId ?? null, from: query.from ?? null, to: query.to ?? null },
    { offset: (query.page - 1) * query.limit, limit: query.limit },
  );
  return { data: rows.map(inboundEmailData), count };
}

export async function getReceived(deps: InboundEmailDeps, caller: Caller, { id }: { id: string }) {
  assertTeamWide(caller, SCOPE);
  const row = await findInboundEmail(deps.db, caller.teamId, id);
  if (!row) throw notFound('Inbound email');
  return inboundEmailData(row);
}

/** The message byte for byte, as it arrived. */
export async function receivedRaw(deps: InboundEmailDeps, caller: Caller, { id }: { id: string }): Promise<Download> {
  assertTeamWide(caller, SCOPE);
  const raw = await findRawInboundEmail(deps.db, caller.teamId, id);
  if (raw === undefined) throw notFound('Inbound email');
  if (raw === null) throw gone(id);
  return { bytes: raw, contentType: 'message/rfc822', filename: `${id}.eml` };
}

export async function receivedAttachment(deps: InboundEmailDeps, caller: Caller, { id, attachmentId }: { id: string; attachmentId: string }): Promise<Download> {
  assertTeamWide(caller, SCOPE);
  const raw = await findRawInboundEmail(deps.db, caller.teamId, id);
  if (raw === undefined) throw notFound('Inbound email');
  if (raw === null) throw gone(id);
  const attachment = await attachmentOf(raw, attachmentId);
  if (!attachment) throw notFound('Attachment');
  return { bytes: attachment.content, contentType: attachment.contentType, filename: attachment.filename };
}
