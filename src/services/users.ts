import { hash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import * as users from '../data/users.js';
import { findTeam } from '../data/teams.js';
import { ApiError, conflict, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { parseOrThrow } from '../validation.js';
import { isCommonPassword } from './common-passwords.js';
import { decoyHash, hashPassword, verifyPassword } from './passwords.js';

type UserDeps = Pick<Deps, 'db'>;

export const INVITE_TTL_MS = 7 * 86_400_000;
export const SESSION_TTL_MS = 14 * 86_400_000;
export const INVITE_PATH = '/invite';

// Invite and session tokens carry 256 random bits: a fast hash is enough to keep them unreadable at rest.
const hashToken = (token: string) => hash('sha256', token, 'base64url');
const newToken = () => randomBytes(32).toString('base64url');

export const emailSchema = z.string().trim().toLowerCase().pipe(z.email().max(254));
export const passwordSchema = z
  .string()
  .min(10, 'must be at least 10 characters')
  .max(200, 'must be at most 200 characters')
  .refine((password) => !isCommonPassword(password), 'is one of the most common passwords, which are guessed first; choose another');

const view = (row: { id: string; team_id: number; email: string; created_at: Date; active?: boolean }) => ({
  userId: row.id,
  teamId: row.team_id,
  email: row.email,
  ...(row.active === undefined ? {} : { status: row.active ? ('active' as const) : ('invited' as const) }),
  createdAt: row.created_at.toISOString(),
});

/**
 * Invites a person into a team: a link to choose a password, good once, for 7 days. Inviting
 * someone who has not chosen a password yet sends a fresh link (the old one stops working).
 */
export async function inviteUser({ db }: UserDeps, input: { teamId: number; email: string; publicUrl: string }) {
  const email = parseOrThrow(emailSchema, input.email, 'email');
  if (!(await findTeam(db, input.teamId))) throw notFound(`Team ${input.teamId}`);
  const token = newToken();
  const expiresAt = new Date(Date.now() + INVITE_TTL_MS);
  let row = await users.insertInvitedUser(db, { id: `usr_${newId(16)}`, teamId: input.teamId, email, inviteTokenHash: hashToken(token), inviteExpiresAt: expiresAt });
  if (!row) {
    const existing = await users.findUserByEmail(db, email);
    if (!existing || existing.team_id !== input.teamId) throw conflict(`${email} already belongs to a user of another team`);
    if (existing.active) throw conflict(`${email} has already chosen a password and can sign in`);
    row = await users.renewInvite(db, existing.id, hashToken(token), expiresAt);
    if (!row) throw conflict(`${email} has just chosen a password and can sign in`);
  }
  return { ...view(row), inviteUrl: `${input.publicUrl}${INVITE_PATH}/${token}`, expiresAt: expiresAt.toISOString() };
}

export async function listUsers({ db }: UserDeps, input: { teamId: number }) {
  if (!(await findTeam(db, input.teamId))) throw notFound(`Team ${input.teamId}`);
  return (await users.listTeamUsers(db, input.teamId)).map(view);
}

/** Removes a person; their sessions end with them. */
export async function removeUser({ db }: UserDeps, input: { teamId: number; userId: string }) {
  if (!(await users.deleteTeamUser(db, input.teamId, input.userId))) throw notFound(`User ${input.userId} in team ${input.teamId}`);
  return { userId: input.userId, removed: true };
}

/** A signed-in person: who they are and which team they act for. */
export type SessionUser = { userId: string; teamId: number; email: string };
export type NewSession = { token: string; expiresAt: Date; user: SessionUser };

async function startSession(db: UserDeps['db'], user: { id: string; team_id: number; email: string }): Promise<NewSession> {
  const token = newToken();
  const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
  await users.insertSession(db, { tokenHash: hashToken(token), userId: user.id, expiresAt });
  return { token, expiresAt, user: { userId: user.id, teamId: user.team_id, email: user.email } };
}

/** The invite behind a link, for the page that asks for a password; NOT_FOUND when spent or expired. */
export async function findInvite({ db }: UserDeps, token: string) {
  const row = await users.findInvite(db, hashToken(token), new Date());
  if (!row) throw notFound('This invite link is used, expired or unknown; it');
  return { email: row.email };
}

/** Sets the password an invite asks for and signs the person in. */
export async function acceptInvite({ db }: UserDeps, input: { token: string; password: string }): Promise<NewSession> {
  const password = parseOrThrow(passwordSchema, input.password, 'password');
  const passwordHash = await hashPassword(password);
  const row = await users.acceptInvite(db, hashToken(input.token), passwordHash, new Date());
  if (!row) throw notFound('This invite link is used, expired or unknown; it');
  return startSession(db, row);
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
  return row ? { userId: row.id, teamId: row.team_id, email: row.email } : null;
}

export async function signOut({ db }: UserDeps, token: string): Promise<void> {
  await users.deleteSession(db, hashToken(token));
}
