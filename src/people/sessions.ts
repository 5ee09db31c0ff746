import { hash } from 'node:crypto';
import type { Role } from '../db/schema.js';
import type { Deps } from '../deps.js';
import { findAccount, hasTwoFactor } from '../data/account-security.js';
import * as users from '../data/users.js';
import { ApiError } from '../errors.js';
import { hashToken, newToken } from './credentials.js';
import { decoyHash, verifyPassword } from './passwords.js';
import { requireSecondFactor } from './two-factor.js';

type UserDeps = Pick<Deps, 'db'>;
type SignInDeps = Pick<Deps, 'db' | 'keyVault'>;

export const SESSION_TTL_MS = 14 * 86_400_000;
/** How long a right password waits for its second factor before it must be typed again. */
export const SECOND_STEP_TTL_MS = 5 * 60_000;

/** A signed-in person: who they are, which team they act for and with which role (read afresh with each request). */
export type SessionUser = { userId: string; teamId: number; email: string; role: Role };
export type NewSession = { token: string; expiresAt: Date; user: SessionUser };

export async function startSession(db: UserDeps['db'], user: { id: string; team_id: number; email: string; role: Role }): Promise<NewSession> {
  const token = newToken();
  const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
  await users.insertSession(db, { tokenHash: hashToken(token), userId: user.id, expiresAt });
  return { token, expiresAt, user: { userId: user.id, teamId: user.team_id, email: user.email, role: user.role } };
}

/**
 * A password checked, its second factor awaited: whose, until when, and which password it was
 * (a digest of its stored hash: a password changed or reset meanwhile voids the step).
 */
export type SecondStep = { userId: string; email: string; expiresAt: Date; password: string };

const passwordDigest = (passwordHash: string) => hash('sha256', passwordHash, 'base64url');

/** What a right password leads to: a session, or for a person with two-factor sign-in on, the sealed ticket of the second step. */
export type SignInOutcome = { session: NewSession } | { ticket: string };

/**
 * Checks an address and password; the same answer whether the address or the password is wrong.
 * With two-factor sign-in on, no session starts yet: the ticket carries the checked password to
 * the second step, for SECOND_STEP_TTL_MS.
 */
export async function signIn(deps: SignInDeps, input: { email: string; password: string; now: Date }): Promise<SignInOutcome> {
  const user = await users.findUserByEmail(deps.db, input.email.trim());
  const matches = await verifyPassword(input.password, user?.password_hash ?? (await decoyHash()));
  if (!user?.password_hash || !matches) throw new ApiError('UNAUTHORIZED', 'Wrong email address or password');
  if (!(await hasTwoFactor(deps.db, user.id))) return { session: await startSession(deps.db, user) };
  const step = { userId: user.id, email: user.email, expiresAt: new Date(input.now.getTime() + SECOND_STEP_TTL_MS), password: passwordDigest(user.password_hash) };
  return { ticket: sealTicket(deps, step) };
}

// Names what a sealed ticket is, so no other sealed value (a webhook's secret) can pass for one.
const TICKET_PURPOSE = 'mailroom: password checked, second factor awaited';

/** Sealed with the key vault (AES-256-GCM under a key from SECRET): it cannot be read, altered or made without SECRET. */
function sealTicket(deps: Pick<Deps, 'keyVault'>, step: SecondStep): string {
  return deps.keyVault.sealText(JSON.stringify({ purpose: TICKET_PURPOSE, ...step, expiresAt: step.expiresAt.getTime() }));
}

/** The second step a ticket carries, or null when it is not one made here or has expired. */
export function openTicket(deps: Pick<Deps, 'keyVault'>, ticket: string, now: Date): SecondStep | null {
  let fields: { purpose?: unknown; userId?: unknown; email?: unknown; expiresAt?: unknown; password?: unknown };
  try {
    fields = JSON.parse(deps.keyVault.openText(ticket, 'A sign-in ticket'));
  } catch {
    // Whatever fails to open or parse (altered, another SECRET's, not sealed at all) is no ticket.
    return null;
  }
  const { purpose, userId, email, expiresAt, password } = fields ?? {};
  if (purpose !== TICKET_PURPOSE || typeof userId !== 'string' || typeof email !== 'string' || typeof password !== 'string') return null;
  if (typeof expiresAt !== 'number' || expiresAt <= now.getTime()) return null;
  return { userId, email, expiresAt: new Date(expiresAt), password };
}

/**
 * The second step of signing in: a code of the person's authenticator app, or one of their
 * recovery codes, each accepted once; then the session starts. A wrong code is WrongCredential;
 * a person gone, or whose two-factor sign-in was turned off meanwhile, must sign in again.
 */
export async function completeSignIn(deps: SignInDeps, input: { step: SecondStep; code: string; now: Date }): Promise<NewSession> {
  const account = await findAccount(deps.db, input.step.userId);
  if (!account?.password_hash || account.totp_enabled_at === null || passwordDigest(account.password_hash) !== input.step.password) {
    throw new ApiError('UNAUTHORIZED', 'Your sign-in has ended; enter your password again');
  }
  await requireSecondFactor(deps.db, deps, account, input.code, input.now);
  return startSession(deps.db, account);
}

export async function sessionUser({ db }: UserDeps, token: string): Promise<SessionUser | null> {
  const row = await users.findSessionUser(db, hashToken(token), new Date());
  return row ? { userId: row.id, teamId: row.team_id, email: row.email, role: row.role } : null;
}

export async function signOut({ db }: UserDeps, token: string): Promise<void> {
  await users.deleteSession(db, hashToken(token));
}
