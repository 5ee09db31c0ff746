import { z } from 'zod';
import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import { disableTotp, endSessions } from '../data/account-security.js';
import * as users from '../data/users.js';
import { findTeam } from '../data/teams.js';
import { ApiError, conflict, notFound } from '../errors.js';
import { audit } from '../events/audit.js';
import { newId } from '../ids.js';
import { SYSTEM_LINK_PATHS, systemLinkToken, systemLinkUrl } from '../mail/links.js';
import { parseOrThrow } from '../validation.js';
import { ROLES, type Caller, type Role } from './caller.js';
import { emailSchema, hashToken, newToken, passwordSchema } from './credentials.js';
import { inviteMail } from './invite-mail.js';
import { hashPassword } from './passwords.js';
import { assertAllowed, atLeast } from './roles.js';
import { startSession, type NewSession } from './sessions.js';
import { queueSystemMail, type Queued, type SystemLink } from './system-mail.js';

type UserDeps = Pick<Deps, 'db'>;

/** An invite that is mailed (the dashboard's): the mail goes from SYSTEM_FROM, configured here. */
type MailedInviteDeps = Pick<Deps, 'db' | 'tokens' | 'config'>;
/** An invite whose link the operator's CLI hands on itself. */
type LinkInviteDeps = Pick<Deps, 'db' | 'tokens'> & { publicUrl: string };

export const INVITE_TTL_MS = 7 * 86_400_000;
export const INVITE_PATH = SYSTEM_LINK_PATHS.invite;

const roleSchema = z.enum(ROLES as [Role, ...Role[]]);

type PersonRow = { id: string; team_id: number; email: string; role: Role; created_at: Date; active?: boolean };

const view = (row: PersonRow) => ({
  userId: row.id,
  teamId: row.team_id,
  email: row.email,
  role: row.role,
  ...(row.active === undefined ? {} : { status: row.active ? ('active' as const) : ('invited' as const) }),
  createdAt: row.created_at.toISOString(),
});
export type Person = ReturnType<typeof view>;
type Invited = Person & { status: 'invited'; inviteUrl: string; expiresAt: string };

/** Among people, an owner is touched only by an owner (or by the operator's CLI, which has no role). */
function assertOwnerMay(caller: Caller, action: string): void {
  if (caller.role !== undefined && caller.role !== 'owner') throw new ApiError('FORBIDDEN', `Only an owner can ${action}`);
}

/**
 * A team keeps at least one owner who can sign in: `owners` are those locked by lockActiveOwners,
 * so two changes at once cannot each leave the other to be the last.
 */
function assertOwnerRemains(owners: string[], person: PersonRow, change: string): void {
  if (person.role === 'owner' && person.active && !owners.some((id) => id !== person.id)) {
    throw conflict(`${person.email} is the team's last owner and cannot be ${change}: make someone else an owner first`);
  }
}

type InviteInput = { email: string; role?: string };

/** A fresh invite link for a person: a new nonce, so the link sent before stops working. */
function newInviteLink(userId: string): Extract<SystemLink, { kind: 'invite' }> {
  return { kind: 'invite', userId, nonce: newToken() };
}

/**
 * Invites a person into the caller's team: a link to choose a password, good once, for 7 days.
 * Inviting someone who has not chosen a password yet sends a fresh link (the old one stops
 * working), with the role given this time. Only an owner may invite an owner. With `config`, the
 * link is mailed from SYSTEM_FROM when it can be (`mail` says whether it was, and why not);
 * `inviteUrl` is for the inviter or operator to hand on when it was not.
 */
export function inviteUser(deps: MailedInviteDeps, caller: Caller, input: InviteInput): Promise<Invited & { mail: Queued }>;
export function inviteUser(deps: LinkInviteDeps, caller: Caller, input: InviteInput): Promise<Invited>;
export async function inviteUser(deps: MailedInviteDeps | LinkInviteDeps, caller: Caller, input: InviteInput): Promise<Invited & { mail?: Queued }> {
  assertAllowed(caller, 'people', 'change');
  const email = parseOrThrow(emailSchema, input.email, 'email');
  const given = input.role === undefined ? undefined : parseOrThrow(roleSchema, input.role, 'role');
  if (given === 'owner') assertOwnerMay(caller, 'invite an owner');
  const team = await findTeam(deps.db, caller.teamId);
  if (!team) throw notFound(`Team ${caller.teamId}`);
  const expiresAt = new Date(Date.now() + INVITE_TTL_MS);
  const tokenHash = (link: SystemLink) => hashToken(systemLinkToken(deps.tokens, link));
  const publicUrl = 'config' in deps ? deps.config.publicUrl : deps.publicUrl;
  return deps.db.transaction().execute(async (tx) => {
    // A team's first person runs it; later ones start as members unless said otherwise.
    const role = given ?? ((await users.listTeamUsers(tx, team.id)).length === 0 ? 'owner' : 'member');
    let link = newInviteLink(`usr_${newId(16)}`);
    let row = await users.insertInvitedUser(tx, { id: link.userId, teamId: team.id, email, role, inviteTokenHash: tokenHash(link), inviteExpiresAt: expiresAt });
    if (!row) {
      const existing = await users.findUserByEmail(tx, email);
      if (!existing || existing.team_id !== team.id) throw conflict(`${email} already belongs to a user of another team`);
      if (existing.active) throw conflict(`${email} has already chosen a password and can sign in`);
      if (existing.role === 'owner') assertOwnerMay(caller, 'invite an owner');
      link = newInviteLink(existing.id);
      row = await users.renewInvite(tx, existing.id, { tokenHash: tokenHash(link), expiresAt, role: given ?? existing.role });
      if (!row) throw conflict(`${email} has just chosen a password and can sign in`);
    }
    await audit(tx, caller, { action: 'user.invited', targetType: 'user', targetId: row.id });
    const invited: Invited = { ...view(row), status: 'invited', inviteUrl: systemLinkUrl(publicUrl, deps.tokens, link), expiresAt: expiresAt.toISOString() };
    if (!('config' in deps)) return invited;
    const body = inviteMail({ inviter: caller.actor?.type === 'user' ? caller.actor.label : null, team: team.name, role: row.role, days: INVITE_TTL_MS / 86_400_000 });
    return { ...invited, mail: await queueSystemMail(tx, deps, { teamId: team.id, to: email, ...body, link }) };
  });
}

/** The people of the caller's team, with their role and whether they have signed in yet; every role may see them. */
export async function listUsers({ db }: UserDeps, caller: Caller) {
  assertAllowed(caller, 'people', 'read');
  if (!(await findTeam(db, caller.teamId))) throw notFound(`Team ${caller.teamId}`);
  return (await users.listTeamUsers(db, caller.teamId)).map(view);
}

/**
 * Locks the team's owners, then the person, for a change to them: always in that order, so two
 * changes to the people of a team take turns rather than deadlock. A person of another team is
 * not found, as one who never was.
 */
async function lockForChange(tx: Db, caller: Caller, userId: string) {
  const owners = await users.lockActiveOwners(tx, caller.teamId);
  const person = await users.lockTeamUser(tx, caller.teamId, userId);
  if (!person) throw notFound(`User ${userId}`);
  return { owners, person };
}

/**
 * Gives a person of the team another role. Only an owner may make an owner or change an owner's
 * role, and the last owner who can sign in keeps theirs. A person moved down loses their sessions
 * at once: they sign in again to the rights they have now.
 */
export async function changeUserRole({ db }: UserDeps, caller: Caller, input: { userId: string; role: string }) {
  assertAllowed(caller, 'people', 'change');
  const role = parseOrThrow(roleSchema, input.role, 'role');
  return db.transaction().execute(async (tx) => {
    const { owners, person } = await lockForChange(tx, caller, input.userId);
    if (person.role === 'owner') assertOwnerMay(caller, "change an owner's role");
    if (role === 'owner') assertOwnerMay(caller, 'make someone an owner');
    const changed = { ...view(person), role, previousRole: person.role };
    if (role === person.role) return changed;
    assertOwnerRemains(owners, person, 'demoted');
    await users.updateUserRole(tx, caller.teamId, person.id, role);
    if (!atLeast(role, person.role)) await endSessions(tx, person.id);
    await audit(tx, caller, { action: 'user.roleChanged', targetType: 'user', targetId: person.id });
    return changed;
  });
}

/** Removes a person of the team; their sessions end with them. Only an owner removes an owner, and never the last one. */
export async function removeUser({ db }: UserDeps, caller: Caller, input: { userId: string }) {
  assertAllowed(caller, 'people', 'change');
  return db.transaction().execute(async (tx) => {
    const { owners, person } = await lockForChange(tx, caller, input.userId);
    if (person.role === 'owner') assertOwnerMay(caller, 'remove an owner');
    assertOwnerRemains(owners, person, 'removed');
    await users.deleteTeamUser(tx, caller.teamId, person.id);
    await audit(tx, caller, { action: 'user.removed', targetType: 'user', targetId: person.id });
    return { userId: person.id, email: person.email, removed: true };
  });
}

/**
 * Turns a person's two-factor sign-in off, for one who lost both their authenticator and their
 * recovery codes: their sessions end, and they sign in with their password and set it up again.
 * Only an owner (or the operator) does it to an owner.
 */
export async function resetTwoFactor({ db }: UserDeps, caller: Caller, input: { userId: string }) {
  assertAllowed(caller, 'people', 'change');
  return db.transaction().execute(async (tx) => {
    const { person } = await lockForChange(tx, caller, input.userId);
    if (person.role === 'owner') assertOwnerMay(caller, "turn off an owner's two-factor sign-in");
    const now = new Date();
    await disableTotp(tx, person.id, now);
    await endSessions(tx, person.id);
    await audit(tx, caller, { action: 'user.twoFactorDisabled', targetType: 'user', targetId: person.id }, now);
    return { userId: person.id, email: person.email, twoFactor: false };
  });
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

