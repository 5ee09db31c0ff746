import { findSystemSender } from '../data/domains.js';
import type { NewEmail } from '../data/emails.js';
import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import { storeNewEmails } from '../events/email-changes.js';
import { newId } from '../ids.js';
import { domainOf, formatMailbox, parseMailbox } from '../mail/address.js';
import { escapeHtml } from '../mail/html.js';
import * as links from '../mail/links.js';
import type { SystemLink } from '../mail/links.js';
import { sandboxRefusal } from '../sending/sandbox.js';
import { transportOf } from '../sending/transports/index.js';

export type { SystemLink };

/** A mail to a person: its bodies say `{{link}}` where the link goes. */
export type SystemMail = { teamId: number; to: string; subject: string; text: string; html: string; link: SystemLink };
export type Queued = { queued: true; emailId: string } | { queued: false; reason: string };

/** The link a system mail carries, as its recipient opens it. */
export const systemLinkUrl = (deps: Pick<Deps, 'config' | 'tokens'>, link: SystemLink) => links.systemLinkUrl(deps.config.publicUrl, deps.tokens, link);

/** The token inside that link: what the invite or reset keeps the hash of. */
export const systemLinkToken = (deps: Pick<Deps, 'tokens'>, link: SystemLink) => links.systemLinkToken(deps.tokens, link);

/**
 * The bodies of a mail that asks a person to follow its link: a greeting, `lead`, the link as a
 * button named `action` and as text to paste, then `validity` (how long it works, and what to do
 * if they did not expect it). Plain text in, escaped for the HTML body.
 */
export function linkMailBodies(mail: { lead: string; action: string; validity: string }) {
  return {
    text: `Hello,\n\n${mail.lead}\n\n${mail.action}:\n{{link}}\n\n${mail.validity}\n`,
    html:
      `<p>Hello,</p><p>${escapeHtml(mail.lead)}</p>` +
      `<p><a href="{{link}}">${escapeHtml(mail.action)}</a></p>` +
      `<p>Or paste this link into your browser:<br>{{link}}</p>` +
      `<p>${escapeHtml(mail.validity)}</p>`,
  };
}

/**
 * Queues mail to a person of `teamId` (an invite, a password reset) in `tx`: an email like any
 * other, from SYSTEM_FROM, sent by the dispatcher with its retries, signature and bounce handling.
 * It belongs to the team whose verified domain SYSTEM_FROM is on (the person's own team if it has
 * that domain), and shows in that team's email log with its `{{link}}` still unfilled: the link is
 * signed when the mail is sent, so no token is ever stored. Not queued, with the reason, when
 * SYSTEM_FROM is unset or no team can send from it; the caller then shows the link where that is
 * safe (to an inviter) and never where it is not (a reset asked for by anyone).
 */
export async function queueSystemMail(tx: Db, deps: Pick<Deps, 'config'>, mail: SystemMail): Promise<Queued> {
  const from = deps.config.systemFrom === null ? null : parseMailbox(deps.config.systemFrom);
  if (!from) return { queued: false, reason: 'SYSTEM_FROM is not set' };
  const domain = await findSystemSender(tx, domainOf(from.address), mail.teamId);
  if (!domain) return { queued: false, reason: `SYSTEM_FROM (${from.address}) is not on a verified domain of any team` };
  const refusal = sandboxRefusal(domain.name, transportOf(deps.config));
  if (refusal) return { queued: false, reason: `SYSTEM_FROM (${from.address}): ${refusal}` };
  const id = newId();
  const now = new Date();
  const email: NewEmail = {
    id, teamId: domain.team_id, domainId: domain.id,
    from: formatMailbox(from),
    to: [mail.to], cc: [], bcc: [], replyTo: [],
    subject: mail.subject, html: mail.html, text: mail.text, headers: {}, attachments: [],
    messageId: `<${id}@${domain.name}>`,
    scheduledAt: null, sendAt: now, createdAt: now,
    systemLink: mail.link,
  };
  await storeNewEmails(tx, [email]);
  return { queued: true, emailId: id };
}
