import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../src/people/caller.js';
import { inviteUser, listUsers } from '../src/people/team.js';
import { dispatcherDone } from './helpers/emails.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';

// The Team page, driven as a browser without JavaScript drives it: plain form posts with the
// session's cookie and the CSRF token read from the page. What each role may do is checked by
// posting every form anyway (as a forged or edited page would), then reading the team back.

const PASSWORD = 'a team of careful people';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

type Person = { userId: string; email: string; role: Role; cookie: string; csrf: string };
type Answer = { status: number; text: string; location: string | null; /** The notice a change leaves for the next page. */ flash: string | null };

let unique = 0;
const address = (what: string) => `${what}-${Date.now().toString(36)}${(unique++).toString(36)}@team.test`;

/** An invite link as the test server answers it: links name PUBLIC_URL, which here says port 0. */
const onServer = (server: TestServer, url: string) => server.url + new URL(url).pathname;

/** Chooses the password an invite link asks for; answers the session cookie it signs in with. */
async function accept(server: TestServer, inviteUrl: string): Promise<string> {
  const res = await fetch(onServer(server, inviteUrl), { method: 'POST', redirect: 'manual', headers: FORM, body: new URLSearchParams({ password: PASSWORD, confirm: PASSWORD }) });
  expect(res.status, 'accepting the invite').toBe(303);
  return /mailroom_session=[^;]+/.exec(res.headers.getSetCookie().join('\n'))![0];
}

async function send(server: TestServer, cookie: string, pathname: string, form?: Record<string, string>): Promise<Answer> {
  const res = await fetch(server.url + pathname, {
    method: form ? 'POST' : 'GET',
    redirect: 'manual',
    headers: { cookie, connection: 'close', ...(form ? FORM : {}) },
    body: form ? new URLSearchParams(form) : undefined,
  });
  const flash = /mailroom_flash=[^;]+/.exec(res.headers.getSetCookie().join('\n'))?.[0] ?? null;
  return { status: res.status, text: await res.text(), location: res.headers.get('location'), flash };
}

/** A person of the team with this role, invited by the operator and signed in; the CSRF token read from the Team page. */
async function join(server: TestServer, teamId: number, role: Role, email = address(role)): Promise<Person> {
  const invite = await inviteUser(server.deps, { teamId, domainId: null }, { email, role });
  const cookie = await accept(server, invite.inviteUrl);
  const page = await send(server, cookie, '/team');
  expect(page.status).toBe(200);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
  return { userId: invite.userId, email, role, cookie, csrf };
}

const open = (server: TestServer, person: Person, pathname: string) => send(server, person.cookie, pathname);
const post = (server: TestServer, person: Person, pathname: string, form: Record<string, string> = {}) => send(server, person.cookie, pathname, { _csrf: person.csrf, ...form });
/** The page a change redirected to, with the notice it left. */
const followed = (server: TestServer, person: Person, answer: Answer) => send(server, `${person.cookie}; ${answer.flash}`, answer.location!);

/** The team as the operator reads it: each address with its role and status. */
async function teamOf(server: TestServer, teamId: number) {
  const people = await listUsers(server.deps, { teamId, domainId: null });
  return Object.fromEntries(people.map((p) => [p.email, `${p.role} ${p.status}`]));
}

/** Whether the person's session still opens a page, rather than sending them to sign in. */
async function stillSignedIn(server: TestServer, person: Person) {
  const page = await open(server, person, '/team');
  if (page.status === 200) return true;
  expect(page.status).toBe(303);
  expect(page.location).toBe('/login?next=%2Fteam');
  return false;
}

describe('the Team page', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  }, 60_000);
  afterAll(() => server?.stop());

  /** A team with one signed-in person of each role (the owner first: the one who runs it). */
  async function team(name: string) {
    const { teamId } = await server.team(name);
    const owner = await join(server, teamId, 'owner');
    const [admin, member, viewer] = await Promise.all((['admin', 'member', 'viewer'] as const).map((role) => join(server, teamId, role)));
    return { teamId, owner: owner!, admin: admin!, member: member!, viewer: viewer! };
  }

  it('every role sees the people of the team with role and status; only owners and admins get the controls, and an admin none over an owner', async () => {
    const { teamId, owner, admin, member, viewer } = await team('Seen by all');
    const invited = await inviteUser(server.deps, { teamId, domainId: null }, { email: address('pending'), role: 'viewer' });
    for (const person of [owner, admin, member, viewer]) {
      const page = await open(server, person, '/team');
      expect(page.status).toBe(200);
      for (const other of [owner, admin, member, viewer]) expect(page.text).toContain(other.email);
      expect(page.text).toContain(invited.email);
      expect(page.text).toContain('badge-invited');
      expect(page.text).toContain('<a href="/team" aria-current="page">Team</a>');
    }
    const controls = (text: string, person: Person) => text.includes(`action="/team/${person.userId}/role"`) && text.includes(`action="/team/${person.userId}/remove"`);
    const ownersPage = (await open(server, owner, '/team')).text;
    for (const person of [owner, admin, member, viewer]) expect(controls(ownersPage, person), person.role).toBe(true);
    expect(ownersPage).toContain('<option value="owner">');

    const adminsPage = (await open(server, admin, '/team')).text;
    expect(controls(adminsPage, owner)).toBe(false);
    for (const person of [admin, member, viewer]) expect(controls(adminsPage, person), person.role).toBe(true);
    expect(adminsPage).toContain('action="/team" class="stack"');
    expect(adminsPage).not.toContain('value="owner"');

    for (const person of [member, viewer]) {
      const text = (await open(server, person, '/team')).text;
      expect(text).not.toContain('action="/team');
      expect(text).toContain('Owners and admins invite people and change their roles.');
    }
  });

  it('a member and a viewer who post the forms anyway are refused (403) each change, and nothing changes', async () => {
    const { teamId, owner, admin, member, viewer } = await team('Forged posts');
    const before = await teamOf(server, teamId);
    for (const person of [member, viewer]) {
      const attempts = [
        post(server, person, '/team', { email: address('forged'), role: 'viewer' }),
        post(server, person, `/team/${admin.userId}/role`, { role: 'viewer' }),
        post(server, person, `/team/${person.userId}/role`, { role: 'owner' }),
        post(server, person, `/team/${owner.userId}/remove`),
        post(server, person, `/team/${admin.userId}/remove`),
      ];
      for (const refused of await Promise.all(attempts)) {
        expect(refused.status, refused.text.slice(0, 300)).toBe(403);
        expect(refused.text).toContain(`Your role (${person.role}) cannot change the people of the team: that takes the admin role or higher`);
      }
    }
    expect(await teamOf(server, teamId)).toEqual(before);
    for (const person of [owner, admin, member, viewer]) expect(await stillSignedIn(server, person)).toBe(true);
  });

  it('an admin invites, changes and removes people below owner, but cannot invite, make, demote or remove an owner (403, nothing changed)', async () => {
    const { teamId, owner, admin, member, viewer } = await team('Admin rights');
    const invitedOwner = await inviteUser(server.deps, { teamId, domainId: null }, { email: address('future-owner'), role: 'owner' });
    const before = await teamOf(server, teamId);
    const refusals = [
      [post(server, admin, '/team', { email: address('new-owner'), role: 'owner' }), 'Only an owner can invite an owner'],
      [post(server, admin, '/team', { email: invitedOwner.email, role: 'member' }), 'Only an owner can invite an owner'],
      [post(server, admin, `/team/${member.userId}/role`, { role: 'owner' }), 'Only an owner can make someone an owner'],
      [post(server, admin, `/team/${admin.userId}/role`, { role: 'owner' }), 'Only an owner can make someone an owner'],
      [post(server, admin, `/team/${owner.userId}/role`, { role: 'admin' }), "Only an owner can change an owner's role"],
      [post(server, admin, `/team/${owner.userId}/remove`), 'Only an owner can remove an owner'],
      [post(server, admin, `/team/${invitedOwner.userId}/remove`), 'Only an owner can remove an owner'],
    ] as const;
    for (const [answer, message] of refusals) {
      const refused = await answer;
      expect(refused.status, message).toBe(403);
      expect(refused.text.replaceAll('&#39;', "'")).toContain(message);
    }
    expect(await teamOf(server, teamId)).toEqual(before);

    const invited = await post(server, admin, '/team', { email: 'Newcomer@Team.test', role: 'viewer' });
    expect(invited.status).toBe(200);
    expect((await post(server, admin, `/team/${viewer.userId}/role`, { role: 'admin' })).location).toBe('/team');
    expect((await post(server, admin, `/team/${member.userId}/remove`)).location).toBe('/team');
    expect(await teamOf(server, teamId)).toEqual({
      ...Object.fromEntries(Object.entries(before).filter(([email]) => email !== member.email)),
      'newcomer@team.test': 'viewer invited',
      [viewer.email]: 'admin active',
    });
  });

  it('the last owner can be neither demoted nor removed (409, nothing changed); with a second owner who can sign in, one steps down and is signed out', async () => {
    const { teamId } = await server.team('Last owner');
    const first = await join(server, teamId, 'owner');
    for (const refused of [await post(server, first, `/team/${first.userId}/role`, { role: 'admin' }), await post(server, first, `/team/${first.userId}/remove`)]) {
      expect(refused.status).toBe(409);
      expect(refused.text).toContain(`${first.email} is the team&#39;s last owner and cannot be`);
      expect(refused.text).toContain('make someone else an owner first');
    }
    // An owner invited but not yet signed in is no owner to hand the team to yet.
    const invitedOwner = await post(server, first, '/team', { email: address('second-owner'), role: 'owner' });
    expect(invitedOwner.status).toBe(200);
    expect((await post(server, first, `/team/${first.userId}/role`, { role: 'member' })).status).toBe(409);
    expect(Object.values(await teamOf(server, teamId))).toEqual(['owner active', 'owner invited']);

    const second = await join(server, teamId, 'owner');
    const steppedDown = await post(server, first, `/team/${first.userId}/role`, { role: 'admin' });
    expect(steppedDown.location).toBe('/team');
    expect(await stillSignedIn(server, first)).toBe(false);
    expect((await post(server, second, `/team/${second.userId}/remove`)).status).toBe(409);
    expect((await teamOf(server, teamId))[first.email]).toBe('admin active');
  });

  it("moving someone down ends their sessions at once, and so does removing them; moving someone up leaves them signed in", async () => {
    const { owner, admin, member, viewer } = await team('Sessions');
    expect((await post(server, owner, `/team/${viewer.userId}/role`, { role: 'member' })).location).toBe('/team');
    expect(await stillSignedIn(server, viewer)).toBe(true);

    expect((await post(server, owner, `/team/${admin.userId}/role`, { role: 'member' })).location).toBe('/team');
    expect(await stillSignedIn(server, admin)).toBe(false);
    // Signed in again, they hold the role they have now.
    const login = await fetch(`${server.url}/login`, { method: 'POST', redirect: 'manual', headers: FORM, body: new URLSearchParams({ email: admin.email, password: PASSWORD }) });
    const again = { ...admin, cookie: /mailroom_session=[^;]+/.exec(login.headers.getSetCookie().join('\n'))![0] };
    const page = await open(server, again, '/team');
    again.csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    expect((await post(server, again, `/team/${viewer.userId}/remove`)).status).toBe(403);

    const removed = await post(server, owner, `/team/${member.userId}/remove`);
    expect(removed.location).toBe('/team');
    expect(await stillSignedIn(server, member)).toBe(false);
    const notice = (await followed(server, owner, removed)).text;
    expect(notice).toContain(`<p class="notice" role="status">${member.email} was removed from the team and signed out</p>`);
    expect(notice.split(member.email)).toHaveLength(2);
  });

  it('an invite not mailed (SYSTEM_FROM unset) shows its link to the inviter, and that link signs the person in with the role given', async () => {
    const { teamId, owner } = await team('Shown links');
    const email = address('shown');
    const answer = await post(server, owner, '/team', { email, role: 'admin' });
    expect(answer.status).toBe(200);
    expect(answer.text).toContain('The invite was not mailed (SYSTEM_FROM is not set)');
    const link = /data-copy="([^"]+\/invite\/[^"]+)"/.exec(answer.text)![1]!;
    const cookie = await accept(server, link);
    expect((await send(server, cookie, '/team')).status).toBe(200);
    expect((await teamOf(server, teamId))[email]).toBe('admin active');
    // Shown on that answer alone: never again, nor in a cookie or URL.
    expect((await open(server, owner, '/team')).text).not.toContain(new URL(link).pathname);
  });

  it('an invite that cannot be made is answered beside the form, and nobody is invited: a malformed address or an unknown role (400), an address already signed in here or in use in another team (409)', async () => {
    const { teamId, owner, member } = await team('Bad invites');
    const other = await team('Other team');
    const before = await teamOf(server, teamId);
    const cases = [
      [{ email: 'not an address', role: 'member' }, 400, 'must be a valid email'],
      [{ email: member.email, role: 'viewer' }, 409, `${member.email} has already chosen a password and can sign in`],
      [{ email: other.member.email, role: 'viewer' }, 409, `${other.member.email} already belongs to a user of another team`],
      [{ email: address('no-role'), role: 'chief' }, 400, 'must be one of: owner, admin, member, viewer'],
    ] as const;
    for (const [form, status, message] of cases) {
      const answer = await post(server, owner, '/team', form);
      expect(answer.status, form.email).toBe(status);
      expect(answer.text).toContain(message);
      expect(answer.text).toContain('class="error"');
      expect(answer.text).not.toContain('/invite/');
    }
    expect(await teamOf(server, teamId)).toEqual(before);
  });

  it("a person of another team cannot change or remove this team's people by putting their ids in the form's address (404, nothing changed)", async () => {
    const mine = await team('Isolated');
    const theirs = await team('Intruders');
    const before = await teamOf(server, mine.teamId);
    for (const target of [mine.owner, mine.member]) {
      for (const answer of [await post(server, theirs.owner, `/team/${target.userId}/role`, { role: 'viewer' }), await post(server, theirs.owner, `/team/${target.userId}/remove`)]) {
        expect(answer.status).toBe(404);
        expect(answer.text).toContain(`User ${target.userId} not found`);
      }
    }
    expect(await teamOf(server, mine.teamId)).toEqual(before);
    expect(await stillSignedIn(server, mine.member)).toBe(true);
    expect((await open(server, theirs.owner, '/team')).text).not.toContain(mine.owner.email);
  });

  it('each change is in the audit log in its own transaction: the person who made it, the user it was made to, and never the link', async () => {
    const { teamId, owner, member } = await team('Audited');
    const answer = await post(server, owner, '/team', { email: address('audited'), role: 'viewer' });
    const link = /data-copy="([^"]+\/invite\/[^"]+)"/.exec(answer.text)![1]!;
    const invitedId = (await listUsers(server.deps, { teamId, domainId: null })).at(-1)!.userId;
    await post(server, owner, `/team/${member.userId}/role`, { role: 'viewer' });
    await post(server, owner, `/team/${invitedId}/remove`);
    const rows = await server.deps.db.selectFrom('audit_log').selectAll().where('team_id', '=', teamId).where('actor_type', '=', 'user').orderBy('id').execute();
    expect(rows.map((row) => [row.action, row.target_type, row.target_id, row.actor_id, row.actor_label])).toEqual([
      ['user.invited', 'user', invitedId, owner.userId, owner.email],
      ['user.roleChanged', 'user', member.userId, owner.userId, owner.email],
      ['user.removed', 'user', invitedId, owner.userId, owner.email],
    ]);
    expect(JSON.stringify(rows)).not.toContain(new URL(link).pathname.split('/').at(-1));
    // A refused change writes nothing.
    await post(server, owner, `/team/${owner.userId}/remove`);
    expect(await server.deps.db.selectFrom('audit_log').select('id').where('team_id', '=', teamId).where('actor_type', '=', 'user').execute()).toHaveLength(3);
  });
});

describe('the Team page with SYSTEM_FROM on the team\'s sandbox domain', () => {
  const SANDBOX = 'sandbox.mailroom.localhost';
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ SYSTEM_FROM: `Mailroom <mailroom@${SANDBOX}>`, DISPATCH_POLL_MS: '50' });
  }, 60_000);
  afterAll(() => server?.stop());

  it('mails the invite, from SYSTEM_FROM, naming who invited them to which team (as text, never markup); the page does not show the link; the mailed link signs the person in', async () => {
    const { teamId, apiKey } = await server.team('<b>Crew</b> & co');
    // The team's sandbox domain is made when it first lists its domains.
    await expectOk(server, apiKey, 'GET', '/v1/domains');
    const owner = await join(server, teamId, 'owner');
    const email = address('mailed');
    const answer = await post(server, owner, '/team', { email, role: 'member' });
    expect(answer.status).toBe(303);
    const page = await followed(server, owner, answer);
    expect(page.text).toContain(`Invite mailed to ${email}: its link works once, for 7 days`);
    expect(page.text).not.toContain('/invite/');

    const row = await server.deps.db.selectFrom('emails').select(['id', 'subject']).where('to_addresses', '@>', JSON.stringify([email]) as never).executeTakeFirstOrThrow();
    expect(row.subject).toBe(`${owner.email} invited you to <b>Crew</b> & co on Mailroom`);
    await dispatcherDone(server, [row.id]);
    const eml = (await readFile(path.join(server.deps.config.dataDir, 'outbox', `${row.id}.eml`))).toString();
    // Quoted-printable, undone.
    const unfolded = Buffer.from(eml.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8');
    expect(unfolded).toContain(`From: Mailroom <mailroom@${SANDBOX}>`);
    expect(unfolded).toContain(`${owner.email} invited you to join the team “`);
    expect(unfolded).toContain('&lt;b&gt;Crew&lt;/b&gt; &amp; co');
    expect(unfolded).not.toContain('<b>Crew</b> &amp;');
    expect(unfolded).toContain('for 7 days');
    const link = /href="([^"]+\/invite\/[^"]+)"/.exec(unfolded)![1]!;
    const cookie = await accept(server, link);
    expect((await send(server, cookie, '/team')).status).toBe(200);
    expect(Object.values(await teamOf(server, teamId))).toEqual(['owner active', 'member active']);
  });
});
