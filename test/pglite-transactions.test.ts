import { isAbortedTransactionError, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../src/db/connection.js';
import { createTestDatabase } from './helpers/database.js';
import { sleep } from './helpers/wait.js';

// The embedded database is one backend: what keeps one caller's statements out of another's
// transaction is src/db/pglite-dialect.ts alone.
describe('transactions on the embedded database', () => {
  let database: DatabaseHandle;

  beforeAll(async () => {
    database = await openDatabase((await createTestDatabase()).source);
    await sql`CREATE TABLE test_counters (id int PRIMARY KEY, n int NOT NULL)`.execute(database.db);
    await sql`INSERT INTO test_counters VALUES (1, 0), (2, 0), (3, 0)`.execute(database.db);
  });
  afterAll(() => database.close());

  const counter = async (id: number) =>
    (await sql<{ n: number }>`SELECT n FROM test_counters WHERE id = ${id}`.execute(database.db)).rows[0]!.n;

  it('many concurrent transactions that read a counter, wait, then write it back plus one lose no update', async () => {
    const transactions = 50;
    await Promise.all(
      Array.from({ length: transactions }, () =>
        database.db.transaction().execute(async (tx) => {
          const { rows } = await sql<{ n: number }>`SELECT n FROM test_counters WHERE id = 1`.execute(tx);
          // Time for every other transaction to be under way: each would read the same n, were they not taken one at a time.
          await sleep(1);
          await sql`UPDATE test_counters SET n = ${rows[0]!.n + 1} WHERE id = 1`.execute(tx);
        }),
      ),
    );
    expect(await counter(1)).toBe(transactions);
  });

  it('a statement sent while another caller holds a transaction open is not rolled back with it', async () => {
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const rolledBack = database.db.transaction().execute(async (tx) => {
      await sql`UPDATE test_counters SET n = n + 100 WHERE id = 2`.execute(tx);
      opened();
      await sleep(50);
      throw new Error('rolled back on purpose');
    });
    await open;
    const outside = sql`UPDATE test_counters SET n = n + 1 WHERE id = 2`.execute(database.db);
    await expect(rolledBack).rejects.toThrow('rolled back on purpose');
    await outside;
    expect(await counter(2)).toBe(1);
  });

  it('a transaction that an error left aborted does not commit: it fails as on PostgreSQL, and its writes are gone', async () => {
    const committing = database.db.transaction().execute(async (tx) => {
      await sql`UPDATE test_counters SET n = 7 WHERE id = 3`.execute(tx);
      await sql`SELECT no_such_column FROM test_counters`.execute(tx).catch(() => undefined);
    });
    const error = await committing.then(() => null, (failure: unknown) => failure);
    expect(isAbortedTransactionError(error)).toBe(true);
    expect(await counter(3)).toBe(0);
    // And the connection is free again for the next caller.
    expect((await sql<{ one: number }>`SELECT 1 AS one`.execute(database.db)).rows).toEqual([{ one: 1 }]);
  });
});
