import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
  }
}

/**
 * Migrates one database for the whole run; every test server then starts from a copy of it, which
 * is much faster than creating and migrating a database each time.
 */
export default async function setup(project: TestProject) {
  const baseUrl = process.env.DATABASE_URL;
  if (baseUrl) {
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
    return async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-tpl-'));
  const pglite = await PGlite.create();
  const handle = await openDatabase({ pglite });
  await migrate(handle.db);
  const dump = await pglite.dumpDataDir('none');
  await handle.close();
  const file = path.join(dir, 'template.tar');
  await writeFile(file, Buffer.from(await dump.arrayBuffer()));
  project.provide('pgTemplate', null);
  project.provide('pgliteDump', file);
  return () => rm(dir, { recursive: true, force: true });
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
