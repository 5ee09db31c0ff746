import type { Role } from '../db/schema.js';
import type { Deps } from '../deps.js';
import * as users from '../data/users.js';
import { ApiError } from '../errors.js';
import { hashToken, newToken } from './credentials.js';
import { decoyHash, verifyPassword } from './passwords.js';

type UserDeps = Pick<Deps, 'db'>;

export const SESSION_TTL_MS = 14 * 86_400_000;

/** A signed-in person: who they are, which team they act for and with which role (read afresh with each request). */
export type SessionUser = { userId: string; teamId: number; email: string; role: Role };
export type NewSession = { token: string; expiresAt: Date; user: SessionUser };

export async function startSession(db: UserDeps['db'], user: { id: string; team_id: number; email: string; role: Role }): Promise<NewSession> {
  const token = newToken();
  const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
  await users.insertSession(db, { tokenHash: hashToken(token), userId: user.id, expiresAt });
  return { token, expiresAt, user: { userId: user.id, teamId: user.team_id, email: user.email, role: user.role } };
}

/** Checks an address and password; the same answer whether the address or the password is wrong. */
export async function signIn({ db }: UserDeps, input: { email: string; password: string }): Promise<NewSession> {
  const user = await users.findUserByEmail(db, input.email.trim());
  const matches = await verifyPassword(input.password, user?.password_hash ?? (await decoyHash()));
  if (!user?.password_hash || !matches) throw new ApiError('UNAUTHORIZED', 'Wrong email address or password');
  return startSession(db, user);
}

export async function sessionUser({ db }: UserDeps, token: string): Promise<SessionUser | null> {
  const row = await users.findSessionUser(db, hashToken(token), new Date());
  return row ? { userId: row.id, teamId: row.team_id, email: row.email, role: row.role } : null;
}

export async function signOut({ db }: UserDeps, token: string): Promise<void> {
  await users.deleteSession(db, hashToken(token));
}
