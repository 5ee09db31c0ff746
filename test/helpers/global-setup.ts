import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../src/db/connection.js';
import { migrate } from '../../src/db/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** PostgreSQL: URL of a migrated template database to copy per test server. */
    pgTemplate: string | null;
    /** PGlite: a dump of a migrated database to load per test server. */
    pgliteDump: string | null;
    /** PGlite: a DATA_DIR holding a migrated database, to copy for each child process. */
    pgliteDataDir: string | null;
  }
}

/**
 * Migrates one database for the whole run of a project; every test server then starts from a copy
 * of it, which is much faster than creating and migrating a database each time. The project
 * `postgres` (see vitest.config.ts) copies a PostgreSQL database on the server DATABASE_URL names;
 * every other one loads a PGlite dump.
 */
export default async function setup(project: TestProject) {
  const baseUrl = process.env.DATABASE_URL;
  if (project.name === 'postgres' && baseUrl) {
    const name = `mailroom_tpl_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const url = withDatabase(baseUrl, name);
    const handle = await openDatabase({ url, poolSize: 1 });
    await migrate(handle.db);
    await handle.close();
    project.provide('pgTemplate', url);
    project.provide('pgliteDump', null);
    project.provide('pgliteDataDir', null);
    return async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-tpl-'));
  // On disk, where a service keeps it under DATA_DIR: child processes start on a copy of the files.
  const dataDir = path.join(dir, 'data');
  await mkdir(dataDir);
  const pglite = await PGlite.create(path.join(dataDir, 'pgdata'));
  const handle = await openDatabase({ pglite });
  await migrate(handle.db);
  const dump = await pglite.dumpDataDir('none');
  await handle.close();
  const file = path.join(dir, 'template.tar');
  await writeFile(file, Buffer.from(await dump.arrayBuffer()));
  project.provide('pgTemplate', null);
  project.provide('pgliteDump', file);
  project.provide('pgliteDataDir', dataDir);
  return () => rm(dir, { recursive: true, force: true });
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
