import * as accounts from '../data/account-security.js';
import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import { ApiError, notFound } from '../errors.js';
import { audit, type Actor } from '../events/audit.js';
import { parseOrThrow } from '../validation.js';
import type { Caller } from './caller.js';
import { hashToken, passwordSchema } from './credentials.js';
import { hashPassword, verifyPassword } from './passwords.js';

/**
 * A password or code that does not match: a form's field error, and what a guesser gets, so the
 * pages count it against the sign-in throttle (anything else a form says is given back).
 */
export class WrongCredential extends ApiError {
  constructor(field: string, message: string) {
    super('VALIDATION_ERROR', `${field}: ${message}`, [{ path: field, message }]);
  }
}

/** A signed-in person acting on their own account. */
export type Self = Caller & { actor: Actor & { type: 'user' } };

/** The caller as a person acting on their own account: only a signed-in person has one. */
export function asSelf(caller: Caller): Self {
  if (caller.actor?.type !== 'user') throw new ApiError('FORBIDDEN', 'Only a signed-in person can change their own account');
  return caller as Self;
}

export type Account = NonNullable<Awaited<ReturnType<typeof accounts.findAccount>>>;

/** The account of the person acting; gone (removed meanwhile) is NOT_FOUND. */
export async function accountOf(deps: Pick<Deps, 'db'>, self: Self): Promise<Account> {
  const account = await accounts.findAccount(deps.db, self.actor.id);
  if (!account) throw notFound('Your account');
  return account;
}

/** Refuses a wrong current password (WrongCredential on `field`). */
export async function checkCurrentPassword(account: Account, password: string, field = 'currentPassword'): Promise<void> {
  if (!account.password_hash || !(await verifyPassword(password, account.password_hash))) throw new WrongCredential(field, 'is not your current password');
}

/**
 * Stores a person's new password in `tx`: each of their sessions ends but the one whose token
 * hashes to `keepSession`, and every reset link of theirs stops working.
 */
export async function storeNewPassword(tx: Db, userId: string, passwordHash: string, now: Date, keepSession?: string): Promise<void> {
  await accounts.setPassword(tx, userId, passwordHash, now);
  await accounts.endSessions(tx, userId, keepSession);
  await accounts.retireResets(tx, userId, now);
}

/**
 * Changes the person's password, the current one required: every other session of theirs ends
 * (the one asking, `sessionToken`, stays), and so does any reset link they had.
 */
export async function changePassword(
  deps: Pick<Deps, 'db'>,
  self: Self,
  input: { sessionToken: string; currentPassword: string; newPassword: string; now: Date },
): Promise<void> {
  const newPassword = parseOrThrow(passwordSchema, input.newPassword, 'newPassword');
  const account = await accountOf(deps, self);
  await checkCurrentPassword(account, input.currentPassword);
  const passwordHash = await hashPassword(newPassword);
  await deps.db.transaction().execute(async (tx) => {
    await storeNewPassword(tx, account.id, passwordHash, input.now, hashToken(input.sessionToken));
    await audit(tx, self, { action: 'user.passwordChanged', targetType: 'user', targetId: account.id }, input.now);
  });
}
