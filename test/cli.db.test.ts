import { existsSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECENT_READ_TTL_MS } from '../src/services/recent-reads.js';
import { expectApiError } from './helpers/api-error.js';
import { createTestDatabase, usingPostgres, type TestDatabase } from './helpers/database.js';
import { childEnv, cli, killAll, runCli, seededDataDir, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { call } from './helpers/server.js';
import { sleep } from './helpers/wait.js';

afterAll(killAll);

/**
 * Expects the running server to answer what a CLI command changed: at once on the embedded
 * database, where the server makes the change itself (the control socket); on PostgreSQL, where
 * the CLI writes the database, once the second in which the server may answer from keys it read
 * before has passed.
 */
async function serverSees<T>(what: string, read: () => Promise<T>, expected: T) {
  if (usingPostgres()) await sleep(RECENT_READ_TTL_MS + 10);
  expect(await read(), what).toBe(expected);
}

describe('the CLI manages teams and keys of the running service', () => {
  let dataDir: string;
  let database: TestDatabase | undefined;
  let env: NodeJS.ProcessEnv;
  let server: ServerProcess;

  beforeAll(async () => {
    dataDir = await seededDataDir();
    database = usingPostgres() ? await createTestDatabase() : undefined;
    env = childEnv({ DATA_DIR: dataDir, DATABASE_URL: database?.url, RATE_LIMIT_PER_SECOND: '50' });
    server = await startServerProcess(env);
  });
  afterAll(async () => {
    if (server) expect((await server.stop()).code).toBe(0);
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('team create answers a key that works against the API', async () => {
    const team = await cli(['team', 'create', '--name', 'Acme Inc'], env);
    expect(team).toMatchObject({ teamId: expect.any(Number), name: 'Acme Inc', apiKey: expect.stringMatching(/^mr_/) });
    expect((await call(server.url, 'GET', '/v1/contactBooks', { key: team.apiKey })).status).toBe(200);
  });

  it('keys are created, listed without their tokens, and a revoked key is refused', async () => {
    const team = await cli(['team', 'create', '--name', 'Keys'], env);
    const key = await cli(['key', 'create', '--team', String(team.teamId), '--name', 'deploy'], env);
    expect(key).toMatchObject({ id: expect.any(String), teamId: team.teamId, name: 'deploy', permission: 'full', domainId: null });
    expect((await call(server.url, 'GET', '/v1/contactBooks', { key: key.apiKey })).status).toBe(200);

    const listed = await runCli(['key', 'list', '--team', String(team.teamId)], env);
    expect(listed.json.map((k: { id: string }) => k.id)).toEqual([team.keyId, key.id]);
    expect(listed.json[1]).toMatchObject({ name: 'deploy', permission: 'full', revokedAt: null, hint: expect.any(String) });
    expect(listed.stdout).not.toContain(key.apiKey);
    expect(listed.stdout).not.toContain(team.apiKey);

    const revoked = await cli(['key', 'revoke', '--id', key.id], env);
    expect(revoked).toEqual({ id: key.id, revokedAt: expect.stringMatching(/Z$/) });
    await serverSees('the revoked key refused', async () => (await call(server.url, 'GET', '/v1/contactBooks', { key: key.apiKey })).status, 401);
    expect((await call(server.url, 'GET', '/v1/contactBooks', { key: team.apiKey })).status).toBe(200);
    const after = await cli(['key', 'list', '--team', String(team.teamId)], env);
    expect(after[1].revokedAt).toBe(revoked.revokedAt);
  });

  it('user invite gives a link to choose a password; user list shows the person and role; set-role down and remove end their sessions; the last owner stays one', async () => {
    const team = await cli(['team', 'create', '--name', 'People'], env);
    const teamFlag = ['--team', String(team.teamId)];
    const invited = await cli(['user', 'invite', ...teamFlag, '--email', 'Ada.Lovelace@Example.test'], env);
    expect(invited).toMatchObject({ userId: expect.stringMatching(/^usr_/), teamId: team.teamId, email: 'ada.lovelace@example.test', role: 'owner', inviteUrl: expect.stringMatching(/\/invite\/[\w-]+\.[\w-]{43}$/) });
    expect((await cli(['user', 'list', ...teamFlag], env))[0]).toMatchObject({ userId: invited.userId, role: 'owner', status: 'invited' });

    const password = 'a long enough password';
    const sessionOf = (answer: Response) => {
      expect(answer.status).toBe(303);
      const cookie = answer.headers.get('set-cookie')!.split(';')[0]!;
      expect(cookie).toMatch(/^mailroom_session=/);
      return cookie;
    };
    const accept = (inviteUrl: string) =>
      fetch(server.url + new URL(inviteUrl).pathname, { method: 'POST', body: new URLSearchParams({ password, confirm: password }), redirect: 'manual' }).then(sessionOf);
    const signIn = (email: string) => fetch(`${server.url}/login`, { method: 'POST', body: new URLSearchParams({ email, password }), redirect: 'manual' }).then(sessionOf);
    const signedIn = async (cookie: string) => (await fetch(server.url + '/', { headers: { cookie }, redirect: 'manual' })).status === 200;

    const adaFirst = await accept(invited.inviteUrl);
    expect(await signedIn(adaFirst)).toBe(true);
    const listed = await runCli(['user', 'list', ...teamFlag], env);
    expect(listed.json).toEqual([{ userId: invited.userId, teamId: team.teamId, email: 'ada.lovelace@example.test', role: 'owner', status: 'active', createdAt: expect.any(String) }]);

    // The team's only owner who can sign in is neither moved down nor removed, even by the operator.
    await expect(cli(['user', 'set-role', ...teamFlag, '--user', invited.userId, '--role', 'admin'], env)).rejects.toThrow(/CONFLICT/);
    await expect(cli(['user', 'remove', ...teamFlag, '--user', invited.userId], env)).rejects.toThrow(/CONFLICT/);
    expect(await signedIn(adaFirst)).toBe(true);

    const grace = await cli(['user', 'invite', ...teamFlag, '--email', 'grace@example.test', '--role', 'owner'], env);
    await accept(grace.inviteUrl);
    expect(await cli(['user', 'set-role', ...teamFlag, '--user', invited.userId, '--role', 'member'], env)).toMatchObject({ userId: invited.userId, role: 'member', previousRole: 'owner' });
    expect(await signedIn(adaFirst)).toBe(false);

    const adaAgain = await signIn('ada.lovelace@example.test');
    expect(await signedIn(adaAgain)).toBe(true);
    expect(await cli(['user', 'remove', ...teamFlag, '--user', invited.userId], env)).toEqual({ userId: invited.userId, email: 'ada.lovelace@example.test', removed: true });
    expect(await signedIn(adaAgain)).toBe(false);
    await expect(cli(['user', 'remove', ...teamFlag, '--user', invited.userId], env)).rejects.toThrow(/NOT_FOUND/);
  });

  it('a sending-permission key may not manage contact books', async () => {
    const team = await cli(['team', 'create', '--name', 'Senders'], env);
    const key = await cli(['key', 'create', '--team', String(team.teamId), '--permission', 'sending'], env);
    expect(key.permission).toBe('sending');
    const res = await call(server.url, 'GET', '/v1/contactBooks', { key: key.apiKey });
    expectApiError(res, 403, 'FORBIDDEN');
  });

  it("set-rate-limit changes the team's X-RateLimit-Limit, and 'default' restores RATE_LIMIT_PER_SECOND", async () => {
    const team = await cli(['team', 'create', '--name', 'Limited'], env);
    const limit = async () => (await call(server.url, 'GET', '/v1/contactBooks', { key: team.apiKey })).headers.get('x-ratelimit-limit');
    const limitBecomes = (value: string) => serverSees('the X-RateLimit-Limit', limit, value);
    expect(await limit()).toBe('50');
    expect(await cli(['team', 'set-rate-limit', '--team', String(team.teamId), '--per-second', '7'], env)).toEqual({
      teamId: team.teamId,
      rateLimitPerSecond: 7,
    });
    await limitBecomes('7');
    await cli(['team', 'set-rate-limit', '--team', String(team.teamId), '--per-second=default'], env);
    await limitBecomes('50');
  });

  it('a command naming a missing record exits 1, naming it', async () => {
    const [missingKey, missingTeam] = await Promise.all([
      runCli(['key', 'revoke', '--id', 'key_does_not_exist'], env),
      runCli(['key', 'create', '--team', '999999'], env),
    ]);
    expect(missingKey.code).toBe(1);
    expect(missingKey.failure).toEqual({ error: 'API key key_does_not_exist not found', code: 'NOT_FOUND' });
    expect(missingTeam.code).toBe(1);
    expect(missingTeam.failure).toEqual({ error: 'Team 999999 not found', code: 'NOT_FOUND' });
  });
});

describe.skipIf(usingPostgres())('on the embedded database', () => {
  let dataDir: string;
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('the CLI works with and without a running server, on one store', async () => {
    dataDir = await seededDataDir();
    const env = childEnv({ DATA_DIR: dataDir });
    const viaServer = /handing the command to the server/;

    const direct = await runCli(['team', 'create', '--name', 'Made directly'], env);
    expect(direct.code).toBe(0);
    expect(direct.stderr).not.toMatch(viaServer);

    const server = await startServerProcess(env);
    const socket = await stat(path.join(dataDir, 'mailroom.sock'));
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o600);

    const relayed = await runCli(['team', 'create', '--name', 'Made through the server'], env);
    expect(relayed.code).toBe(0);
    expect(relayed.stderr).toMatch(viaServer);
    const keysOfDirect = await cli(['key', 'list', '--team', String(direct.json.teamId)], env);
    expect(keysOfDirect.map((k: { id: string }) => k.id)).toEqual([direct.json.keyId]);
    for (const team of [direct.json, relayed.json]) {
      expect((await call(server.url, 'GET', '/v1/contactBooks', { key: team.apiKey })).status).toBe(200);
    }

    expect((await server.stop()).code).toBe(0);
    expect(existsSync(path.join(dataDir, 'mailroom.sock'))).toBe(false);
    expect(existsSync(path.join(dataDir, 'mailroom.lock'))).toBe(false);
    const afterwards = await runCli(['key', 'list', '--team', String(relayed.json.teamId)], env);
    expect(afterwards.stderr).not.toMatch(viaServer);
    expect(afterwards.json.map((k: { id: string }) => k.id)).toEqual([relayed.json.keyId]);
  });
});
