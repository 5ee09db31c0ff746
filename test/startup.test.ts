import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  childEnv,
  cleanUpAfterEach,
  cli,
  errorsLogged,
  failedServerStart,
  killGroup,
  NPM_START,
  seededDataDir,
  startServerProcess,
  tempDir,
  within,
} from './helpers/processes.js';
import { call } from './helpers/server.js';
import { sleep, waitFor } from './helpers/wait.js';

const cleanups = cleanUpAfterEach();

/** Resolves once no process of the group `pgid` is left. */
async function waitGroupGone(pgid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(-pgid, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A DATA_DIR removed after the test; `seeded`, it already holds the migrated embedded database. */
async function dataDirForTest(seeded = false) {
  const dir = await (seeded ? seededDataDir() : tempDir());
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
const seededDataDirForTest = () => dataDirForTest(true);

// What the embedded database's server keeps in DATA_DIR: its lock and the CLI's socket.
const lockFile = (dataDir: string) => path.join(dataDir, 'mailroom.lock');
const socketFile = (dataDir: string) => path.join(dataDir, 'mailroom.sock');

describe('starting and stopping the service', () => {
  it('npm start on a fresh DATA_DIR serves /health on the embedded database, and SIGTERM exits 0', async () => {
    const dataDir = path.join(await dataDirForTest(), 'not', 'yet', 'there');
    const server = await startServerProcess(childEnv({ DATA_DIR: dataDir }));
    const health = await call(server.url, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok', role: 'all', database: 'pglite', checks: { database: 'ok', relay: 'ok' } });
    expect(existsSync(lockFile(dataDir))).toBe(true);

    expect(await server.stop()).toEqual({ code: 0, signal: null });
    expect(existsSync(lockFile(dataDir))).toBe(false);
    expect(existsSync(socketFile(dataDir))).toBe(false);
    expect(errorsLogged(server.stderr())).toEqual([]);
  });

  it('a SIGTERM to npm start reaches the service, which drains, lets go of DATA_DIR and exits, leaving no process behind', async () => {
    const dataDir = await seededDataDirForTest();
    const server = await startServerProcess(childEnv({ DATA_DIR: dataDir }), NPM_START);
    expect((await call(server.url, 'GET', '/health')).status).toBe(200);

    // Only npm is signalled, as a service manager or a Procfile runner that knows its pid does.
    await server.stop();
    expect(existsSync(lockFile(dataDir))).toBe(false);
    expect(existsSync(socketFile(dataDir))).toBe(false);
    expect(server.stderr()).toContain('"msg":"dispatcher stopped"');
    expect(() => process.kill(-server.child.pid!, 0), 'a process of npm start still runs').toThrow();
  });

  it('Ctrl-C on npm start, which the service hears twice (from the terminal and from npm), still lets it drain and let go of DATA_DIR', async () => {
    const dataDir = await seededDataDirForTest();
    const server = await startServerProcess(childEnv({ DATA_DIR: dataDir }), NPM_START);
    expect((await call(server.url, 'GET', '/health')).status).toBe(200);

    // A request whose body has not all come holds the drain open, so that the repeat surely comes
    // during it: an idle service drains in a few milliseconds, which npm's repeat may miss. It is
    // authenticated, so that it is answered only once its body is read, and it asks to continue:
    // the interim answer says the server is inside the request, not about to read it (a
    // connection whose request has not been read yet counts as idle and is closed at once).
    const { apiKey } = await cli(['team', 'create', '--name', 'Held open'], childEnv({ DATA_DIR: dataDir }));
    const { hostname, port } = new URL(server.url);
    const held = net.connect(Number(port), hostname);
    await once(held, 'connect');
    const answered = new Promise<string>((resolve) => held.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))));
    held.write(
      `POST /v1/emails HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n`,
    );
    expect(await within(answered, 20_000, 'the interim answer')).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);

    // The terminal signals the whole foreground group: npm, which passes it on, and the service.
    process.kill(-server.child.pid!, 'SIGINT');
    await waitFor('the drain to start', async () => server.stderr(), (stderr) => stderr.includes('"msg":"shutting down"'));
    // Signals of one kind that reach a process before it has taken the first merge into one, so
    // the repeat (npm's and the terminal's) goes again until the service says it heard one.
    await waitFor(
      'the repeat to be heard',
      async () => {
        process.kill(-server.child.pid!, 'SIGINT');
        await sleep(100);
        return server.stderr();
      },
      (stderr) => stderr.includes('"msg":"already shutting down"'),
      20_000,
    );
    let answer = '';
    held.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    held.end('{}');
    await within(server.exit, 60_000, 'npm start stopping');
    // The drain waited for the held request, which got its answer: its body is no email.
    expect(answer).toMatch(/^HTTP\/1\.1 400 [^]*"code":"VALIDATION_ERROR"/);
    await within(waitGroupGone(server.child.pid!), 60_000, 'the service stopping');
    expect(server.stderr()).toContain('"msg":"dispatcher stopped"');
    expect(existsSync(lockFile(dataDir))).toBe(false);
    expect(existsSync(socketFile(dataDir))).toBe(false);
  });

  it('a second server on the same DATA_DIR refuses to start, naming the directory and the holder', async () => {
    const dataDir = await seededDataDirForTest();
    const env = childEnv({ DATA_DIR: dataDir });
    const first = await startServerProcess(env);
    const holder = (await readFile(lockFile(dataDir), 'utf8')).trim();

    const second = await failedServerStart(env);
    expect(second.code).toBe(1);
    const [refusal] = errorsLogged(second.stderr);
    expect(refusal?.error).toContain(`Data directory ${dataDir} is in use`);
    expect(refusal?.error).toContain(`pid ${holder}`);

    // The refused start leaves the first server and its lock alone.
    expect((await call(first.url, 'GET', '/health')).status).toBe(200);
    expect((await readFile(lockFile(dataDir), 'utf8')).trim()).toBe(holder);
    expect((await first.stop()).code).toBe(0);
  });

  it('a server killed without shutting down leaves nothing that blocks the next start', async () => {
    const dataDir = await seededDataDirForTest();
    const env = childEnv({ DATA_DIR: dataDir });
    const crashed = await startServerProcess(env);
    killGroup(crashed.child);
    await within(crashed.exit, 10_000, 'kill');
    // What a crash leaves: a lock naming a dead pid, and the socket file.
    expect(existsSync(lockFile(dataDir))).toBe(true);
    expect(existsSync(socketFile(dataDir))).toBe(true);

    const next = await startServerProcess(env);
    expect((await call(next.url, 'GET', '/health')).status).toBe(200);
    const team = await cli(['team', 'create', '--name', 'After the crash'], env);
    expect((await call(next.url, 'GET', '/v1/contactBooks', { key: team.apiKey })).status).toBe(200);
    expect((await next.stop()).code).toBe(0);
  });
});
