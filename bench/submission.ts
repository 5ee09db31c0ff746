/**
 * SMTP submission against the API: the same N messages accepted through `POST /v1/emails`
 * (autocannon, 4 keep-alive connections) and through the submission listener: by nodemailer (a
 * pool of 4 STARTTLS connections), once as it comes and once with TCP_NODELAY on its sockets,
 * which it leaves with Nagle's algorithm on; and by Mailroom's own relay client, which pipelines.
 *
 *   npx tsx bench/submission.ts [postgres://…/db] [messages]   (no URL: embedded PGlite)
 *
 * Only acceptance is measured: the harness runs ROLE=api, so no dispatcher takes the queued emails
 * (checked: every one is still QUEUED at the end). Each path's load generator runs in a process
 * of its own (this file, with `--client`), so that the server's event loop does only the server's
 * work, and first sends a warm-up not counted. The messages go in rounds, each path in turn with
 * its share and the order turning from round to round, so that whatever else runs on the machine
 * meanwhile hits every path alike. Every message must be accepted exactly once: no non-2xx answer,
 * no SMTP reply but `250 … Queued as <id>`, one distinct email id per message, and one new row
 * per message.
 */
import net from 'node:net';
import os from 'node:os';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import nodemailer from 'nodemailer';
import { buildMessage } from '../src/mail/mime.js';
import { smtpTransport } from '../src/sending/transports/smtp.js';
import { SENDER, startBenchHarness, startLineProcess } from './harness.js';

const CONNECTIONS = 4;
const WARMUP = 200;
const ROUNDS = 5;

/** The benchmark's message: small, text and HTML, one recipient; the same on every path. */
const MESSAGE = {
  from: SENDER,
  to: 'reader@example.org',
  subject: 'Your weekly digest',
  text: 'Hello,\n\nThis is the weekly digest with a link: https://example.com\n',
  html: '<h1>Hello</h1><p>This is the <b>weekly</b> digest with a <a href="https://example.com">link</a>.</p>',
};

type PathName = 'http' | 'smtp' | 'smtpNoDelay' | 'smtpPipelining';

type ClientSpec = { path: PathName; target: string; apiKey: string };

/** What a load generator measured of one batch of messages. */
type BatchResult = {
  seconds: number;
  accepted: number;
  /** Answers other than 250 / 2xx, and connection errors. */
  errors: number;
  firstError?: string;
  /** SMTP: the email ids named by the 250 replies to DATA. */
  ids?: string[];
  /** Of each accepted message, in ms. SMTP: MAIL FROM to the reply to DATA (nodemailer's envelopeTime + messageTime); HTTP: autocannon's response time. */
  latencies: number[];
  /** CPU time the load generator's process spent on the batch, in µs. */
  cpuMicros: number;
};

/** A load generator: sends batches through one path, measuring all but its own CPU time. */
type LoadGenerator = { send(count: number): Promise<Omit<BatchResult, 'cpuMicros'>>; close(): unknown };

export type PathResult = {
  acceptedPerSecond: number;
  /** The timed batches' time together. */
  seconds: number;
  errors: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU time of the server's process per accepted message (on PostgreSQL, not the database's). */
  serverCpuMsPerMessage: number;
  /**
   * CPU time of the path's load generator per accepted message: it runs on the same cores, so what
   * a client spends is not the server's to spend.
   */
  clientCpuMsPerMessage: number;
};

export type SubmissionBenchResult = {
  database: 'postgres' | 'pglite';
  messages: number;
  connections: number;
  warmup: number;
  rounds: number;
  http: PathResult;
  /** nodemailer as it comes. */
  smtp: PathResult;
  /** The same with TCP_NODELAY on the client's sockets. */
  smtpNoDelay: PathResult;
  /** Mailroom's own relay client (SMTP_URL's), which pipelines (RFC 2920) as Postfix does. */
  smtpPipelining: PathResult;
  /** smtp.acceptedPerSecond / http.acceptedPerSecond. */
  ratio: number;
  /** smtpNoDelay.acceptedPerSecond / http.acceptedPerSecond. */
  ratioNoDelay: number;
  /** smtpPipelining.acceptedPerSecond / http.acceptedPerSecond. */
  ratioPipelining: number;
  /** Rows in emails at the end: one per path × (messages + warm-up), every one still QUEUED. */
  rows: number;
  /** Of the server's process (no load generator in it; on PGlite it holds the database too). */
  peakRssMb: number;
  /** The 1-minute load average when the benchmark ended: what else ran on the machine. */
  loadAverage: number;
};

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;

/**
 * The HTTP load generator: autocannon, one run per batch. Timed to the last response: autocannon
 * notices that a run is over only on its once-a-second tick.
 */
function httpClient(spec: ClientSpec): LoadGenerator {
  const options = {
    url: spec.target, method: 'POST' as const, connections: CONNECTIONS, body: JSON.stringify(MESSAGE),
    headers: { authorization: `Bearer ${spec.apiKey}`, 'content-type': 'application/json' },
  };
  return {
    send: (count: number) =>
      new Promise<Awaited<ReturnType<LoadGenerator['send']>>>((resolve, reject) => {
        const latencies: number[] = [];
        const started = performance.now();
        let lastResponse = started;
        const instance = autocannon({ ...options, amount: count }, (error, run) => {
          if (error) return reject(error);
          resolve({ seconds: (lastResponse - started) / 1000, accepted: run['2xx'], errors: run.non2xx + run.errors + run.timeouts, latencies });
        });
        instance.on('response', (_client, statusCode, _bytes, responseTime) => {
          lastResponse = performance.now();
          if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
        });
      }),
    close: () => {},
  };
}

/** One message's fate on an SMTP path: the reply to its final dot and how long it took, or why it failed. */
type SmtpOutcome = { response: string; latencyMs: number } | { failure: string };

const QUEUED = /^250 2\.0\.0 Queued as (\S+)$/;

/** A batch's outcomes as a BatchResult: accepted are only those whose reply names an email id. */
function tally(seconds: number, outcomes: SmtpOutcome[]): Awaited<ReturnType<LoadGenerator['send']>> {
  const ids: string[] = [];
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  for (const outcome of outcomes) {
    const id = 'response' in outcome ? QUEUED.exec(outcome.response)?.[1] : undefined;
    if (id && 'response' in outcome) {
      ids.push(id);
      latencies.push(outcome.latencyMs);
    } else {
      errors++;
      firstError ??= 'response' in outcome ? outcome.response : outcome.failure;
    }
  }
  return { seconds, accepted: ids.length, errors, firstError, ids, latencies };
}

/** The SMTP load generator: one nodemailer pool for every batch, each batch handed to it at once. */
function smtpClient(spec: ClientSpec): LoadGenerator {
  const port = Number(spec.target);
  // nodemailer writes a message's body and its terminating dot apart: with Nagle's algorithm the
  // dot waits for the server to acknowledge the body, which Linux delays by 40 ms. An application
  // can turn that off only by opening the socket itself (nodemailer's getSocket).
  const getSocket = (_options: unknown, callback: (error: Error | null, socket?: { connection: net.Socket }) => void) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    socket.once('error', callback).once('connect', () => {
      socket.off('error', callback);
      callback(null, { connection: socket });
    });
  };
  const transport = nodemailer.createTransport({
    host: '127.0.0.1', port, secure: false, requireTLS: true,
    auth: { user: 'bench', pass: spec.apiKey }, tls: { rejectUnauthorized: false },
    pool: true, maxConnections: CONNECTIONS, maxMessages: Infinity,
    ...(spec.path === 'smtpNoDelay' ? { getSocket } : {}),
  });
  return {
    async send(count: number) {
      const started = performance.now();
      // All at once: the pool queues them and keeps every one of its connections busy.
      const outcomes = await Promise.all(
        Array.from({ length: count }, () =>
          transport.sendMail({ ...MESSAGE }).then(
            (info): SmtpOutcome => {
              const times = info as { envelopeTime?: number; messageTime?: number };
              return { response: info.response, latencyMs: (times.envelopeTime ?? 0) + (times.messageTime ?? 0) };
            },
            (error: unknown): SmtpOutcome => ({ failure: String(error) }),
          ),
        ),
      );
      return tally((performance.now() - started) / 1000, outcomes);
    },
    close: () => transport.close(),
  };
}

/**
 * The pipelining load generator: Mailroom's relay client (what SMTP_URL sends through) with a pool
 * of 4 sessions, STARTTLS required, AUTH PLAIN with the API key. It pipelines as Postfix does: a
 * message's body and final dot leave in one write with the next message's envelope behind them.
 * Two messages per session are kept in its hands, so that a next one is always there to go
 * behind a dot; a message's latency runs from being handed over to the reply to its dot.
 */
function pipeliningClient(spec: ClientSpec): LoadGenerator {
  const transport = smtpTransport({
    url: `smtp://bench:${encodeURIComponent(spec.apiKey)}@127.0.0.1:${spec.target}/?requireTLS=true&tls.rejectUnauthorized=false`,
    poolSize: CONNECTIONS, maxMessagesPerConnection: 1_000_000, timeoutMs: 30_000,
  });
  const envelope = { from: 'news@bench.example.com', to: [MESSAGE.to] };
  const raw = () =>
    buildMessage({
      id: 'bench', from: MESSAGE.from, to: [MESSAGE.to], cc: [], bcc: [], replyTo: [], subject: MESSAGE.subject, text: MESSAGE.text,
      html: MESSAGE.html, headers: {}, attachments: [], messageId: `<${crypto.randomUUID()}@bench.example.com>`,
    }, new Date());
  return {
    async send(count: number) {
      const started = performance.now();
      const outcomes: SmtpOutcome[] = [];
      let next = 0;
      const keepHanding = async () => {
        while (next < count) {
          next++;
          const handed = performance.now();
          const result = await transport.send('bench', raw(), envelope);
          outcomes.push(result.kind === 'sent' ? { response: result.response, latencyMs: performance.now() - handed } : { failure: JSON.stringify(result) });
        }
      };
      await Promise.all(Array.from({ length: 2 * CONNECTIONS }, keepHanding));
      return tally((performance.now() - started) / 1000, outcomes);
    },
    close: () => transport.close(),
  };
}

/**
 * A load generator's process: prints `client 0`, takes its ClientSpec as the first line, then
 * sends as many messages as each further line says and answers each with a BatchResult line.
 */
async function clientProcess(): Promise<void> {
  process.stdout.write('client 0\n');
  let client: LoadGenerator | undefined;
  for await (const line of createInterface({ input: process.stdin })) {
    if (!client) {
      const spec = JSON.parse(line) as ClientSpec;
      client = spec.path === 'http' ? httpClient(spec) : spec.path === 'smtpPipelining' ? pipeliningClient(spec) : smtpClient(spec);
      process.stdout.write('ready\n');
    } else {
      const before = process.cpuUsage();
      const result = await client.send(Number(line));
      const cpu = process.cpuUsage(before);
      process.stdout.write(`${JSON.stringify({ ...result, cpuMicros: cpu.user + cpu.system } satisfies BatchResult)}\n`);
    }
  }
  client?.close();
}

export async function benchSubmission(options: { databaseUrl?: string; messages?: number } = {}): Promise<SubmissionBenchResult> {
  const messages = options.messages ?? 5_000;
  const bench = await startBenchHarness(options.databaseUrl, { submission: true });
  const clients: Array<Awaited<ReturnType<typeof startLineProcess>>> = [];
  try {
    const { server, apiKey } = bench;
    const { db, config } = server.deps;
    // No dispatcher (nor any other worker) in this process: every path measures acceptance alone.
    if (config.role !== 'api') throw new Error(`the harness runs ROLE=${config.role}: a dispatcher would take the queued emails`);
    if (server.submissionPort === null) throw new Error('the submission listener did not start');
    const countRows = async () =>
      Number((await db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

    const paths: PathName[] = ['http', 'smtp', 'smtpNoDelay', 'smtpPipelining'];
    const targets: Record<PathName, string> = {
      http: `${server.url}/v1/emails`, smtp: String(server.submissionPort), smtpNoDelay: String(server.submissionPort),
      smtpPipelining: String(server.submissionPort),
    };
    const totals = Object.fromEntries(
      paths.map((path) => [path, { seconds: 0, accepted: 0, errors: 0, cpuMicros: 0, clientCpuMicros: 0, latencies: [] as number[], ids: new Set<string>() }]),
    ) as Record<PathName, { seconds: number; accepted: number; errors: number; cpuMicros: number; clientCpuMicros: number; latencies: number[]; ids: Set<string> }>;

    /** Sends a batch through one path; checks it was accepted whole, once; answers it and the server's CPU time. */
    const batch = async (path: PathName, client: (typeof clients)[number], count: number) => {
      const rowsBefore = await countRows();
      const cpuBefore = process.cpuUsage();
      const result = JSON.parse(await client.ask(String(count))) as BatchResult;
      const cpu = process.cpuUsage(cpuBefore);
      const rows = (await countRows()) - rowsBefore;
      const problems = [
        result.errors > 0 ? `${result.errors} messages not accepted (first: ${result.firstError ?? 'a non-2xx answer'})` : '',
        result.accepted !== count ? `${result.accepted} of ${count} accepted` : '',
        result.ids && new Set(result.ids).size !== count ? `${new Set(result.ids).size} distinct email ids for ${count} messages` : '',
        rows !== count ? `${rows} new emails rows for ${count} messages` : '',
      ].filter(Boolean);
      if (problems.length > 0) throw new Error(`${path}: ${problems.join('; ')}`);
      return { result, cpuMicros: cpu.user + cpu.system };
    };

    const byPath = {} as Record<PathName, (typeof clients)[number]>;
    for (const path of paths) {
      const client = await startLineProcess('bench/submission.ts', ['--client']);
      clients.push(client);
      byPath[path] = client;
      if ((await client.ask(JSON.stringify({ path, target: targets[path], apiKey } satisfies ClientSpec))) !== 'ready') {
        throw new Error(`the ${path} load generator did not start`);
      }
      await batch(path, client, WARMUP);
    }

    bench.resetPeakRss();
    for (let round = 0; round < ROUNDS; round++) {
      const count = Math.floor(messages / ROUNDS) + (round < messages % ROUNDS ? 1 : 0);
      if (count === 0) continue;
      for (let i = 0; i < paths.length; i++) {
        const path = paths[(round + i) % paths.length]!;
        const { result, cpuMicros } = await batch(path, byPath[path], count);
        const total = totals[path];
        total.seconds += result.seconds;
        total.accepted += result.accepted;
        total.errors += result.errors;
        total.cpuMicros += cpuMicros;
        total.clientCpuMicros += result.cpuMicros;
        total.latencies.push(...result.latencies);
        for (const id of result.ids ?? []) total.ids.add(id);
      }
    }

    const summary = (path: PathName): PathResult => {
      const total = totals[path];
      if (path !== 'http' && total.ids.size !== messages) throw new Error(`${path}: ${total.ids.size} distinct email ids for ${messages} messages`);
      const latencies = total.latencies.sort((a, b) => a - b);
      return {
        acceptedPerSecond: Math.round(total.accepted / total.seconds),
        seconds: Number(total.seconds.toFixed(2)),
        errors: total.errors,
        p50Ms: Number(percentile(latencies, 50).toFixed(1)),
        p99Ms: Number(percentile(latencies, 99).toFixed(1)),
        serverCpuMsPerMessage: Number((total.cpuMicros / 1000 / total.accepted).toFixed(3)),
        clientCpuMsPerMessage: Number((total.clientCpuMicros / 1000 / total.accepted).toFixed(3)),
      };
    };
    const [http, smtp, smtpNoDelay, smtpPipelining] = paths.map(summary) as [PathResult, PathResult, PathResult, PathResult];

    // Accepted once each, and still queued: nothing sent them on.
    const statuses = await db.selectFrom('emails').select(['status', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('status').execute();
    const rows = statuses.reduce((sum, row) => sum + Number(row.n), 0);
    const expected = paths.length * (messages + WARMUP);
    if (rows !== expected || statuses.some((row) => row.status !== 'QUEUED')) {
      throw new Error(`emails at the end: ${JSON.stringify(statuses)}, expected ${expected} QUEUED`);
    }
    return {
      database: server.deps.dbKind,
      messages,
      connections: CONNECTIONS,
      warmup: WARMUP,
      rounds: ROUNDS,
      http,
      smtp,
      smtpNoDelay,
      smtpPipelining,
      ratio: Number((smtp.acceptedPerSecond / http.acceptedPerSecond).toFixed(2)),
      ratioNoDelay: Number((smtpNoDelay.acceptedPerSecond / http.acceptedPerSecond).toFixed(2)),
      ratioPipelining: Number((smtpPipelining.acceptedPerSecond / http.acceptedPerSecond).toFixed(2)),
      rows,
      peakRssMb: bench.peakRssMb(),
      loadAverage: Number(os.loadavg()[0]!.toFixed(1)),
    };
  } finally {
    await Promise.all(clients.map((client) => client.stop()));
    await bench.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--client') {
    await clientProcess();
  } else {
    const messages = process.argv[3] ? Number(process.argv[3]) : undefined;
    console.log(JSON.stringify(await benchSubmission({ databaseUrl: process.argv[2] || undefined, messages }), null, 2));
  }
}
