import { sql } from 'kysely';
import type { Db } from '../db/connection.js';
import type { Role } from '../db/schema.js';

/** The columns a person is shown with: never a hash. */
const USER_COLUMNS = ['users.id', 'users.team_id', 'users.email', 'users.role', 'users.created_at', 'users.invite_expires_at'] as const;
const hasPassword = sql<boolean>`users.password_hash IS NOT NULL`.as('active');

export async function insertInvitedUser(db: Db, user: { id: string; teamId: number; email: string; role: Role; inviteTokenHash: string; inviteExpiresAt: Date }) {
  return db
    .insertInto('users')
    .values({ id: user.id, team_id: user.teamId, email: user.email, role: user.role, invite_token_hash: user.inviteTokenHash, invite_expires_at: user.inviteExpiresAt })
    .onConflict((oc) => oc.expression(sql`lower(email)`).doNothing())
    .returning(USER_COLUMNS)
    .executeTakeFirst();
}

/** Anyone with this address, in any team (addresses are unique across teams). */
export async function findUserByEmail(db: Db, email: string) {
  return db
    .selectFrom('users')
    .select([...USER_COLUMNS, 'users.password_hash', hasPassword])
    .where(sql`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

/** A new invite, with the role it offers, for someone who has not chosen a password yet; undefined when they have (or are gone). */
export async function renewInvite(db: Db, userId: string, invite: { tokenHash: string; expiresAt: Date; role: Role }) {
  return db
    .updateTable('users')
    .set({ invite_token_hash: invite.tokenHash, invite_expires_at: invite.expiresAt, role: invite.role, updated_at: new Date() })
    .where('id', '=', userId)
    .where('password_hash', 'is', null)
    .returning(USER_COLUMNS)
    .executeTakeFirst();
}

/**
 * Spends an invite: sets the password and clears the token in one statement, so a link can be
 * used once even when two tabs submit it together. Undefined for an unknown or expired token.
 */
export async function acceptInvite(db: Db, inviteTokenHash: string, passwordHash: string, now: Date) {
  return db
    .updateTable('users')
    .set({ password_hash: passwordHash, invite_token_hash: null, invite_expires_at: null, updated_at: now })
    .where('invite_token_hash', '=', inviteTokenHash)
    .where('invite_expires_at', '>', now)
    .returning(USER_COLUMNS)
    .executeTakeFirst();
}

/** Whether an unexpired invite carries this token (the page that asks for a password). */
export async function findInvite(db: Db, inviteTokenHash: string, now: Date) {
  return db
    .selectFrom('users')
    .select(USER_COLUMNS)
    .where('invite_token_hash', '=', inviteTokenHash)
    .where('invite_expires_at', '>', now)
    .executeTakeFirst();
}

export async function listTeamUsers(db: Db, teamId: number) {
  return db.selectFrom('users').select([...USER_COLUMNS, hasPassword]).where('team_id', '=', teamId).orderBy('created_at').orderBy('id').execute();
}

/** Removes a person of the team, and with them their sessions (ON DELETE CASCADE). */
export async function deleteTeamUser(db: Db, teamId: number, userId: string) {
  const result = await db.deleteFrom('users').where('team_id', '=', teamId).where('id', '=', userId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * Locks the team's owners who can sign in (a password chosen), in id order so concurrent changes
 * take them in turn: a change that could leave the team without one is decided under this lock.
 * A row changed by the transaction waited for is read again, so an owner it demoted is not counted.
 */
export async function lockActiveOwners(db: Db, teamId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('team_id', '=', teamId)
    .where('role', '=', 'owner')
    .where('password_hash', 'is not', null)
    .orderBy('id')
    .forUpdate()
    .execute();
  return rows.map((row) => row.id);
}

/** A person of the team, locked for the change about to be made to them. */
export async function lockTeamUser(db: Db, teamId: number, userId: string) {
  return db.selectFrom('users').select([...USER_COLUMNS, hasPassword]).where('team_id', '=', teamId).where('id', '=', userId).forUpdate().executeTakeFirst();
}

export async function updateUserRole(db: Db, teamId: number, userId: string, role: Role) {
  await db.updateTable('users').set({ role, updated_at: new Date() }).where('team_id', '=', teamId).where('id', '=', userId).execute();
}

export async function insertSession(db: Db, session: { tokenHash: string; userId: string; expiresAt: Date }) {
  await db.insertInto('sessions').values({ token_hash: session.tokenHash, user_id: session.userId, expires_at: session.expiresAt }).execute();
}

/** The person behind a live session: one primary-key probe and one join. */
export async function findSessionUser(db: Db, tokenHash: string, now: Date) {
  return db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['users.id', 'users.team_id', 'users.email', 'users.role', 'sessions.expires_at'])
    .where('sessions.token_hash', '=', tokenHash)
    .where('sessions.expires_at', '>', now)
    .executeTakeFirst();
}

export async function deleteSession(db: Db, tokenHash: string) {
  await db.deleteFrom('sessions').where('token_hash', '=', tokenHash).execute();
}
