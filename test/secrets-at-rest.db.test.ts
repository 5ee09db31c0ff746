import type { KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { openDatabase, type DatabaseSource, type Db } from '../src/db/connection.js';
import { KeyVault } from '../src/domains/key-vault.js';
import { startMailroom, type RunningService } from '../src/main.js';
import { createTeam } from '../src/services/teams.js';
import { createTestDatabase, usingPostgres } from './helpers/database.js';
import { verifyDkim } from './helpers/dkim.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { createDomain, verifiedDomain } from './helpers/domains.js';
import { settled, waitForEmail } from './helpers/emails.js';
import { recordingLogger, type LogEntry } from './helpers/log.js';
import { childEnv, cleanUpAfterEach, runCli, seededDataDir } from './helpers/processes.js';
import { apiAt, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

const SECRET = 'the-secret-in-force-0001';
const NEW_SECRET = 'the-secret-after-rotation-0002';

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(() => dns.close());

const cleanups = cleanUpAfterEach();

/** Where one test's data outlives restarts: DATA_DIR, and a PostgreSQL database or the embedded one in DATA_DIR. */
type Store = { dataDir: string; source: DatabaseSource; url: string | null };

async function newDataDir(): Promise<string> {
  const dataDir = await seededDataDir();
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  return dataDir;
}

async function newStore(): Promise<Store> {
  const dataDir = await newDataDir();
  if (!usingPostgres()) return { dataDir, source: { dataDir }, url: null };
  const database = await createTestDatabase();
  cleanups.push(() => database.drop());
  return { dataDir, source: database.source, url: database.url };
}

type Service = RunningService & Pick<TestServer, 'call'> & { logs: LogEntry[] };

/** The service in this process on the store, with SECRET set to `secret`; what it logs is kept. */
async function start(store: Store, secret: string): Promise<Service> {
  const logs = recordingLogger();
  const config = loadConfig({
    PORT: '0', HOST: '127.0.0.1', DATA_DIR: store.dataDir, SECRET: secret, INBOUND_SMTP_PORT: '0', SMTP_SUBMISSION_PORT: '0', SMTP_SUBMISSION_TLS_PORT: '0', DISPATCH_POLL_MS: '20',
    RATE_LIMIT_PER_SECOND: '100000',
  });
  const service = await startMailroom(config, { database: store.source, log: logs.log });
  cleanups.push(() => service.close());
  return { ...service, ...apiAt(service.url), logs: logs.entries };
}

const cliEnv = (store: Store, secret: string) => childEnv({ DATA_DIR: store.dataDir, DATABASE_URL: store.url, SECRET: secret });
const rotate = ['secret', 'rotate', '--new-secret', NEW_SECRET];

/** The store's database while no service has it open (the embedded one allows one user at a time). */
async function withDatabase<T>(store: Store, use: (db: Db) => Promise<T>): Promise<T> {
  const database = await openDatabase(store.source);
  try {
    return await use(database.db);
  } finally {
    await database.close();
  }
}

const storedKeys = (db: Db) => db.selectFrom('domains').select(['name', 'dkim_private_key']).orderBy('id').execute();

/** A team with a domain marked verified and published on the loopback DNS server. */
async function sendingDomain(service: Service, name: string) {
  const { apiKey } = await createTeam({ db: service.deps.db }, { name });
  const domain = await verifiedDomain(service, apiKey, name);
  dns.serve(domain);
  return { key: apiKey, domain: domain as { id: number; name: string } };
}

/** Sends one email from the domain and answers it once the dispatcher has dealt with it. */
async function send(service: Service, key: string, domain: string, done: (email: any) => boolean) {
  const sent = await service.call('POST', '/v1/emails', {
    key, body: { from: `news@${domain}`, to: 'reader@example.org', subject: 'Signed?', text: 'Hello' },
  });
  expect(sent.status).toBe(200);
  return waitForEmail(service, key, sent.body.emailId, done);
}

const outboxFile = (store: Store, emailId: string) => path.join(store.dataDir, 'outbox', `${emailId}.eml`);

async function expectSignedMailThatVerifies(service: Service, store: Store, key: string, domain: string) {
  const email = await send(service, key, domain, settled);
  expect(email.latestStatus).toBe('DELIVERED');
  const results = await verifyDkim(dns, await readFile(outboxFile(store, email.id)));
  expect(results.map((result: any) => [result.signingDomain, result.status.result])).toEqual([[domain, 'pass']]);
}

/**
 * What would give a private key away, as bytes: PEM armour, the PKCS#8 DER header, and a stretch
 * of the private exponent as raw bytes, as hex and as base64 (a line of the PEM body).
 */
function traces(key: KeyObject): Array<{ what: string; bytes: Buffer }> {
  const der = key.export({ type: 'pkcs8', format: 'der' });
  const exponent = Buffer.from(key.export({ format: 'jwk' }).d!, 'base64url').subarray(16, 64);
  const pemBody = (key.export({ type: 'pkcs8', format: 'pem' }) as string).split('\n').slice(1, -2);
  return [
    { what: 'PEM armour', bytes: Buffer.from('-----BEGIN') },
    { what: 'PKCS#8 DER header', bytes: der.subarray(0, 26) },
    { what: 'private exponent', bytes: exponent },
    { what: 'private exponent in hex', bytes: Buffer.from(exponent.toString('hex')) },
    { what: 'a PEM line of the key', bytes: Buffer.from(pemBody[8]!) },
  ];
}

const tracesIn = (haystack: Buffer, keys: KeyObject[]) =>
  keys.flatMap(traces).filter((trace) => haystack.includes(trace.bytes)).map((trace) => trace.what);

/** Every row of every table, as a dump would have them. */
async function dumpRows(db: Db): Promise<Buffer> {
  const tables = await sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`.execute(db);
  const dump: Record<string, unknown[]> = {};
  for (const { name } of tables.rows) dump[name] = (await sql`SELECT * FROM ${sql.table(name)}`.execute(db)).rows;
  return Buffer.from(JSON.stringify(dump));
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

/** Puts every key back as PEM, as versions before keys were encrypted stored them. */
async function storeAsPlaintext(db: Db, secret: string) {
  const vault = new KeyVault(secret);
  for (const row of await storedKeys(db)) {
    const pem = vault.open(row.dkim_private_key, row.name).export({ type: 'pkcs8', format: 'pem' }) as string;
    await db.updateTable('domains').set({ dkim_private_key: pem }).where('name', '=', row.name).execute();
  }
}

const encryptedAtStart = (service: Service) =>
  service.logs.filter((entry) => entry.msg.startsWith('DKIM private keys stored in plain text')).map((entry) => entry.fields.count);

describe('DKIM private keys are encrypted at rest', () => {
  it('a dump of the database, and the raw files of the embedded one, hold no private key, while mail is DKIM-signed and verifies', async () => {
    const store = await newStore();
    const service = await start(store, SECRET);
    const { key, domain } = await sendingDomain(service, 'dump-one.test');
    await createDomain(service, key, 'dump-two.test');
    await expectSignedMailThatVerifies(service, store, key, domain.name);

    const vault = new KeyVault(SECRET);
    const keys = (await storedKeys(service.deps.db)).map((row) => vault.open(row.dkim_private_key, row.name));
    expect(keys).toHaveLength(2);
    const rows = await dumpRows(service.deps.db);
    expect(rows.toString()).toContain('dump-two.test');
    expect(tracesIn(rows, keys)).toEqual([]);

    await service.close();
    const files = await filesUnder(store.dataDir);
    // On the embedded database the scan covers its files, write-ahead log included.
    if (!usingPostgres()) expect(files.filter((file) => file.includes(`${path.sep}pg_wal${path.sep}`)).length).toBeGreaterThan(0);
    const found: string[] = [];
    for (const file of files) {
      for (const what of tracesIn(await readFile(file), keys)) found.push(`${what} in ${path.relative(store.dataDir, file)}`);
    }
    expect(found).toEqual([]);
  });

  it('a key an earlier version stored in plain text is encrypted at the next start, and mail is still signed with it', async () => {
    const store = await newStore();
    const first = await start(store, SECRET);
    const { key, domain } = await sendingDomain(first, 'plaintext.test');
    await first.close();
    await withDatabase(store, (db) => storeAsPlaintext(db, SECRET));

    const service = await start(store, SECRET);
    expect(encryptedAtStart(service)).toEqual([1]);
    const [stored] = await storedKeys(service.deps.db);
    expect(stored!.dkim_private_key).toMatch(/^v1:/);
    expect(stored!.dkim_private_key).not.toContain('PRIVATE KEY');
    await expectSignedMailThatVerifies(service, store, key, domain.name);
  });

  it.skipIf(!usingPostgres())('two processes starting at once on one PostgreSQL database encrypt each plaintext key once', async () => {
    const store = await newStore();
    const first = await start(store, SECRET);
    const { key } = await sendingDomain(first, 'race-one.test');
    await createDomain(first, key, 'race-two.test');
    await createDomain(first, key, 'race-three.test');
    await first.close();
    await withDatabase(store, (db) => storeAsPlaintext(db, SECRET));

    // The domains stay locked until both starts wait on them, so both look for plaintext keys at once.
    const holder = new pg.Client({ connectionString: store.url! });
    await holder.connect();
    cleanups.push(() => holder.end());
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM domains FOR UPDATE');
    const starting = Promise.all([start(store, SECRET), start({ ...store, dataDir: await newDataDir() }, SECRET)]);
    const waiting = async () => {
      // The activity view is a snapshot kept for the whole transaction, unless cleared.
      await holder.query('SELECT pg_stat_clear_snapshot()');
      const result = await holder.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      );
      return result.rows[0]!.n;
    };
    await waitFor('both starts waiting on the domains', waiting, (n) => n === 2);
    await holder.query('COMMIT');

    const services = await starting;
    expect(services.flatMap(encryptedAtStart)).toEqual([3]);
    const vault = new KeyVault(SECRET);
    for (const row of await storedKeys(services[0].deps.db)) expect(() => vault.open(row.dkim_private_key, row.name)).not.toThrow();
  });
});

describe('secret rotate', () => {
  it('re-encrypts every key: after a restart with the new SECRET mail is signed and verifies, with the old one it is not sent unsigned', async () => {
    const store = await newStore();
    const before = await start(store, SECRET);
    const { key, domain } = await sendingDomain(before, 'rotate.test');
    await expectSignedMailThatVerifies(before, store, key, domain.name);
    await before.close();

    const rotated = await runCli(rotate, cliEnv(store, SECRET));
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.json).toMatchObject({ reencrypted: 1, links: expect.stringContaining('no longer work') });
    for (const secret of [SECRET, NEW_SECRET]) expect(rotated.stdout + rotated.stderr).not.toContain(secret);

    const after = await start(store, NEW_SECRET);
    await expectSignedMailThatVerifies(after, store, key, domain.name);
    await after.close();

    const withOldSecret = await start(store, SECRET);
    const email = await send(withOldSecret, key, domain.name, (e) => e.latestStatus !== 'QUEUED');
    expect(email.latestStatus).toBe('DELIVERY_DELAYED');
    expect(email.emailEvents.at(-1).data.response).toMatch(/DKIM private key of rotate\.test cannot be decrypted with this SECRET/);
    expect(existsSync(outboxFile(store, email.id))).toBe(false);
    const errors = withOldSecret.logs.filter((entry) => entry.level === 'error');
    expect(errors).toContainEqual(expect.objectContaining({ fields: expect.objectContaining({ emailId: email.id, error: expect.stringContaining('rotate.test') }) }));
  });

  it("re-encrypts each person's two-factor secret too: after it, the secret opens with the new SECRET to what it was, so their codes still work", async () => {
    const store = await newStore();
    const service = await start(store, SECRET);
    const { teamId } = await createTeam({ db: service.deps.db }, { name: 'Two-factor team' });
    const totp = 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP';
    await service.deps.db
      .insertInto('users')
      .values({ id: 'usr_twofactor', team_id: teamId, email: 'two@factor.test', role: 'owner', totp_secret: new KeyVault(SECRET).sealText(totp), totp_enabled_at: new Date() })
      .execute();
    await service.close();

    const rotated = await runCli(rotate, cliEnv(store, SECRET));
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.json).toMatchObject({ reencryptedTwoFactorSecrets: 1 });
    const stored = await withDatabase(store, (db) => db.selectFrom('users').select('totp_secret').where('id', '=', 'usr_twofactor').executeTakeFirstOrThrow());
    expect(stored.totp_secret).not.toContain(totp);
    expect(new KeyVault(NEW_SECRET).openText(stored.totp_secret!, 'the two-factor secret')).toBe(totp);
  });

  it.skipIf(usingPostgres())('refuses to run through a running server, which would keep the old secret, and changes no key', async () => {
    const store = await newStore();
    const service = await start(store, SECRET);
    await sendingDomain(service, 'running.test');
    const before = await storedKeys(service.deps.db);

    const refused = await runCli(rotate, cliEnv(store, SECRET));
    expect(refused.code).toBe(1);
    expect(refused.failure).toEqual({ code: 'SERVER_RUNNING', error: expect.stringContaining('Stop it') });
    expect(await storedKeys(service.deps.db)).toEqual(before);
  });

  it('is all or none: when the current SECRET does not decrypt one of the keys, it names that domain and changes no key', async () => {
    const store = await newStore();
    const service = await start(store, SECRET);
    const { key } = await sendingDomain(service, 'first-key.test');
    const second = await createDomain(service, key, 'other-secret.test');
    await service.close();
    // The second key as a process with another SECRET would have stored it.
    await withDatabase(store, async (db) => {
      const [, row] = await storedKeys(db);
      const sealed = new KeyVault('some-other-secret-0003').seal(new KeyVault(SECRET).open(row!.dkim_private_key, row!.name));
      await db.updateTable('domains').set({ dkim_private_key: sealed }).where('id', '=', second.id).execute();
    });
    const before = await withDatabase(store, storedKeys);

    const refused = await runCli(rotate, cliEnv(store, SECRET));
    expect(refused.code).toBe(1);
    expect(refused.failure).toEqual({ code: 'WRONG_SECRET', error: expect.stringMatching(/other-secret\.test .*No key or secret was changed/) });
    expect(await withDatabase(store, storedKeys)).toEqual(before);
  });
});
