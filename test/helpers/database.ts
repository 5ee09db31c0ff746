import { readFile } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { inject } from 'vitest';
import type { DatabaseSource } from '../../src/db/connection.js';
import { newId } from '../../src/ids.js';
import { withDatabase } from './global-setup.js';

export const usingPostgres = () => inject('pgTemplate') !== null;

export type TestDatabase = { source: DatabaseSource; url: string | null; drop(): Promise<void> };

/**
 * A fresh database of the kind this run tests (PostgreSQL or PGlite): migrated, or with `empty`,
 * holding nothing at all.
 */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const template = inject('pgTemplate');
  if (template) {
    const name = `mailroom_t_${newId(12)}`;
    const admin = new pg.Client({ connectionString: template.replace(/\/[^/]*$/, '/postgres') });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${options.empty ? 'template0' : new URL(template).pathname.slice(1)}`);
    } finally {
      await admin.end();
    }
    const url = withDatabase(template, name);
    return {
      source: { url, poolSize: 5 },
      url,
      drop: async () => {
        const client = new pg.Client({ connectionString: template.replace(/\/[^/]*$/, '/postgres') });
        await client.connect();
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await client.end();
      },
    };
  }
  const pglite = options.empty ? await PGlite.create() : await PGlite.create({ loadDataDir: new Blob([await readFile(inject('pgliteDump')!)]) });
  return { source: { pglite }, url: null, drop: async () => {} };
}
