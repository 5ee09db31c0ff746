import { decodeEntities, LINK_HREF } from './html.js';
import type { LinkFields, RecipientTokens } from './tokens.js';

/** How long a double opt-in confirmation link holds, from when its email was created. */
export const CONFIRMATION_LINK_MS = 7 * 86_400_000;
export const DOUBLE_OPT_IN_PLACEHOLDER = /\{\{\s*doubleOptInUrl\s*\}\}/g;

/** The recipients' pages, outside /v1; the routes that serve them and the links in mail both use these. */
export const PAGE_PATHS = { unsubscribe: '/unsubscribe', confirm: '/confirm', open: '/track/open', click: '/track/click' } as const;

export const unsubscribeUrl = (publicUrl: string, tokens: RecipientTokens, fields: LinkFields['unsubscribe']) =>
  `${publicUrl}${PAGE_PATHS.unsubscribe}/${tokens.sign('unsubscribe', fields)}`;

/** The header fields that let a mailbox provider unsubscribe the recipient in one click (RFC 8058), or by mail to `mailto`. */
export const listUnsubscribeHeaders = (url: string, mailto: string) => ({
  'List-Unsubscribe': `<${url}>, <mailto:${mailto}?subject=unsubscribe>`,
  'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
});

export const confirmationUrl = (publicUrl: string, tokens: RecipientTokens, target: Omit<LinkFields['confirm'], 'expiresAt'>, createdAt: Date) =>
  `${publicUrl}${PAGE_PATHS.confirm}/${tokens.sign('confirm', { ...target, expiresAt: createdAt.getTime() + CONFIRMATION_LINK_MS })}`;

/** A link in mail Mailroom sends to a person of a team (see people/system-mail.ts). */
export type SystemLink = { kind: 'invite'; userId: string; nonce: string } | { kind: 'reset'; resetId: string };
export const SYSTEM_LINK_PATHS = { invite: '/invite', reset: '/reset-password' } as const;
/** Where a system mail's body has its link put in, when it is sent. */
export const SYSTEM_LINK_PLACEHOLDER = /\{\{\s*link\s*\}\}/g;

/**
 * The token of a system link: signed with SECRET from what its row keeps (an id, a nonce), so it
 * can be made again when the mail is sent and is never stored; the row keeps only its hash.
 */
export function systemLinkToken(tokens: RecipientTokens, link: SystemLink): string {
  return link.kind === 'invite' ? tokens.sign('invite', { userId: link.userId, nonce: link.nonce }) : tokens.sign('reset', { resetId: link.resetId });
}

export const systemLinkUrl = (publicUrl: string, tokens: RecipientTokens, link: SystemLink) =>
  `${publicUrl}${SYSTEM_LINK_PATHS[link.kind]}/${systemLinkToken(tokens, link)}`;

/** An absolute web URL that can stand in a Location header: the only kind a tracked link leads to. */
export const isWebUrl = (url: string) => /^https?:\/\/[^\s\x00-\x1f\x7f]+$/i.test(url);

export const openPixelUrl = (publicUrl: string, tokens: RecipientTokens, emailId: string) =>
  `${publicUrl}${PAGE_PATHS.open}/${tokens.sign('open', { emailId })}`;

export const clickUrl = (publicUrl: string, tokens: RecipientTokens, emailId: string, url: string) =>
  `${publicUrl}${PAGE_PATHS.click}/${tokens.sign('click', { emailId, url })}`;

export type TrackingOptions = { open: boolean; click: boolean; publicUrl: string; tokens: RecipientTokens; emailId: string };

const BODY_END = /<\/body\s*>/gi;

/** Only web links to elsewhere are tracked: not mailto:, anchors, nor Mailroom's own pages (unsubscribe, confirm). */
const trackable = (url: string, publicUrl: string) => isWebUrl(url) && !url.startsWith(`${publicUrl}/`);

/**
 * The html with its links led through the click redirect and an open pixel at the end of the
 * body, as the sending domain asks. Each rewritten link's token signs the URL it leads to, so the
 * redirect can only ever go where the mail pointed.
 */
export function addTracking(html: string, options: TrackingOptions): string {
  let out = html;
  if (options.click) {
    out = out.replace(LINK_HREF, (whole, start: string, double?: string, single?: string, bare?: string) => {
      const url = decodeEntities((double ?? single ?? bare ?? '').trim());
      if (!trackable(url, options.publicUrl)) return whole;
      return `${start}"${clickUrl(options.publicUrl, options.tokens, options.emailId, url)}"`;
    });
  }
  if (options.open) {
    const pixel = `<img src="${openPixelUrl(options.publicUrl, options.tokens, options.emailId)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">`;
    const ends = [...out.matchAll(BODY_END)];
    const last = ends.at(-1);
    out = last ? out.slice(0, last.index) + pixel + out.slice(last.index) : out + pixel;
  }
  return out;
}
