/**
 * The accept path: `POST /v1/emails` of mail scheduled a month ahead (so that nothing but accepting
 * runs), against the naive peer (bench/accept/naive-peer.ts) on the same PostgreSQL database, with
 * the same body and the same load: autocannon's CLI, 32 connections, in a process of its own. After
 * a warm-up of each, the requests go in rounds, Mailroom and the peer in turn, the order turning
 * from round to round, so that whatever else runs on the machine hits both alike. Only 2xx answers
 * count; any other answer fails the run. On PGlite there is no peer (it serves one process).
 *
 *   npx tsx bench/accept.ts [postgres://…/db] [requests]   (no URL: embedded PGlite)
 */
import os from 'node:os';
import { SENDER, startBenchHarness, startLineProcess } from './harness.js';
import { loadBatch, median, type LoadBatch } from './load.js';

const CONNECTIONS = 32;
const WARMUP = 2_000;
const ROUNDS = 5;

export type AcceptSide = { acceptedPerSecond: number; p50Ms: number; p99Ms: number; errors: number };
export type AcceptBenchResult = {
  database: 'postgres' | 'pglite';
  requests: number;
  connections: number;
  mailroom: AcceptSide & { serverCpuMsPerRequest: number };
  peer: AcceptSide | null;
  /** Mailroom's accepted/s over the peer's (the bar is ≥ 1.0), and its p99 over the peer's (the bar is ≤ 1.5). */
  ratio: number | null;
  p99Ratio: number | null;
  loadAverage: number;
};

function summary(batches: LoadBatch[]): AcceptSide {
  const total = (field: 'accepted' | 'seconds' | 'errors') => batches.reduce((sum, b) => sum + b[field], 0);
  return {
    acceptedPerSecond: Math.round(total('accepted') / total('seconds')),
    p50Ms: median(batches.map((b) => b.p50)),
    p99Ms: median(batches.map((b) => b.p99)),
    errors: total('errors'),
  };
}

export async function benchAccept(options: { databaseUrl?: string; requests?: number } = {}): Promise<AcceptBenchResult> {
  const requests = options.requests ?? 50_000;
  const bench = await startBenchHarness(options.databaseUrl);
  const database = bench.server.deps.dbKind;
  const peer = database === 'postgres' ? await startLineProcess('bench/accept/naive-peer.ts', [bench.databaseUrl!]) : null;
  try {
    const body = JSON.stringify({
      from: SENDER, to: 'reader@example.org', subject: 'Your weekly digest',
      html: '<h1>Hello</h1><p>This is the <b>weekly</b> digest with a <a href="https://example.com">link</a>.</p>',
      scheduledAt: new Date(Date.now() + 30 * 86_400_000).toISOString(),
    });
    const headers = { authorization: `Bearer ${bench.apiKey}`, 'content-type': 'application/json' };
    const targets = { mailroom: `${bench.server.url}/v1/emails`, ...(peer ? { peer: `http://127.0.0.1:${peer.port}/v1/emails` } : {}) };
    const sides = Object.keys(targets) as Array<keyof typeof targets>;
    const run = async (side: keyof typeof targets, count: number) => {
      const result = await loadBatch({ url: targets[side]!, headers, body, count, connections: CONNECTIONS });
      if (result.errors > 0) throw new Error(`${side}: ${result.errors} of ${count} requests not answered 2xx`);
      return result;
    };

    for (const side of sides) await run(side, WARMUP);
    const batches: Record<string, LoadBatch[]> = Object.fromEntries(sides.map((side) => [side, []]));
    const perRound = Math.floor(requests / ROUNDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < sides.length; i++) {
        const side = sides[(round + i) % sides.length]!;
        batches[side]!.push(await run(side, perRound));
      }
    }
    const mailroom = summary(batches.mailroom!);
    const cpuMicros = batches.mailroom!.reduce((sum, b) => sum + b.cpuMicros, 0);
    const accepted = batches.mailroom!.reduce((sum, b) => sum + b.accepted, 0);
    const peerSide = peer ? summary(batches.peer!) : null;
    return {
      database,
      requests: perRound * ROUNDS,
      connections: CONNECTIONS,
      mailroom: { ...mailroom, serverCpuMsPerRequest: Number((cpuMicros / 1000 / accepted).toFixed(3)) },
      peer: peerSide,
      ratio: peerSide ? Number((mailroom.acceptedPerSecond / peerSide.acceptedPerSecond).toFixed(2)) : null,
      p99Ratio: peerSide ? Number((mailroom.p99Ms / peerSide.p99Ms).toFixed(2)) : null,
      loadAverage: Number(os.loadavg()[0]!.toFixed(1)),
    };
  } finally {
    await peer?.stop();
    await bench.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const requests = process.argv[3] ? Number(process.argv[3]) : undefined;
  console.log(JSON.stringify(await benchAccept({ databaseUrl: process.argv[2] || undefined, requests }), null, 2));
}
