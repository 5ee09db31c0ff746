/**
 * Contacts: bulk upsert of 100,000 contacts as 10 requests of 10,000 into an empty book, and again
 * into a book that already holds a million (new contacts, then changes to existing ones: the cost
 * of a request must not grow with the book); then GET one contact under autocannon load. The
 * server runs as its own process (`src/main.ts`), as in production, so the load generator does
 * not share its event loop.
 *
 *   npx tsx bench/contacts.ts [postgres]
 */
import { rm } from 'node:fs/promises';
import autocannon from 'autocannon';
import { call } from '../test/helpers/server.js';
import { childEnv, cli, killAll, startServerProcess, tempDir } from '../test/helpers/processes.js';
import { scratchDatabase } from './postgres.js';

export type ContactsBenchResult = {
  database: 'postgres' | 'pglite';
  bulkUpsert: { contacts: number; seconds: number; contactsPerSecond: number };
  /** The same import with two requests in flight, as an importer may send them. */
  bulkUpsertTwoAtATime: { contacts: number; seconds: number; contactsPerSecond: number };
  /** The same import into a book of BIG_BOOK contacts: new ones, then the same number changed. */
  bigBook: { contacts: number; newPerSecond: number; changedPerSecond: number };
  getOne: { requestsPerSecond: number; p50Ms: number; p99Ms: number; errors: number; connections: number; seconds: number };
};

const TOTAL = 100_000;
const BIG_BOOK = 1_000_000;
const PER_REQUEST = 10_000;
const LOAD_SECONDS = 10;
const CONNECTIONS = 20;

export async function benchContacts(database: 'postgres' | 'pglite'): Promise<ContactsBenchResult> {
  const dataDir = await tempDir();
  const postgres = database === 'postgres' ? await scratchDatabase() : null;
  const env = childEnv({ DATA_DIR: dataDir, DATABASE_URL: postgres?.url ?? null, LOG_LEVEL: 'warn' });
  const server = await startServerProcess({ ...env, LOG_LEVEL: 'info' });
  try {
    const { teamId, apiKey: key } = await cli(['team', 'create', '--name', 'bench'], env);
    await cli(['team', 'set-rate-limit', '--team', String(teamId), '--per-second', '1000000'], env);
    const book = await call(server.url, 'POST', '/v1/contactBooks', { key, body: { name: 'bench', variables: ['plan'] } });

    const sequential = await importContacts(server.url, key, book.body.id, { from: 0, inFlight: 1 });
    const { body: second } = await call(server.url, 'POST', '/v1/contactBooks', { key, body: { name: 'bench 2', variables: ['plan'] } });
    const concurrent = await importContacts(server.url, key, second.id, { from: 0, inFlight: 2 });
    const { body: big } = await call(server.url, 'POST', '/v1/contactBooks', { key, body: { name: 'bench big', variables: ['plan'] } });
    for (let from = 0; from < BIG_BOOK; from += TOTAL) await importContacts(server.url, key, big.id, { from, inFlight: 1 });
    await postgres?.vacuum('contacts');
    const bigNew = await importContacts(server.url, key, big.id, { from: BIG_BOOK, inFlight: 1 });
    const bigChanged = await importContacts(server.url, key, big.id, { from: BIG_BOOK / 2, inFlight: 1, firstName: 'Changed' });

    // Each request reads another of the book's contacts, as real reads do: one hot row would
    // measure the cache, not the lookup.
    const load = await autocannon({
      url: server.url,
      headers: { authorization: `Bearer ${key}` },
      connections: CONNECTIONS,
      duration: LOAD_SECONDS,
      requests: [{
        setupRequest: (request) => ({
          ...request,
          path: `/v1/contactBooks/${book.body.id}/contacts/user${Math.floor(Math.random() * TOTAL)}@bench.example.com`,
        }),
      }],
    });
    return {
      database,
      bulkUpsert: { contacts: TOTAL, ...sequential },
      bulkUpsertTwoAtATime: { contacts: TOTAL, ...concurrent },
      bigBook: { contacts: BIG_BOOK, newPerSecond: bigNew.contactsPerSecond, changedPerSecond: bigChanged.contactsPerSecond },
      getOne: {
        // Only 2xx answers count; anything else is printed as errors.
        requestsPerSecond: Math.round(load['2xx'] / load.duration),
        p50Ms: load.latency.p50,
        p99Ms: load.latency.p99,
        errors: load.errors + load.non2xx,
        connections: CONNECTIONS,
        seconds: LOAD_SECONDS,
      },
    };
  } finally {
    await server.stop().catch(() => killAll());
    await postgres?.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const round = (n: number) => Math.round(n * 100) / 100;

/**
 * Upserts TOTAL contacts, user<from>… on, into the book in requests of PER_REQUEST, `inFlight` at
 * a time; `firstName` (then the number) tells a change from the first write.
 */
async function importContacts(url: string, key: string, bookId: string, options: { from: number; inFlight: number; firstName?: string }) {
  const { from, inFlight, firstName = 'First' } = options;
  let next = from;
  const worker = async () => {
    while (next < from + TOTAL) {
      const offset = next;
      next += PER_REQUEST;
      const rows = Array.from({ length: PER_REQUEST }, (_, i) => ({
        email: `user${offset + i}@bench.example.com`,
        firstName: `${firstName}${offset + i}`,
        lastName: 'Bench',
        properties: { plan: i % 2 ? 'pro' : 'free' },
      }));
      const res = await call(url, 'POST', `/v1/contactBooks/${bookId}/contacts/bulk`, { key, body: rows });
      if (res.status !== 200 || res.body.count !== PER_REQUEST) throw new Error(`bulk upsert failed: ${JSON.stringify(res.body).slice(0, 300)}`);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = (performance.now() - started) / 1000;
  return { seconds: round(seconds), contactsPerSecond: Math.round(TOTAL / seconds) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchContacts(process.argv[2] === 'postgres' ? 'postgres' : 'pglite'), null, 2));
}
