import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { Logger } from '../log.js';
import { openDatabase, type DatabaseHandle, type DatabaseSource, type Db } from './connection.js';
import { runScript } from './scripts.js';

const migrationsDir = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any constant works; it only has to be the same in every process that migrates this database.
const MIGRATION_LOCK_KEY = 727_001;

/**
 * Applies the migrations not yet recorded, in file-name order, each file run whole as one script
 * (so a PL/pgSQL body may be laid out over lines), in one transaction that holds an advisory lock:
 * two processes starting at once apply each migration exactly once, and a failure leaves the
 * schema as it was. With `through`, none after that file: a database as an earlier
 * version left it, for a migration to be tried on.
 */
export async function migrate(db: Db, options: { through?: string } = {}): Promise<string[]> {
  const { through } = options;
  const files = (await readdir(migrationsDir))
    .filter((name) => name.endsWith('.sql') && (through === undefined || name <= through))
    .sort();
  return db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`.execute(tx);
    await sql`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`.execute(tx);
    const applied = new Set(
      (await sql<{ name: string }>`SELECT name FROM schema_migrations`.execute(tx)).rows.map((r) => r.name),
    );
    const pending = files.filter((name) => !applied.has(name));
    for (const name of pending) {
      await runScript(tx, await readFile(migrationsDir + name, 'utf8'));
      await sql`INSERT INTO schema_migrations (name) VALUES (${name})`.execute(tx);
    }
    return pending;
  });
}

/** Opens the database and brings its schema up to date; what the service and the CLI both start with. */
export async function openMigratedDatabase(source: DatabaseSource, log: Logger): Promise<DatabaseHandle> {
  const handle = await openDatabase(source);
  try {
    const applied = await migrate(handle.db);
    if (applied.length > 0) log.info('migrations applied', { applied });
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}
