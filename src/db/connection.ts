import type { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { PgClient } from './pg-client.js';
import { clusterDir, copyEmptyCluster } from './pglite-cluster.js';
import { PGliteDialect } from './pglite-dialect.js';
import { removeOthersAccess } from './private-dir.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;
export type DatabaseKind = 'postgres' | 'pglite';

export type DatabaseHandle = {
  db: Db;
  kind: DatabaseKind;
  close(): Promise<void>;
  /** Connections running a statement or holding a transaction now. */
  inUse(): number;
};

export type DatabaseSource =
  | { url: string; poolSize?: number }
  | { dataDir: string }
  | { pglite: PGlite };

// Postgres hands bigint (count(*), sums) back as text; our counts always fit a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export async function openDatabase(source: DatabaseSource): Promise<DatabaseHandle> {
  if ('url' in source) {
    const pool = new pg.Pool({ connectionString: source.url, max: source.poolSize ?? 10, Client: PgClient });
    // An idle connection that the server ends (restart, failover, admin termination) is dropped by
    // the pool and replaced on demand; unheard, the pool's 'error' event would end the process.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', close: () => db.destroy(), inUse: () => pool.totalCount - pool.idleCount };
  }
  const dialect = new PGliteDialect('pglite' in source ? source.pglite : await openPGlite(clusterDir(source.dataDir)));
  const db = new Kysely<Database>({ dialect });
  // Its one connection is busy while anything is under way, whether running or waiting its turn.
  return { db, kind: 'pglite', close: () => db.destroy(), inUse: () => Math.min(dialect.running, 1) };
}

async function openPGlite(dir: string): Promise<PGlite> {
  await copyEmptyCluster(dir);
  // Loaded only here: a service on PostgreSQL never carries the embedded database's code.
  // The embedded database's buffer cache is memory of this process. Half of PostgreSQL's default
  // keeps a 100,000-contact campaign under 600 MB at its peak (128 MB: ~660 MB) for the same rate
  // of release; what does not fit stays in the OS page cache.
  const pglite = await (await import('@electric-sql/pglite')).PGlite.create(dir, { postgresqlconf: ['shared_buffers = 64MB'] });
  // PGlite's file system sets the modes of the files it writes itself, whatever the umask: a new
  // cluster's files come out 0666 and the catalog cache files 0644 (PostgreSQL's own are 0600).
  await removeOthersAccess(dir);
  return pglite;
}

/** Whether the database answers a trivial query; throws what the driver throws when it does not. */
export async function ping(db: Db): Promise<void> {
  await sql`SELECT 1`.execute(db);
}
