import { existsSync } from 'node:fs';
import { chmod, lstat, mkdir, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeDataDirPrivate } from '../src/db/private-dir.js';
import { createTestDatabase, usingPostgres } from './helpers/database.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { dnsVerifiedDomain } from './helpers/domains.js';
import { settled, waitForEmail } from './helpers/emails.js';
import { recordingLogger } from './helpers/log.js';
import { childEnv, cli, cleanUpAfterEach, logLines, runCli, startServerProcess, tempDir } from './helpers/processes.js';
import { apiAt } from './helpers/server.js';

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(() => dns.close());

const cleanups = cleanUpAfterEach();

/** A DATA_DIR as an earlier version or an operator may have left it: 0755, with a 0644 file and a 0755 folder. */
async function dataDirOpenToOthers(): Promise<string> {
  const dataDir = await tempDir();
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  await mkdir(path.join(dataDir, 'outbox'));
  await writeFile(path.join(dataDir, 'notes.txt'), 'left here by hand\n');
  await writeFile(path.join(dataDir, 'outbox', 'old.eml'), 'Subject: captured by an earlier version\r\n\r\nHello\r\n');
  for (const [file, mode] of [['.', 0o755], ['notes.txt', 0o644], ['outbox', 0o755], ['outbox/old.eml', 0o644]] as const) {
    await chmod(path.join(dataDir, file), mode);
  }
  return dataDir;
}

/** Every directory under `root` that is not 0700 and every other entry (files, the socket) that is not 0600, with its mode. */
async function notPrivate(root: string): Promise<string[]> {
  const found: string[] = [];
  const visit = async (relative: string) => {
    const stats = await lstat(path.join(root, relative));
    const mode = stats.mode & 0o777;
    if (mode !== (stats.isDirectory() ? 0o700 : 0o600)) found.push(`${relative || '.'} ${mode.toString(8)}`);
    if (stats.isDirectory()) for (const name of await readdir(path.join(root, relative))) await visit(path.join(relative, name));
  };
  await visit('');
  return found;
}

const privacyWarnings = (stderr: string) => logLines(stderr).filter((line) => line.level === 'warn' && line.msg.startsWith('DATA_DIR was open'));

describe('everything under DATA_DIR is private to the user running Mailroom', () => {
  it('a start in a DATA_DIR left open (0755, a 0644 file) leaves every directory 0700 and every file 0600, captured mail and the secret included, and warns once naming what it closed', async () => {
    const dataDir = await dataDirOpenToOthers();
    const database = usingPostgres() ? await createTestDatabase() : undefined;
    if (database) cleanups.push(() => database.drop());
    const env = childEnv({ DATA_DIR: dataDir, DATABASE_URL: database?.url, DNS_SERVERS: dns.address });

    const server = await startServerProcess(env);
    const api = apiAt(server.url);
    const { apiKey } = await cli(['team', 'create', '--name', 'Private'], env);
    const domain = await dnsVerifiedDomain(api, apiKey, dns, 'private-dir.test');
    const sent = await api.call('POST', '/v1/emails', {
      key: apiKey, body: { from: `news@${domain.name}`, to: 'ada@example.org', subject: 'Private', text: 'Hello' },
    });
    expect((await waitForEmail(api, apiKey, sent.body.emailId, settled)).latestStatus).toBe('DELIVERED');
    const whileRunning = await notPrivate(dataDir);
    expect((await server.stop()).code).toBe(0);

    expect(existsSync(path.join(dataDir, 'outbox', `${sent.body.emailId}.eml`))).toBe(true);
    expect(existsSync(path.join(dataDir, 'secret'))).toBe(true);
    expect(whileRunning).toEqual([]);
    expect(await notPrivate(dataDir)).toEqual([]);
    const warnings = privacyWarnings(server.stderr());
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ dataDir, changed: 4, paths: ['.', 'notes.txt', 'outbox', 'outbox/old.eml'] });
  });

  it.skipIf(usingPostgres())('the CLI opening the embedded database itself leaves DATA_DIR private too', async () => {
    const dataDir = await dataDirOpenToOthers();
    const run = await runCli(['team', 'create', '--name', 'Direct'], childEnv({ DATA_DIR: dataDir }));
    expect(run.code).toBe(0);
    expect(existsSync(path.join(dataDir, 'pgdata'))).toBe(true);
    expect(await notPrivate(dataDir)).toEqual([]);
    expect(privacyWarnings(run.stderr)).toHaveLength(1);
  });

  it('a DATA_DIR that is a symbolic link to another place has that place made private, and links inside it are left alone', async () => {
    const target = await dataDirOpenToOthers();
    const elsewhere = await tempDir();
    cleanups.push(() => rm(elsewhere, { recursive: true, force: true }));
    await chmod(elsewhere, 0o755);
    await symlink(elsewhere, path.join(target, 'link-out'));
    const dataDir = path.join(await tempDir(), 'data');
    cleanups.push(() => rm(path.dirname(dataDir), { recursive: true, force: true }));
    await symlink(target, dataDir);

    const logs = recordingLogger();
    // In this process, for once: the umask it sets must not reach the children of other tests.
    const umask = process.umask(0o077);
    try {
      await makeDataDirPrivate(dataDir, logs.log);
    } finally {
      process.umask(umask);
    }
    expect(await notPrivate(target)).toEqual(['link-out 777']);
    expect((await lstat(elsewhere)).mode & 0o777).toBe(0o755);
    expect(logs.entries.filter((entry) => entry.level === 'warn').map((entry) => entry.fields.paths)).toEqual([
      ['.', 'notes.txt', 'outbox', 'outbox/old.eml'],
    ]);
  });
});
