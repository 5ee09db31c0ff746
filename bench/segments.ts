/**
 * Segments: a segment of three conditions (a property, the creation date and an engagement
 * condition) counted and paged on books of 100,000 and 1,000,000 contacts, and a campaign released
 * to it from the larger book against one released to the whole of that book.
 *
 *   npx tsx bench/segments.ts [postgres://…/db]   (no URL: embedded PGlite)
 *
 * The goals (the issue's): the count under 1 s at 1M on PostgreSQL, and the segment's release at
 * ≥ 0.8 × the whole book's, in emails released per second.
 *
 * The books are written straight into the database by set-based SQL, with the mail of an earlier
 * campaign to them and its events: importing them through the API is the contacts benchmark's
 * business, and would take most of the time this one has. Contact i of n (ids in creation order,
 * as newSortableId draws them) was created over the last 730 days, the older half 400 to 730 days
 * ago and the newer half in the last 330 (so no one crosses "365 days ago" while the benchmark
 * runs), has plan "pro" when i mod 5 < 2, and got one email ((17 i) mod 41) + ½ days ago,
 * delivered a minute later and, when i mod 3 < 2, opened two hours after that (so no open crosses
 * "30 days" ago either), which the contact's row keeps as recording the open would. The segment, plan "pro" (2 in 5), created in the last 365 days (1 in 2)
 * and opened in the last 30 days (2 in 3 × 30 in 41), matches 9.8 % of the book.
 * On PostgreSQL the tables are then vacuumed and analysed, as autovacuum would; on PGlite, which
 * has no autovacuum, only contacts gets its statistics, from refreshContactStatistics as a bulk
 * import would, and emails and email_events have none, as in a running service.
 *
 * Count and pages: countMatching and listMatching (what the API's segment endpoints run), each
 * once untimed and then RUNS times, the median reported. The deep page is the one 90 % of the
 * way through the matches. Release: the releaser's batches (releaseAll, as in the campaigns
 * benchmark, batches of 5,000 recipients), first of a campaign to the segment, then of one to the
 * whole book; the segment's reads ten contacts for each email it releases.
 */
import os from 'node:os';
import { setTimeout } from 'node:timers/promises';
import { sql } from 'kysely';
import type { Filter } from '../src/audience/segment-filter.js';
import { refreshContactStatistics } from '../src/data/contacts.js';
import { countMatching, listMatching } from '../src/data/segments.js';
import type { Db } from '../src/db/connection.js';
import { createCampaign, releaseAll, SENDER, startBenchHarness, type BenchHarness } from './harness.js';

export type SegmentsBenchResult = {
  database: 'postgres' | 'pglite';
  books: Array<{
    contacts: number;
    /** Seconds to write the book, its earlier mail and the events, and to gather statistics. */
    seedSeconds: number;
    matching: number;
    countMs: number;
    firstPageMs: number;
    deepPage: { offset: number; ms: number };
  }>;
  release: {
    contacts: number;
    batchSize: number;
    segment: Release;
    wholeBook: Release;
    /** Segment over whole book, emails released per second: the goal is ≥ 0.8. */
    ratio: number;
  };
  loadAverage: number;
};

type Release = { released: number; seconds: number; emailsPerSecond: number; contactsReadPerSecond: number };

/** The books each database is measured on; the release is from the largest. */
const BOOKS = { postgres: [100_000, 1_000_000], pglite: [100_000, 1_000_000] };
const RUNS = 3;
const PAGE = 100;
const BATCH_SIZE = 5_000;

const SEGMENT: Filter = {
  all: [
    { field: 'properties.plan', op: 'eq', value: 'pro' },
    { field: 'createdAt', op: 'gte', value: '365 days ago' },
    { event: 'opened', within: '30 days' },
  ],
};

/**
 * Writes `n` contacts into the book, ids from `firstId` on (unique across books, as real ids are:
 * an engagement condition finds mail by contact id alone), and the earlier campaign's mail to
 * each with its events; see the top of the file for who matches.
 */
async function seedBook(db: Db, teamId: number, bookId: string, n: number, firstId: number): Promise<void> {
  await sql`
    INSERT INTO contacts (team_id, contact_book_id, id, email, first_name, properties, created_at, updated_at, last_opened_at)
    SELECT ${teamId}, ${bookId}, lpad((${firstId}::bigint + i)::text, 24, '0'), 'reader' || i || '@example.org', 'Reader ' || i,
      jsonb_build_object('plan', CASE WHEN i % 5 < 2 THEN 'pro' ELSE 'free' END), at, at,
      -- The open below, as recording it leaves the contact.
      CASE WHEN i % 3 < 2 THEN now() - interval '1 day' * ((i * 17) % 41 + 0.5) + interval '2 hours' END
    FROM (
      SELECT i, now() - interval '1 day' * (660 * (${n} - i)::float8 / ${n} + CASE WHEN i < ${n / 2} THEN 70 ELSE 0 END) AS at
      FROM generate_series(0, ${n - 1}) i
    ) s`.execute(db);
  const campaignId = `earlier-${bookId}`;
  await sql`
    INSERT INTO emails (team_id, id, from_address, to_addresses, subject, message_id, status, created_at, updated_at, campaign_id, contact_id)
    SELECT ${teamId}, id, ${SENDER}, jsonb_build_array('reader' || i || '@example.org'), 'Last month',
      '<' || id || '@bench.example.com>', CASE WHEN i % 3 < 2 THEN 'OPENED' ELSE 'DELIVERED' END, at, at, ${campaignId},
      lpad((${firstId}::bigint + i)::text, 24, '0')
    FROM (
      SELECT i, at, lpad(to_hex(floor(extract(epoch FROM at) * 1000)::bigint), 12, '0') || lpad(to_hex(${firstId}::bigint + i), 20, '0') AS id
      FROM (SELECT i, now() - interval '1 day' * ((i * 17) % 41 + 0.5) AS at FROM generate_series(0, ${n - 1}) i) t
    ) s`.execute(db);
  await sql`
    INSERT INTO email_events (team_id, email_id, status, created_at)
    SELECT team_id, id, 'DELIVERED', created_at + interval '1 minute' FROM emails WHERE team_id = ${teamId} AND campaign_id = ${campaignId}
    UNION ALL
    SELECT team_id, id, 'OPENED', created_at + interval '2 hours' FROM emails
    WHERE team_id = ${teamId} AND campaign_id = ${campaignId} AND status = 'OPENED'`.execute(db);
}

async function gatherStatistics(bench: BenchHarness): Promise<void> {
  const { db } = bench.server.deps;
  if (bench.databaseUrl) await sql`VACUUM (ANALYZE) contacts, emails, email_events`.execute(db);
  else await refreshContactStatistics(db);
}

async function medianMs(run: () => Promise<unknown>): Promise<number> {
  await run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  return Math.round(times.sort((a, b) => a - b)[Math.floor(RUNS / 2)]!);
}

/**
 * Calls the API. On PGlite a long statement holds this process's event loop, the keep-alive timers
 * of the server and of fetch with it: a pause first lets the server close the connection left idle
 * meanwhile, which fetch would otherwise send the call on (ECONNRESET).
 */
async function call(bench: BenchHarness, method: string, route: string, body?: unknown) {
  await setTimeout(100);
  return bench.api(method, route, body);
}

async function release(bench: BenchHarness, bookId: string, name: string, contacts: number, expected: number, segmentId?: string): Promise<Release> {
  // The harness's campaign, with the segment added to what it posts.
  const api = { api: (method: string, route: string, body?: unknown) => call(bench, method, route, { ...(body as object), segmentId }) };
  const campaign = await createCampaign(api, bookId, name, BATCH_SIZE);
  // Each release starts just after a checkpoint, so neither pays more than the other for the first
  // change of each page since the last (PostgreSQL then writes the whole page to its log).
  if (bench.databaseUrl) await sql`CHECKPOINT`.execute(bench.server.deps.db);
  const seconds = await releaseAll(bench, campaign.id, expected);
  return {
    released: expected,
    seconds: Number(seconds.toFixed(2)),
    emailsPerSecond: Math.round(expected / seconds),
    contactsReadPerSecond: Math.round(contacts / seconds),
  };
}

export async function benchSegments(databaseUrl?: string): Promise<SegmentsBenchResult> {
  const bench = await startBenchHarness(databaseUrl);
  try {
    const { db, dbKind } = bench.server.deps;
    const books: SegmentsBenchResult['books'] = [];
    let largest = { bookId: '', segmentId: '', contacts: 0, matching: 0 };
    let firstId = 0;
    for (const contacts of BOOKS[dbKind]) {
      console.error(`segments on ${dbKind}: a book of ${contacts.toLocaleString('en')}…`);
      const book = await call(bench, 'POST', '/contactBooks', { name: `Bench ${contacts}`, variables: ['plan'] });
      const segment = await call(bench, 'POST', `/contactBooks/${book.id}/segments`, { name: 'Engaged pro', filter: SEGMENT });
      const { team_id: teamId } = await db.selectFrom('contact_books').select('team_id').where('id', '=', book.id).executeTakeFirstOrThrow();
      const seeding = performance.now();
      await seedBook(db, teamId, book.id, contacts, firstId);
      await gatherStatistics(bench);
      const seedSeconds = Number(((performance.now() - seeding) / 1000).toFixed(1));
      firstId += contacts;

      const now = () => new Date();
      const count = () => countMatching(db, teamId, book.id, SEGMENT, now());
      const matching = await count();
      const deepOffset = Math.floor((matching * 0.9) / PAGE) * PAGE;
      books.push({
        contacts,
        seedSeconds,
        matching,
        countMs: await medianMs(count),
        firstPageMs: await medianMs(() => listMatching(db, teamId, book.id, SEGMENT, now(), { offset: 0, limit: PAGE })),
        deepPage: { offset: deepOffset, ms: await medianMs(() => listMatching(db, teamId, book.id, SEGMENT, now(), { offset: deepOffset, limit: PAGE })) },
      });
      largest = { bookId: book.id, segmentId: segment.id, contacts, matching };
    }

    console.error(`segments on ${dbKind}: releases…`);
    const { bookId, segmentId, contacts, matching } = largest;
    const segment = await release(bench, bookId, 'To the segment', contacts, matching, segmentId);
    const wholeBook = await release(bench, bookId, 'To the whole book', contacts, contacts);
    return {
      database: dbKind,
      books,
      release: { contacts, batchSize: BATCH_SIZE, segment, wholeBook, ratio: Number((segment.emailsPerSecond / wholeBook.emailsPerSecond).toFixed(2)) },
      loadAverage: Number(os.loadavg()[0]!.toFixed(1)),
    };
  } finally {
    await bench.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchSegments(process.argv[2] || undefined), null, 2));
}
