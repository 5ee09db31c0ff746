import * as accounts from '../data/account-security.js';
import { findUserByEmail } from '../data/users.js';
import type { Deps } from '../deps.js';
import { ApiError } from '../errors.js';
import { audit } from '../events/audit.js';
import { newId } from '../ids.js';
import { parseOrThrow } from '../validation.js';
import { emailSchema, hashToken, passwordSchema } from './credentials.js';
import { storeNewPassword } from './account.js';
import { hashPassword } from './passwords.js';
import { linkMailBodies, queueSystemMail, systemLinkToken } from './system-mail.js';

export const RESET_TTL_MS = 60 * 60_000;

/** The mail with the link (`{{link}}`, filled in when it is sent). */
function resetMail(email: string) {
  const lead = `Someone, hopefully you, asked to choose a new password for ${email} on Mailroom.`;
  const validity = 'The link works once, for an hour. If you did not ask for it, ignore this email: your password stays as it is.';
  return { subject: 'Choose a new Mailroom password', ...linkMailBodies({ lead, action: 'Choose a new password', validity }) };
}

/**
 * Mails a reset link to the address when a person who has chosen a password has it; nothing
 * otherwise, and the caller answers the same either way, so no one learns which addresses have
 * accounts. The link is good once, for an hour; only its token's hash is kept. When the mail
 * cannot be sent (SYSTEM_FROM unset or not on a verified domain), the operator is told in the log.
 */
export async function requestPasswordReset(deps: Pick<Deps, 'db' | 'config' | 'tokens' | 'log'>, input: { email: string; now: Date }): Promise<void> {
  const email = parseOrThrow(emailSchema, input.email, 'email');
  const user = await findUserByEmail(deps.db, email);
  if (!user?.password_hash) return;
  const link = { kind: 'reset', resetId: newId() } as const;
  const queued = await deps.db.transaction().execute(async (tx) => {
    await accounts.deleteDeadResets(tx, user.id, input.now);
    await accounts.insertPasswordReset(tx, { id: link.resetId, userId: user.id, tokenHash: hashToken(systemLinkToken(deps, link)), expiresAt: new Date(input.now.getTime() + RESET_TTL_MS) });
    return queueSystemMail(tx, deps, { teamId: user.team_id, to: user.email, ...resetMail(user.email), link });
  });
  if (!queued.queued) deps.log.warn('a password reset link was asked for but cannot be mailed', { userId: user.id, reason: queued.reason });
}

/** Why a link no longer works, in the words the page shows. */
function deadLink(reset: { expires_at: Date; used_at: Date | null } | undefined, now: Date): ApiError {
  if (!reset) return new ApiError('NOT_FOUND', 'This reset link is unknown: ask for a new one');
  if (reset.used_at !== null) return new ApiError('NOT_FOUND', 'This reset link has been used, or the password was changed since it was sent: ask for a new one');
  if (reset.expires_at <= now) return new ApiError('NOT_FOUND', 'This reset link has expired (links work for an hour): ask for a new one');
  return new ApiError('NOT_FOUND', 'This reset link has just been used: ask for a new one');
}

/** The address a live reset link is for, for the page that asks for the new password; NOT_FOUND saying why when it is dead. */
export async function findPasswordReset(deps: Pick<Deps, 'db'>, input: { token: string; now: Date }) {
  const reset = await accounts.findPasswordReset(deps.db, hashToken(input.token));
  if (!reset || reset.used_at !== null || reset.expires_at <= input.now) throw deadLink(reset, input.now);
  return { email: reset.email };
}

/**
 * Sets the new password a reset link asks for: the link is spent in the statement that checks it
 * is live, so it works once; every session of the person ends, every other link of theirs is
 * retired, and the change is in the audit log as made by the person, from `ip`. The person then
 * signs in with it (and their second factor, if on: a reset does not get past it).
 */
export async function resetPassword(deps: Pick<Deps, 'db'>, input: { token: string; password: string; now: Date; ip: string | null }): Promise<void> {
  const password = parseOrThrow(passwordSchema, input.password, 'password');
  const passwordHash = await hashPassword(password);
  const tokenHash = hashToken(input.token);
  await deps.db.transaction().execute(async (tx) => {
    const spent = await accounts.spendPasswordReset(tx, tokenHash, input.now);
    const account = spent && (await accounts.findAccount(tx, spent.user_id));
    if (!account) throw deadLink(await accounts.findPasswordReset(tx, tokenHash), input.now);
    await storeNewPassword(tx, account.id, passwordHash, input.now);
    const self = { teamId: account.team_id, actor: { type: 'user' as const, id: account.id, label: account.email, ip: input.ip } };
    await audit(tx, self, { action: 'user.passwordReset', targetType: 'user', targetId: account.id }, input.now);
  });
}
