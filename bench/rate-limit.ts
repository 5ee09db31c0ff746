/**
 * What the shared rate limit costs the accept path: `POST /v1/emails` on PostgreSQL with the team
 * limit counted in this process's memory (off: what each process did before the limit was
 * shared) and shared through the database (on), at a limit so high that nothing is refused; and
 * on once more at a limit of 5,000/s, whose slices of 100 make a lease every 100 requests.
 *
 *   npx tsx bench/rate-limit.ts [postgres://…/db] [requests]
 *
 * The bar (the issue's): the rate-limit path adds ≤ 5 % (ratio on/off ≥ 0.95). One server, one
 * fresh database; the load generator (autocannon's CLI) runs in a process of its own, so the
 * server's event loop does only the server's work. After a warm-up in each mode, the requests go
 * in rounds, each mode in turn with its share and the order turning from round to round, so that
 * whatever else runs on the machine meanwhile, and the growing emails table, hit every mode alike.
 */
import os from 'node:os';
import { RateLimiter } from '../src/http/rate-limit.js';
import { SharedRateLimiter } from '../src/http/shared-rate-limit.js';
import { setTeamRateLimit } from '../src/services/teams.js';
import { SENDER, startBenchHarness } from './harness.js';
import { loadBatch, median, type LoadBatch } from './load.js';
import { benchPostgresUrl } from './postgres.js';

const CONNECTIONS = 32;
const WARMUP = 1_000;
const ROUNDS = 6;
const TIGHT_LIMIT = 5_000;

type Mode = 'off' | 'on' | 'onTight';
const MODES: Mode[] = ['off', 'on', 'onTight'];

export type ModeResult = {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** CPU time of the server's process per request (not the database's): steadier than a rate on a busy machine. */
  serverCpuMsPerRequest: number;
};

export type RateLimitBenchResult = {
  database: 'postgres';
  requests: number;
  connections: number;
  rounds: number;
  off: ModeResult;
  on: ModeResult;
  /** On at TIGHT_LIMIT requests per second. */
  onTight: ModeResult & { limit: number };
  /** on / off requests per second: the bar is ≥ 0.95. */
  ratio: number;
  ratioTight: number;
  /** The lowest and highest on/off ratio of a single round: how much the machine moved meanwhile. */
  roundRatios: [number, number];
  loadAverage: number;
};

export async function benchRateLimit(options: { databaseUrl?: string; requests?: number } = {}): Promise<RateLimitBenchResult> {
  const requests = options.requests ?? 12_000;
  const bench = await startBenchHarness(options.databaseUrl ?? benchPostgresUrl);
  try {
    const { deps } = bench.server;
    if (deps.dbKind !== 'postgres') throw new Error('the shared rate limit is only used on PostgreSQL');
    const { id: teamId } = await deps.db.selectFrom('teams').select('id').executeTakeFirstOrThrow();
    const body = JSON.stringify({
      from: SENDER, to: 'reader@example.org', subject: 'Your weekly digest',
      html: '<h1>Hello</h1><p>This is the <b>weekly</b> digest with a <a href="https://example.com">link</a>.</p>',
    });
    // The app reads its limiter from deps on every request; a team's own limit from its key's row.
    const use = async (mode: Mode) => {
      deps.rateLimiter = mode === 'off' ? new RateLimiter() : new SharedRateLimiter(deps);
      await setTeamRateLimit(deps, { teamId, perSecond: mode === 'onTight' ? TIGHT_LIMIT : null });
      // A fresh window: what was leased at the high limit in this one would count against the low.
      await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000)));
    };
    const run = async (mode: Mode, count: number) => {
      await use(mode);
      const result = await loadBatch({
        url: `${bench.server.url}/v1/emails`, headers: { authorization: `Bearer ${bench.apiKey}`, 'content-type': 'application/json' }, body, count, connections: CONNECTIONS,
      });
      if (result.errors > 0) throw new Error(`${mode}: ${result.errors} of ${count} requests not accepted`);
      return result;
    };

    for (const mode of MODES) await run(mode, WARMUP);
    const batches = Object.fromEntries(MODES.map((mode) => [mode, [] as LoadBatch[]])) as Record<Mode, LoadBatch[]>;
    const perRound = Math.floor(requests / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < MODES.length; i++) {
        const mode = MODES[(round + i) % MODES.length]!;
        batches[mode].push(await run(mode, perRound));
      }
    }

    const rate = (batch: LoadBatch) => batch.accepted / batch.seconds;
    const summary = (mode: Mode): ModeResult => {
      const all = batches[mode];
      const total = (field: 'accepted' | 'seconds' | 'errors' | 'cpuMicros') => all.reduce((sum, b) => sum + b[field], 0);
      return {
        requestsPerSecond: Math.round(total('accepted') / total('seconds')),
        p50Ms: median(all.map((b) => b.p50)),
        p99Ms: median(all.map((b) => b.p99)),
        errors: total('errors'),
        serverCpuMsPerRequest: Number((total('cpuMicros') / 1000 / total('accepted')).toFixed(3)),
      };
    };
    const [off, on, onTight] = MODES.map(summary) as [ModeResult, ModeResult, ModeResult];
    const roundRatios = batches.on.map((b, round) => rate(b) / rate(batches.off[round]!));
    return {
      database: 'postgres',
      requests: perRound * ROUNDS,
      connections: CONNECTIONS,
      rounds: ROUNDS,
      off,
      on,
      onTight: { ...onTight, limit: TIGHT_LIMIT },
      ratio: Number((on.requestsPerSecond / off.requestsPerSecond).toFixed(3)),
      ratioTight: Number((onTight.requestsPerSecond / off.requestsPerSecond).toFixed(3)),
      roundRatios: [Number(Math.min(...roundRatios).toFixed(3)), Number(Math.max(...roundRatios).toFixed(3))],
      loadAverage: Number(os.loadavg()[0]!.toFixed(1)),
    };
  } finally {
    await bench.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const requests = process.argv[3] ? Number(process.argv[3]) : undefined;
  console.log(JSON.stringify(await benchRateLimit({ databaseUrl: process.argv[2] || undefined, requests }), null, 2));
}
