import { sql } from 'kysely';
import type { Db } from '../db/connection.js';

// A person's own sign-in security: their password, second factor, recovery codes, reset links and
// the sessions a change of them ends. Only hashes and sealed values are read or written here.

/** What checking a person's password or second factor needs, by id. */
export async function findAccount(db: Db, userId: string) {
  return db
    .selectFrom('users')
    .select(['id', 'team_id', 'email', 'role', 'password_hash', 'totp_secret', 'totp_enabled_at', 'totp_last_step'])
    .where('id', '=', userId)
    .executeTakeFirst();
}

/** Whether the person signs in with a second factor. */
export async function hasTwoFactor(db: Db, userId: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('id').where('id', '=', userId).where('totp_enabled_at', 'is not', null).executeTakeFirst();
  return row !== undefined;
}

export async function setPassword(db: Db, userId: string, passwordHash: string, now: Date) {
  await db.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', userId).execute();
}

/** Ends the person's sessions, all of them or all but the one whose token hashes to `keep`. */
export async function endSessions(db: Db, userId: string, keep?: string) {
  let query = db.deleteFrom('sessions').where('user_id', '=', userId);
  if (keep !== undefined) query = query.where('token_hash', '!=', keep);
  await query.execute();
}

/** Every person's sealed two-factor secret (on, or being set up), locked until the transaction ends (in key order: no deadlock). */
export async function lockTotpSecrets(db: Db) {
  return db.selectFrom('users').select(['id', 'email', 'totp_secret']).where('totp_secret', 'is not', null).orderBy('id').forUpdate().execute();
}

export async function storeTotpSecret(db: Db, userId: string, sealedSecret: string) {
  await db.updateTable('users').set({ totp_secret: sealedSecret }).where('id', '=', userId).execute();
}

/** Keeps a secret being set up; undefined when two-factor is already on (its secret stays). */
export async function storePendingTotpSecret(db: Db, userId: string, sealedSecret: string, now: Date) {
  return db
    .updateTable('users')
    .set({ totp_secret: sealedSecret, updated_at: now })
    .where('id', '=', userId)
    .where('totp_enabled_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
}

/**
 * Turns two-factor on with the secret being set up, spending the confirming code's step; undefined
 * when the secret is no longer the one the code was checked against (set up again meanwhile) or it is on already.
 */
export async function enableTotp(db: Db, userId: string, sealedSecret: string, step: number, now: Date) {
  return db
    .updateTable('users')
    .set({ totp_enabled_at: now, totp_last_step: step, updated_at: now })
    .where('id', '=', userId)
    .where('totp_secret', '=', sealedSecret)
    .where('totp_enabled_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
}

/**
 * Spends a code's time step: only a step after the last one spent is taken, in one statement, so
 * one code cannot be used twice even by two requests at once. Undefined when it was not taken.
 */
export async function spendTotpStep(db: Db, userId: string, step: number) {
  return db
    .updateTable('users')
    .set({ totp_last_step: step })
    .where('id', '=', userId)
    .where('totp_enabled_at', 'is not', null)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .returning('id')
    .executeTakeFirst();
}

/** Turns two-factor off: its secret and recovery codes are gone. */
export async function disableTotp(db: Db, userId: string, now: Date) {
  await db.updateTable('users').set({ totp_secret: null, totp_enabled_at: null, totp_last_step: null, updated_at: now }).where('id', '=', userId).execute();
  await db.deleteFrom('recovery_codes').where('user_id', '=', userId).execute();
}

/** The person's recovery codes become these (by hash): the old ones, used or not, stop working. */
export async function replaceRecoveryCodes(db: Db, userId: string, codeHashes: string[]) {
  await db.deleteFrom('recovery_codes').where('user_id', '=', userId).execute();
  await db.insertInto('recovery_codes').values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash }))).execute();
}

/** Spends a recovery code, once: undefined when it is not the person's or was used already. */
export async function spendRecoveryCode(db: Db, userId: string, codeHash: string, now: Date) {
  return db
    .updateTable('recovery_codes')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .returning('user_id')
    .executeTakeFirst();
}

export async function countUnusedRecoveryCodes(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('recovery_codes')
    .select(sql<number>`count(*)::int`.as('count'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return row.count;
}

export async function insertPasswordReset(db: Db, reset: { id: string; userId: string; tokenHash: string; expiresAt: Date }) {
  await db.insertInto('password_resets').values({ id: reset.id, user_id: reset.userId, token_hash: reset.tokenHash, expires_at: reset.expiresAt }).execute();
}

/** Forgets the person's reset links that can no longer be used (spent or expired). */
export async function deleteDeadResets(db: Db, userId: string, now: Date) {
  await db
    .deleteFrom('password_resets')
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('used_at', 'is not', null), eb('expires_at', '<=', now)]))
    .execute();
}

/** Retires every reset link of the person still unused: once their password is changed, none holds. */
export async function retireResets(db: Db, userId: string, now: Date) {
  await db.updateTable('password_resets').set({ used_at: now }).where('user_id', '=', userId).where('used_at', 'is', null).execute();
}

/** The reset behind a token hash, live or not, with its person's address: the page tells a used link from an expired one. */
export async function findPasswordReset(db: Db, tokenHash: string) {
  return db
    .selectFrom('password_resets')
    .innerJoin('users', 'users.id', 'password_resets.user_id')
    .select(['password_resets.id', 'password_resets.expires_at', 'password_resets.used_at', 'users.email'])
    .where('password_resets.token_hash', '=', tokenHash)
    .executeTakeFirst();
}

/**
 * Spends a reset link, in one statement: only an unused, unexpired one is taken, so two requests
 * with the same link cannot both change the password. Undefined when it was not taken.
 */
export async function spendPasswordReset(db: Db, tokenHash: string, now: Date) {
  return db
    .updateTable('password_resets')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('user_id')
    .executeTakeFirst();
}
