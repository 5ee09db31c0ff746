import type { Role } from '../db/schema.js';
import type { Deps } from '../deps.js';
import * as users from '../data/users.js';
import { findTeam } from '../data/teams.js';
import { conflict, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { parseOrThrow } from '../validation.js';
import { emailSchema, hashToken, newToken, passwordSchema } from './credentials.js';
import { hashPassword } from './passwords.js';
import { startSession, type NewSession } from './sessions.js';

type UserDeps = Pick<Deps, 'db'>;

export const INVITE_TTL_MS = 7 * 86_400_000;
export const INVITE_PATH = '/invite';

const view = (row: { id: string; team_id: number; email: string; role: Role; created_at: Date; active?: boolean }) => ({
  userId: row.id,
  teamId: row.team_id,
  email: row.email,
  role: row.role,
  ...(row.active === undefined ? {} : { status: row.active ? ('active' as const) : ('invited' as const) }),
  createdAt: row.created_at.toISOString(),
});

/**
 * Invites a person into a team: a link to choose a password, good once, for 7 days. Inviting
 * someone who has not chosen a password yet sends a fresh link (the old one stops working).
 */
export async function inviteUser({ db }: UserDeps, input: { teamId: number; email: string; role?: Role; publicUrl: string }) {
  const email = parseOrThrow(emailSchema, input.email, 'email');
  if (!(await findTeam(db, input.teamId))) throw notFound(`Team ${input.teamId}`);
  const token = newToken();
  const expiresAt = new Date(Date.now() + INVITE_TTL_MS);
  // A team's first person runs it; later ones start as members unless said otherwise.
  const role = input.role ?? ((await users.listTeamUsers(db, input.teamId)).length === 0 ? 'owner' : 'member');
  let row = await users.insertInvitedUser(db, { id: `usr_${newId(16)}`, teamId: input.teamId, email, role, inviteTokenHash: hashToken(token), inviteExpiresAt: expiresAt });
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

