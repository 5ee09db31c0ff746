import { findEmail } from '../data/emails.js';
import type { InboundRouteRow } from '../data/inbound-routes.js';
import { insertInboundEmail, type InboundEmailRow } from '../data/inbound-emails.js';
import type { Deps } from '../deps.js';
import { report } from '../events/outbox.js';
import { emailReceived } from '../events/payloads.js';
import { newSortableId } from '../ids.js';
import { storeEmailsWith, type EmailDeps } from '../services/emails.js';
import type { Authentication } from './authenticate.js';
import { addressesOf, attachmentsOf, bytesOf, parseReceived, type Parsed } from '../smtp/received-message.js';

export type ReceiveDeps = EmailDeps & Pick<Deps, 'log'>;

/** A route and the recipients of the message it claimed. */
export type RouteClaim = { route: InboundRouteRow; recipients: string[] };

/** A message as the listener took it: the bytes, the envelope, the client. */
export type IncomingMessage = { raw: Buffer; from: string; clientAddress: string | null; helo: string | null; receivedAt: Date };

/** The email of the team a reply answers, when its In-Reply-To is one of our Message-IDs (`<emailId@domain>`). */
async function answered(deps: ReceiveDeps, teamId: number, inReplyTo: string | undefined): Promise<string | null> {
  const match = inReplyTo ? /^<?([^@<>\s]+)@[^<>\s]+>?$/.exec(inReplyTo.trim()) : null;
  if (!match) return null;
  const email = await findEmail(deps.db, teamId, match[1]!);
  return email && email.message_id === `<${inReplyTo!.trim().replace(/^<|>$/g, '')}>` ? email.id : null;
}

/**
 * Stores a received message once for each route that claimed some of its recipients, all in one
 * transaction with what each route asks: the email.received calls of its webhooks, or the email
 * that forwards it (From the route's address, Reply-To the sender, through the normal sending
 * path, so suppression, DKIM and events apply). Nothing is acknowledged before this commits.
 * Answers the stored mail.
 */
export async function receive(deps: ReceiveDeps, message: IncomingMessage, claims: RouteClaim[], authentication: Authentication): Promise<InboundEmailRow[]> {
  const parsed = await parseReceived(message.raw);
  const attachments = attachmentsOf(parsed);
  const rows = await Promise.all(
    claims.map(async ({ route, recipients }): Promise<InboundEmailRow> => ({
      team_id: route.team_id,
      id: newSortableId(),
      route_id: route.id,
      mail_from: message.from,
      rcpt_to: recipients,
      client_address: message.clientAddress,
      helo: message.helo,
      from_address: parsed.from?.address ?? null,
      to_addresses: addressesOf(parsed.to),
      cc_addresses: addressesOf(parsed.cc),
      subject: parsed.subject ?? '',
      text: parsed.text ?? null,
      html: parsed.html ?? null,
      headers: parsed.headers.map((header) => ({ key: header.key, value: header.value })),
      message_id: parsed.messageId ?? null,
      in_reply_to: parsed.inReplyTo ?? null,
      in_reply_to_email_id: await answered(deps, route.team_id, parsed.inReplyTo),
      attachments,
      authentication,
      size: message.raw.length,
      received_at: message.receivedAt,
      body_dropped_at: null,
    })),
  );
  const forwarded: Array<() => void> = [];
  await deps.db.transaction().execute(async (tx) => {
    for (const [index, row] of rows.entries()) {
      const { route } = claims[index]!;
      await insertInboundEmail(tx, { ...row, raw: message.raw });
      if (route.action === 'webhook') {
        await report(tx, [{ teamId: row.team_id, subjectKey: row.id, domainId: null, at: row.received_at, event: emailReceived(row), ...(route.webhook_ids && { onlyWebhooks: route.webhook_ids }) }]);
      }
      if (route.action === 'forward') forwarded.push((await forward(deps, tx, route, row, parsed)).committed);
    }
  });
  for (const committed of forwarded) committed();
  if (rows.some((_, index) => claims[index]!.route.action === 'webhook')) deps.signals.emit('webhookCallsDue');
  return rows;
}

/** The forward of received mail: a new email of the route's team to its forwardTo addresses. */
function forward(deps: ReceiveDeps, tx: Parameters<typeof storeEmailsWith>[2], route: InboundRouteRow, row: InboundEmailRow, parsed: Parsed) {
  const from = route.local_part === null ? row.rcpt_to[0]! : route.match;
  return storeEmailsWith(deps, { teamId: route.team_id, domainId: null }, tx, [
    {
      from,
      to: route.forward_to,
      replyTo: row.from_address ?? row.mail_from,
      subject: row.subject,
      ...(row.html !== null && { html: row.html }),
      ...(row.text !== null && { text: row.text }),
      attachments: parsed.attachments.map((attachment) => ({
        filename: attachment.filename ?? 'attachment',
        content: bytesOf(attachment.content).toString('base64'),
        contentType: attachment.mimeType,
      })),
    },
  ]);
}
