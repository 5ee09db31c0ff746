import { readdir, rm } from 'node:fs/promises';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { newId } from '../src/ids.js';
import { createTestDatabase, usingPostgres } from './helpers/database.js';
import { withDatabase } from './helpers/global-setup.js';
import { childEnv, cleanUpAfterEach, cli, errorsLogged, logLines, startServerProcess, tempDir } from './helpers/processes.js';
import { call } from './helpers/server.js';

const cleanups = cleanUpAfterEach();

async function dataDirForTest() {
  const dir = await tempDir();
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('migrations', () => {
  it('starting twice on the same data keeps the data and applies nothing again', async () => {
    const dataDir = await dataDirForTest();
    const database = usingPostgres() ? await createTestDatabase() : undefined;
    if (database) cleanups.push(() => database.drop());
    const env = childEnv({ DATA_DIR: dataDir, DATABASE_URL: database?.url });

    const first = await startServerProcess(env);
    const { apiKey } = await cli(['team', 'create', '--name', 'Persistent'], env);
    const book = await call(first.url, 'POST', '/v1/contactBooks', { key: apiKey, body: { name: 'Kept' } });
    expect(book.status).toBe(200);
    expect((await first.stop()).code).toBe(0);

    const second = await startServerProcess(env);
    const fetched = await call(second.url, 'GET', `/v1/contactBooks/${book.body.id}`, { key: apiKey });
    expect(fetched.status).toBe(200);
    expect(fetched.body.name).toBe('Kept');
    expect(logLines(second.stderr()).filter((line) => line.msg === 'migrations applied')).toEqual([]);
    expect(errorsLogged(first.stderr() + second.stderr())).toEqual([]);
    expect((await second.stop()).code).toBe(0);
  });

  it.skipIf(!usingPostgres())('two servers starting at once on a fresh PostgreSQL database both come up; the schema is applied once', async () => {
    const template = inject('pgTemplate')!;
    const name = `mailroom_t_${newId(12)}`;
    const admin = new pg.Client({ connectionString: withDatabase(template, 'postgres') });
    await admin.connect();
    cleanups.push(async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    });
    await admin.query(`CREATE DATABASE ${name}`);
    const url = withDatabase(template, name);

    const servers = await Promise.all(
      [1, 2].map(async () => startServerProcess(childEnv({ DATA_DIR: await dataDirForTest(), DATABASE_URL: url }))),
    );
    for (const server of servers) expect((await call(server.url, 'GET', '/health')).body.status).toBe('ok');

    const migrationFiles = (await readdir('src/db/migrations')).filter((file) => file.endsWith('.sql')).sort();
    const appliedBy = servers.map((server) => logLines(server.stderr()).filter((line) => line.msg === 'migrations applied'));
    expect(appliedBy.flat()).toHaveLength(1);
    expect(appliedBy.flat()[0]!.applied).toEqual(migrationFiles);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
    await client.end();
    expect(rows.map((row) => row.name)).toEqual(migrationFiles);

    for (const server of servers) expect((await server.stop()).code).toBe(0);
  });
});
