import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findContactsByEmailKeys } from '../src/data/contacts.js';
import { usingPostgres } from './helpers/database.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const BOOK = 20_000;
const rows = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ email: `reader${from + i}@example.org` }));

describe('a bulk upsert into a large book', () => {
  it('finds the contacts it names by their address, one index probe each, never by reading the whole book: just imported, or once the planner has statistics', async () => {
    const { apiKey, teamId } = await server.team();
    const book = await server.call('POST', '/v1/contactBooks', { key: apiKey, body: { name: 'Large' } });
    for (let from = 0; from < BOOK; from += 10_000) {
      const res = await server.call('POST', `/v1/contactBooks/${book.body.id}/contacts/bulk`, { key: apiKey, body: rows(from, 10_000) });
      expect(res.body.count).toBe(10_000);
    }
    const { db } = server.deps;
    // Half of the keys are in the book, half are not.
    const keys = rows(BOOK - 200, 400).map((row) => row.email);

    // What this connection has read from contacts and not yet reported, and how: a lookup's own
    // reads are the difference across it.
    const reads = async (tx: typeof db) => {
      const { rows: [counts] } = await sql<{ seq_scan: string; idx_tup_fetch: string }>`
        SELECT seq_scan, idx_tup_fetch FROM pg_stat_xact_user_tables WHERE relname = 'contacts'`.execute(tx);
      return { sequentialScans: Number(counts!.seq_scan), rowsRead: Number(counts!.idx_tup_fetch) };
    };
    const lookUp = () => db.transaction().execute(async (tx) => {
      const before = await reads(tx);
      expect(await findContactsByEmailKeys(tx, teamId, book.body.id, keys)).toHaveLength(200);
      const after = await reads(tx);
      return { sequentialScans: after.sequentialScans - before.sequentialScans, rowsRead: after.rowsRead - before.rowsRead };
    });

    // Just imported: the import brought the statistics up to date (the embedded database has no
    // autovacuum to do it, and PostgreSQL's comes a minute later).
    expect(await lookUp()).toEqual({ sequentialScans: 0, rowsRead: 200 });
    // Statistics that make reading the whole book look cheaper than hundreds of probes.
    await sql`ANALYZE contacts`.execute(db);
    expect(await lookUp()).toEqual({ sequentialScans: 0, rowsRead: 200 });
  });
});

describe('the statistics a bulk upsert refreshes', () => {
  // The embedded database has one connection: no other session can hold the table there.
  it.runIf(usingPostgres())('never keep an import waiting: a table another session holds against ANALYZE is left to it', async () => {
    const own = await startTestServer();
    try {
      const { apiKey } = await own.team();
      const book = await own.call('POST', '/v1/contactBooks', { key: apiKey, body: { name: 'Held' } });
      const { db } = own.deps;
      const analyzed = async () => (await sql<{ analyzed: boolean }>`
        SELECT EXISTS (SELECT 1 FROM pg_stats WHERE tablename = 'contacts') AS analyzed`.execute(db)).rows[0]!.analyzed;
      const answer = await db.transaction().execute(async (tx) => {
        // What an ANALYZE, a VACUUM or an index build of another session holds.
        await sql`LOCK TABLE contacts IN SHARE UPDATE EXCLUSIVE MODE`.execute(tx);
        return Promise.race([
          own.call('POST', `/v1/contactBooks/${book.body.id}/contacts/bulk`, { key: apiKey, body: rows(0, 10_000) }),
          new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 10_000)),
        ]);
      });
      expect(answer).not.toBe('still waiting');
      expect(answer).toMatchObject({ status: 200, body: { created: 10_000 } });
      // Skipped, not forgotten: the next import that creates contacts gathers them.
      expect(await analyzed()).toBe(false);
      await own.call('POST', `/v1/contactBooks/${book.body.id}/contacts/bulk`, { key: apiKey, body: rows(10_000, 100) });
      expect(await analyzed()).toBe(true);
    } finally {
      await own.stop();
    }
  });
});
