import type { RecipientTokens, UnsubscribePayload } from './tokens.js';

/** How long a double opt-in confirmation link holds, from when its email was created. */
export const CONFIRMATION_LINK_MS = 7 * 86_400_000;
export const DOUBLE_OPT_IN_PLACEHOLDER = /\{\{\s*doubleOptInUrl\s*\}\}/g;

export const unsubscribeUrl = (publicUrl: string, tokens: RecipientTokens, payload: Omit<UnsubscribePayload, 'k'>) =>
  `${publicUrl}/unsubscribe/${tokens.sign({ k: 'u', ...payload })}`;

export const confirmationUrl = (publicUrl: string, tokens: RecipientTokens, target: { teamId: number; bookId: string; contactId: string }, createdAt: Date) =>
  `${publicUrl}/confirm/${tokens.sign({ k: 'c', t: target.teamId, b: target.bookId, c: target.contactId, x: createdAt.getTime() + CONFIRMATION_LINK_MS })}`;
