import { defineConfig } from 'vitest/config';

/**
 * The suite has two tiers, told apart by file name:
 * - `*.db.test.ts` exercise what the database itself does (SQL, transactions, locks, claims, crash
 *   recovery, migrations, concurrency, counters): they run on both databases;
 * - every other test (pages in the browser, pure units, CLI arguments, HTTP-only rules, the SMTP
 *   protocol) runs once, on the embedded PGlite, since the database cannot change its outcome.
 *
 * `npm test` runs the project `pglite`: every test, on PGlite. With DATABASE_URL set (a PostgreSQL
 * server whose user may create databases), the same run also runs the project `postgres`: the
 * database tier again, each test server on a fresh PostgreSQL database copied from one migrated
 * for the run (see test/helpers/global-setup.ts). `--project postgres` runs that one alone.
 */
const DATABASE_TIER = ['test/**/*.db.test.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ['default'],
    projects: [
      {
        extends: true,
        test: { name: 'pglite', include: ['test/**/*.test.ts', 'src/**/*.test.ts'], globalSetup: ['test/helpers/global-setup.ts'] },
      },
      ...(process.env.DATABASE_URL
        ? [{ extends: true as const, test: { name: 'postgres', include: DATABASE_TIER, globalSetup: ['test/helpers/global-setup.ts'] } }]
        : []),
    ],
  },
});
