import { isAbortedTransactionError, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../src/db/connection.js';
import { REUSED } from '../src/db/reused-statements.js';
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

  // The hot paths' statements are prepared once and then only bound and run (REUSED): they must
  // answer exactly as a statement sent afresh does, and fail as one does.
  it('a reused statement answers the same rows, types and counts as one sent afresh, every time it runs', async () => {
    await sql`CREATE TABLE test_reused (id int PRIMARY KEY, name text, raw bytea, data jsonb, at timestamptz)`.execute(database.db);
    const at = new Date('2026-01-02T03:04:05.678Z');
    const insert = (id: number, name: string | null) =>
      sql<{ id: number }>`${sql.raw(REUSED)} INSERT INTO test_reused VALUES (${id}, ${name}, ${Buffer.from([0, 255, id])}, ${JSON.stringify({ id, list: [1, 'two'] })}::jsonb, ${at}) RETURNING id`.execute(database.db);
    for (const id of [1, 2, 3]) expect((await insert(id, id === 2 ? null : `row ${id}`)).rows).toEqual([{ id }]);

    const select = (reused: boolean) =>
      sql`${sql.raw(reused ? REUSED : '')} SELECT * FROM test_reused WHERE id >= ${1} ORDER BY id`.execute(database.db);
    const afresh = await select(false);
    expect(afresh.rows).toHaveLength(3);
    expect(afresh.rows[1]).toEqual({ id: 2, name: null, raw: Buffer.from([0, 255, 2]), data: { id: 2, list: [1, 'two'] }, at });
    for (let run = 0; run < 3; run++) expect(await select(true)).toEqual(afresh);

    const update = await sql`${sql.raw(REUSED)} UPDATE test_reused SET name = ${'renamed'} WHERE id <> ${2}`.execute(database.db);
    expect(update.numAffectedRows).toBe(2n);
  });

  it('a reused statement that fails reports the database error, and runs again once its input is right, in and out of transactions', async () => {
    const insert = (id: number) => sql`${sql.raw(REUSED)} INSERT INTO test_counters VALUES (${id}, 0)`.execute(database.db);
    await insert(10);
    await expect(insert(10)).rejects.toMatchObject({ code: '23505' });
    await expect(
      database.db.transaction().execute(async (tx) => {
        await sql`${sql.raw(REUSED)} INSERT INTO test_counters VALUES (${11}, 0)`.execute(tx);
        await sql`${sql.raw(REUSED)} INSERT INTO test_counters VALUES (${11}, 0)`.execute(tx);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await sql`SELECT id FROM test_counters WHERE id = 11`.execute(database.db).then((result) => result.rows)).toEqual([]);
    await insert(11);
    expect(await counter(11)).toBe(0);
  });
});
