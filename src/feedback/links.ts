import type { RecipientTokens, UnsubscribePayload } from './tokens.js';

/** How long a double opt-in confirmation link holds, from when its email was created. */
export const CONFIRMATION_LINK_MS = 7 * 86_400_000;
export const DOUBLE_OPT_IN_PLACEHOLDER = /\{\{\s*doubleOptInUrl\s*\}\}/g;

/** The recipients' pages, outside /v1; the routes in pages.ts and the links in mail both use these. */
export const PAGE_PATHS = { unsubscribe: '/unsubscribe', confirm: '/confirm', open: '/track/open', click: '/track/click' } as const;

export const unsubscribeUrl = (publicUrl: string, tokens: RecipientTokens, payload: Omit<UnsubscribePayload, 'k'>) =>
  `${publicUrl}${PAGE_PATHS.unsubscribe}/${tokens.sign({ k: 'u', ...payload })}`;

export const confirmationUrl = (publicUrl: string, tokens: RecipientTokens, target: { teamId: number; bookId: string; contactId: string }, createdAt: Date) =>
  `${publicUrl}${PAGE_PATHS.confirm}/${tokens.sign({ k: 'c', t: target.teamId, b: target.bookId, c: target.contactId, x: createdAt.getTime() + CONFIRMATION_LINK_MS })}`;

/** An absolute web URL that can stand in a Location header: the only kind a tracked link leads to. */
export const isWebUrl = (url: string) => /^https?:\/\/[^\s\x00-\x1f\x7f]+$/i.test(url);

export const openPixelUrl = (publicUrl: string, tokens: RecipientTokens, emailId: string) =>
  `${publicUrl}${PAGE_PATHS.open}/${tokens.sign({ k: 'o', e: emailId })}`;

export const clickUrl = (publicUrl: string, tokens: RecipientTokens, emailId: string, url: string) =>
  `${publicUrl}${PAGE_PATHS.click}/${tokens.sign({ k: 'l', e: emailId, u: url })}`;
