import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findContactsByEmailKeys } from '../src/data/contacts.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const BOOK = 20_000;
const rows = (from: number, count: number) => Array.from({ length: count }, (_, i) => ({ email: `reader${from + i}@example.org` }));

describe('a bulk upsert into a large book', () => {
  it('finds the contacts it names by their address, one index probe each, never by reading the whole book, even once the planner has statistics', async () => {
    const { apiKey, teamId } = await server.team();
    const book = await server.call('POST', '/v1/contactBooks', { key: apiKey, body: { name: 'Large' } });
    for (let from = 0; from < BOOK; from += 10_000) {
      const res = await server.call('POST', `/v1/contactBooks/${book.body.id}/contacts/bulk`, { key: apiKey, body: rows(from, 10_000) });
      expect(res.body.count).toBe(10_000);
    }
    const { db } = server.deps;
    // Statistics that make reading the whole book look cheaper than 10,000 probes.
    await sql`ANALYZE contacts`.execute(db);
    const keys = rows(BOOK / 2, 10_000).map((row) => row.email);

    // What this transaction has scanned so far.
    const scans = async (tx: typeof db) => {
      const { rows: [counts] } = await sql<{ seq_scan: string; idx_scan: string }>`
        SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'contacts'`.execute(tx);
      return { seq: Number(counts!.seq_scan), idx: Number(counts!.idx_scan) };
    };

    await db.transaction().execute(async (tx) => {
      expect(await findContactsByEmailKeys(tx, teamId, book.body.id, keys)).toHaveLength(BOOK / 2);
      const { seq, idx } = await scans(tx);
      expect(seq, 'sequential scans of contacts').toBe(0);
      expect(idx).toBeGreaterThan(0);
    });
  });
});
