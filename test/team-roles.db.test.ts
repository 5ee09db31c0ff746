import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as users from '../src/data/users.js';
import { openDatabase, type DatabaseHandle } from '../src/db/connection.js';
import { RecipientTokens } from '../src/mail/tokens.js';
import type { Caller, Role } from '../src/people/caller.js';
import { acceptInvite, changeUserRole, inviteUser, listUsers, removeUser } from '../src/people/team.js';
import { createTeam } from '../src/services/teams.js';
import { createTestDatabase } from './helpers/database.js';
import { sleep } from './helpers/wait.js';

// The rules of people in a team that the database keeps: a team never loses its last owner who
// can sign in, however the changes that would take it interleave, and a person moved down or
// removed has no session left.

let database: DatabaseHandle;
const tokens = new RecipientTokens('a secret of this test, long enough to sign with');
const deps = () => ({ db: database.db, tokens, publicUrl: 'http://mailroom.test' });
const operator = (teamId: number): Caller => ({ teamId, domainId: null });

beforeAll(async () => {
  database = await openDatabase((await createTestDatabase()).source);
});
afterAll(() => database?.close());

let unique = 0;

/** A person of the team with this role who has chosen a password (an active one). */
async function active(teamId: number, role: Role) {
  const invite = await inviteUser(deps(), operator(teamId), { email: `${role}-${unique++}@roles.test`, role });
  await acceptInvite(deps(), { token: invite.inviteUrl.split('/').at(-1)!, password: 'a password of some length' });
  return invite.userId;
}

async function teamWithOwners(count: number) {
  const { teamId } = await createTeam({ db: database.db }, { name: 'Owners' });
  const owners: string[] = [];
  for (let i = 0; i < count; i++) owners.push(await active(teamId, 'owner'));
  return { teamId, owners };
}

const ownersOf = async (teamId: number) => (await listUsers(deps(), operator(teamId))).filter((p) => p.role === 'owner' && p.status === 'active').map((p) => p.userId);

/**
 * Runs the changes while another transaction holds the lock they all take first, then lets it
 * go: on PostgreSQL they are all under way and waiting together, the race at its closest.
 */
async function together(teamId: number, changes: (() => Promise<unknown>)[]) {
  let release!: () => void;
  let locked!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  const holder = database.db.transaction().execute(async (tx) => {
    await users.lockActiveOwners(tx, teamId);
    locked();
    await new Promise<void>((resolve) => (release = resolve));
  });
  await isLocked;
  const outcomes = Promise.allSettled(changes.map((change) => change()));
  await sleep(database.kind === 'postgres' ? 150 : 0);
  release();
  await holder;
  return outcomes;
}

const codes = (outcomes: PromiseSettledResult<unknown>[]) => outcomes.map((o) => (o.status === 'fulfilled' ? 'done' : (o.reason as { code?: string }).code)).sort();

describe('the last owner of a team', () => {
  it('two owners demoting each other at once: one is demoted, the other refused (409), and one owner remains', async () => {
    for (let round = 0; round < 3; round++) {
      const { teamId, owners } = await teamWithOwners(2);
      const [a, b] = owners as [string, string];
      const outcomes = await together(teamId, [
        () => changeUserRole(deps(), operator(teamId), { userId: a, role: 'admin' }),
        () => changeUserRole(deps(), operator(teamId), { userId: b, role: 'member' }),
      ]);
      expect(codes(outcomes)).toEqual(['CONFLICT', 'done']);
      expect(await ownersOf(teamId)).toHaveLength(1);
    }
  });

  it('three owners removed at once: two go, the last stays (409)', async () => {
    const { teamId, owners } = await teamWithOwners(3);
    const outcomes = await together(teamId, owners.map((userId) => () => removeUser(deps(), operator(teamId), { userId })));
    expect(codes(outcomes)).toEqual(['CONFLICT', 'done', 'done']);
    expect(await ownersOf(teamId)).toHaveLength(1);
    expect(await listUsers(deps(), operator(teamId))).toHaveLength(1);
  });

  it('a demotion and a removal of the only two owners at once leave one of them owner', async () => {
    const { teamId, owners } = await teamWithOwners(2);
    const [a, b] = owners as [string, string];
    const outcomes = await together(teamId, [
      () => removeUser(deps(), operator(teamId), { userId: a }),
      () => changeUserRole(deps(), operator(teamId), { userId: b, role: 'viewer' }),
    ]);
    expect(codes(outcomes)).toEqual(['CONFLICT', 'done']);
    expect(await ownersOf(teamId)).toHaveLength(1);
  });

  it('even the operator cannot demote or remove it; an owner invited but not signed in does not count, and can be removed', async () => {
    const { teamId, owners } = await teamWithOwners(1);
    const invited = await inviteUser(deps(), operator(teamId), { email: `pending-${unique++}@roles.test`, role: 'owner' });
    await expect(changeUserRole(deps(), operator(teamId), { userId: owners[0]!, role: 'admin' })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(removeUser(deps(), operator(teamId), { userId: owners[0]! })).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringContaining("is the team's last owner and cannot be removed") });
    expect(await removeUser(deps(), operator(teamId), { userId: invited.userId })).toMatchObject({ removed: true });
    expect(await ownersOf(teamId)).toEqual(owners);
  });
});

describe('sessions of a person changed', () => {
  const sessionsOf = async (userId: string) => (await database.db.selectFrom('sessions').select('token_hash').where('user_id', '=', userId).execute()).length;

  it('moving a person down deletes their sessions in the same change; moving them up or to the same role keeps them', async () => {
    const { teamId } = await teamWithOwners(1);
    const person = await active(teamId, 'member');
    expect(await sessionsOf(person)).toBe(1);
    await changeUserRole(deps(), operator(teamId), { userId: person, role: 'admin' });
    await changeUserRole(deps(), operator(teamId), { userId: person, role: 'admin' });
    expect(await sessionsOf(person)).toBe(1);
    expect(await changeUserRole(deps(), operator(teamId), { userId: person, role: 'viewer' })).toMatchObject({ role: 'viewer', previousRole: 'admin' });
    expect(await sessionsOf(person)).toBe(0);
  });

  it('a refused demotion keeps the sessions: nothing of the change is written', async () => {
    const { teamId, owners } = await teamWithOwners(1);
    await expect(changeUserRole(deps(), operator(teamId), { userId: owners[0]!, role: 'viewer' })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await sessionsOf(owners[0]!)).toBe(1);
  });
});
