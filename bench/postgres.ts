import pg from 'pg';
import { newId } from '../src/ids.js';

/** Where benchmarks may create their databases; BENCH_DATABASE_URL overrides the local default. */
export const benchPostgresUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: benchPostgresUrl, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** A fresh, empty database for one benchmark, dropped afterwards. */
export async function scratchDatabase(baseUrl = benchPostgresUrl): Promise<{ url: string; drop(): Promise<void>; vacuum(table: string): Promise<void> }> {
  const name = `mailroom_bench_${newId(10)}`;
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const admin = async (statement: string, on = baseUrl) => {
    const client = new pg.Client({ connectionString: on });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  return {
    url: url.toString(),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
    // What autovacuum does some time after a large import, done now, so that it neither runs
    // during a measurement nor leaves the planner without statistics.
    vacuum: (table) => admin(`VACUUM (ANALYZE) ${table}`, url.toString()),
  };
}
