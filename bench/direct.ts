/**
 * Direct delivery (SMTP_URL=direct) beside the relay: the same campaign, to a book of N contacts
 * spread evenly over 50 recipient domains, personalised and DKIM-signed, delivered once straight
 * to the domains' MX hosts and once through the relay transport (SMTP_URL) to one sink.
 *
 *   npx tsx bench/direct.ts [postgres://…/db] [contacts]   (no URL: embedded PGlite)
 *
 * Direct: a loopback DNS server and 5 receivers (127.0.0.2–6, one port, DIRECT_MX_PORT), in a
 * process of their own (bench/direct/receivers.ts); each of the 50 domains has one MX, a host of
 * one of 5 registrable domains, so there are 5 destinations of 10 domains each, and each receiver
 * records the most TCP connections it had open at once, to be held to DIRECT_MAX_CONNECTIONS
 * (the default, 10). Relay: the other benchmarks' sink, one port, SMTP_POOL_SIZE connections.
 * Neither side offers STARTTLS, so both carry the same bytes the same way.
 *
 * Every run is a process of its own, on a fresh database, so that neither inherits the other's
 * heap, rows or warmed-up code; they go in rounds, relay then direct, then direct then relay, and
 * so on, so that whatever else the machine does meanwhile falls on both alike. Within a run the
 * phases are measured apart as in the campaign benchmark: the release (no dispatcher), then a
 * dispatcher draining the queue, timed until the receivers have every message and the database
 * has every outcome. Peak RSS is sampled over both, from a full collection after the import. The
 * transport's sends are counted too: a message a destination postponed untried goes back to the
 * queue in the database and is handed over again.
 */
import os from 'node:os';
import type { ReceiverStats } from './direct/receivers.js';
import { createTransport, type Transport } from '../src/sending/transports/index.js';
import { runThisScriptApart } from './run-apart.js';
import { createCampaign, importBook, releaseAll, startBenchHarness, startLineProcess, type BenchSink } from './harness.js';

const DOMAINS = 50;
const DESTINATIONS = 5;
const ROUNDS = 2;

type Mode = 'direct' | 'relay';

/** One delivery of the campaign, in a process of its own. */
export type DirectBenchRun = {
  mode: Mode;
  database: 'postgres' | 'pglite';
  release: { recipientsPerSecond: number; seconds: number };
  delivery: { messagesPerSecond: number; seconds: number; receivedBySink: number };
  /** CPU of the Mailroom process during the delivery, per message (on PostgreSQL without the database's). */
  serverCpuMsPerMessage: number;
  peakRssMb: number;
  /** DIRECT_MAX_CONNECTIONS of the run's server. */
  cap: number;
  /** Direct only: what each receiver (destination) took, and its peak of connections open at once. */
  receivers: ReceiverStats[] | null;
  /**
   * Messages handed to the transport, and what came back per recipient: delivered, or (direct
   * only) postponed untried, deferred or bounced. A postponed one goes back to the queue in the
   * database and is claimed, composed and signed again.
   */
  handedOver: { sends: number; results: Record<string, number> };
};

type Side = {
  /** Mean over the runs. */
  messagesPerSecond: number;
  runs: number[];
  serverCpuMsPerMessage: number;
  /** The highest of the runs. */
  peakRssMb: number;
  /** Messages handed to the transport per message delivered, mean over the runs (above 1: some were postponed and sent again). */
  sendsPerMessage: number;
};

export type DirectBenchResult = {
  database: 'postgres' | 'pglite';
  contacts: number;
  domains: number;
  destinations: number;
  rounds: number;
  direct: Side & {
    /** Per destination, the most TCP connections open at once in any run. */
    peakConnections: Record<string, number>;
    /** The same, not counting connections the sender had already said QUIT on. */
    peakInUse: Record<string, number>;
    /** Per destination, messages received in a run (the same in each). */
    received: Record<string, number>;
  };
  relay: Side;
  /** Direct over relay messages/s: the goal is ≥ 0.8. */
  ratio: number;
  /** DIRECT_MAX_CONNECTIONS. */
  cap: number;
  /** Every destination's peak of TCP connections ≤ the cap, in every run. */
  capHeld: boolean;
  /** The 1-minute load average when the last run ended. */
  loadAverage: number;
};

/** The outside world of direct delivery, as the harness's sink: the receivers count what they took. */
async function startReceivers() {
  const world = await startLineProcess('bench/direct/receivers.ts', [String(DOMAINS), String(DESTINATIONS)]);
  const sink: BenchSink = { port: world.port, count: async () => Number((await world.ask('?')).split(' ')[1]), stop: world.stop };
  return {
    sink,
    dnsServer: (await world.ask('dns')).split(' ')[1]!,
    stats: async () => {
      const line = await world.ask('stats');
      return JSON.parse(line.slice(line.indexOf(' ') + 1)) as ReceiverStats[];
    },
  };
}

/** Counts, in the answer, the transport's sends and each recipient's result (a relay's accepted message counts as delivered). */
function countHandOvers(transport: Transport): DirectBenchRun['handedOver'] {
  const counts: DirectBenchRun['handedOver'] = { sends: 0, results: {} };
  const tally = (status: string) => (counts.results[status] = (counts.results[status] ?? 0) + 1);
  const send = transport.send.bind(transport);
  transport.send = async (...args) => {
    counts.sends++;
    const result = await send(...args);
    if (result.kind === 'recipients') for (const recipient of result.results) tally(recipient.status);
    else tally(result.kind === 'sent' ? 'delivered' : result.kind);
    return result;
  };
  return counts;
}

export async function benchDirectRun(mode: Mode, options: { databaseUrl?: string; contacts?: number } = {}): Promise<DirectBenchRun> {
  const total = options.contacts ?? 20_000;
  const world = mode === 'direct' ? await startReceivers() : null;
  const bench = await startBenchHarness(options.databaseUrl, {
    sink: world?.sink,
    settings: world ? { SMTP_URL: 'direct', DNS_SERVERS: world.dnsServer, DIRECT_MX_PORT: String(world.sink.port), EHLO_NAME: 'out.bench.example.com' } : {},
  });
  try {
    const book = await importBook(bench, total, (i) => `reader${i}@d${i % DOMAINS}.test`);
    const campaign = await createCampaign(bench, book.id, 'Bench', 5_000);
    bench.resetPeakRss();
    const releaseSeconds = await releaseAll(bench, campaign.id, total);
    const transport = createTransport(bench.server.deps.config);
    const handedOver = countHandOvers(transport);
    const cpuBefore = process.cpuUsage();
    const delivery = await bench.deliver(transport);
    const cpu = process.cpuUsage(cpuBefore);
    const peakRssMb = bench.peakRssMb();
    if (delivery.receivedBySink !== total) throw new Error(`${mode}: received ${delivery.receivedBySink} of ${total}`);
    const receivers = world ? await world.stats() : null;
    for (const receiver of receivers ?? []) {
      if (receiver.misrouted > 0) throw new Error(`${receiver.host} took ${receiver.misrouted} recipients of domains it does not host`);
      if (receiver.received === 0) throw new Error(`${receiver.host} took nothing`);
    }
    return {
      mode,
      database: bench.server.deps.dbKind,
      release: { recipientsPerSecond: Math.round(total / releaseSeconds), seconds: Number(releaseSeconds.toFixed(2)) },
      delivery,
      serverCpuMsPerMessage: Number(((cpu.user + cpu.system) / 1000 / total).toFixed(3)),
      peakRssMb,
      cap: bench.server.deps.config.direct.maxConnections,
      receivers,
      handedOver,
    };
  } finally {
    await bench.close();
  }
}

/** A run in a process of its own (this script with `--run`), which prints its result as JSON. */
const runApart = (mode: Mode, databaseUrl: string, contacts: number) =>
  runThisScriptApart<DirectBenchRun>(['--run', mode, databaseUrl, String(contacts)]);

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

function side(runs: DirectBenchRun[]): Side {
  return {
    messagesPerSecond: Math.round(mean(runs.map((r) => r.delivery.messagesPerSecond))),
    runs: runs.map((r) => r.delivery.messagesPerSecond),
    serverCpuMsPerMessage: Number(mean(runs.map((r) => r.serverCpuMsPerMessage)).toFixed(3)),
    peakRssMb: Math.max(...runs.map((r) => r.peakRssMb)),
    sendsPerMessage: Number(mean(runs.map((r) => r.handedOver.sends / r.delivery.receivedBySink)).toFixed(2)),
  };
}

export async function benchDirect(options: { databaseUrl?: string; contacts?: number; rounds?: number } = {}): Promise<DirectBenchResult> {
  const contacts = options.contacts ?? 20_000;
  const rounds = options.rounds ?? ROUNDS;
  const runs: DirectBenchRun[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const mode of round % 2 === 0 ? (['relay', 'direct'] as const) : (['direct', 'relay'] as const)) {
      runs.push(await runApart(mode, options.databaseUrl ?? '', contacts));
    }
  }
  const directRuns = runs.filter((r) => r.mode === 'direct');
  const direct = side(directRuns);
  const relay = side(runs.filter((r) => r.mode === 'relay'));
  const peakConnections: Record<string, number> = {};
  const peakInUse: Record<string, number> = {};
  const received: Record<string, number> = {};
  for (const receiver of directRuns.flatMap((r) => r.receivers ?? [])) {
    peakConnections[receiver.destination] = Math.max(peakConnections[receiver.destination] ?? 0, receiver.peakSessions);
    peakInUse[receiver.destination] = Math.max(peakInUse[receiver.destination] ?? 0, receiver.peakInUse);
    received[receiver.destination] = receiver.received;
  }
  const cap = directRuns[0]!.cap;
  return {
    database: runs[0]!.database,
    contacts,
    domains: DOMAINS,
    destinations: DESTINATIONS,
    rounds,
    direct: { ...direct, peakConnections, peakInUse, received },
    relay,
    ratio: Number((direct.messagesPerSecond / relay.messagesPerSecond).toFixed(2)),
    cap,
    capHeld: Object.values(peakInUse).every((peak) => peak <= cap),
    loadAverage: Number(os.loadavg()[0]!.toFixed(1)),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [first, ...rest] = process.argv.slice(2);
  if (first === '--run') {
    const [mode, url, contacts] = rest;
    if (mode !== 'direct' && mode !== 'relay') throw new Error(`--run takes "direct" or "relay", not ${mode}`);
    console.log(JSON.stringify(await benchDirectRun(mode, { databaseUrl: url || undefined, contacts: contacts ? Number(contacts) : undefined }), null, 2));
  } else {
    const contacts = rest[0] ? Number(rest[0]) : undefined;
    console.log(JSON.stringify(await benchDirect({ databaseUrl: first || undefined, contacts }), null, 2));
  }
}
