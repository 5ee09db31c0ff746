/**
 * What the end-to-end benchmarks share: a server on a fresh database (PostgreSQL or PGlite) with a
 * team and a verified sending domain, a loopback SMTP sink in its own process, the peak RSS of this
 * process, and the delivery phase (a dispatcher draining every queued email to the sink).
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import inspector from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { CampaignRenderer } from '../src/campaigns/render.js';
import { startReleaser } from '../src/campaigns/releaser.js';
import { limitHeapGrowth, startMailroom, type RunningService } from '../src/main.js';
import { startDispatcher } from '../src/sending/dispatcher.js';
import { createTransport, type Transport } from '../src/sending/transports/index.js';
import { createTeam } from '../src/services/teams.js';
import { startCpuSplit } from './cpu-split.js';
import { scratchDatabase } from './postgres.js';

export const SENDER = 'Bench <news@bench.example.com>';

/** The settings the benchmarks' server runs with that are not the defaults (BENCHMARKS.md prints them). */
export const BENCH_SETTINGS = {
  ROLE: 'api',
  RATE_LIMIT_PER_SECOND: '1000000',
};

const TSX = path.resolve('node_modules/.bin/tsx');

// A full collection at a phase boundary, so a phase's peak RSS starts from the memory the process
// still holds rather than from an earlier phase's garbage that V8 has not got round to (the import
// leaves ~100 MB of it). A service left idle gets the same from V8's memory reducer.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;
// The service's process-wide setting, as src/main.ts makes it.
limitHeapGrowth();

/**
 * A helper process of the benchmarks (the SMTP sink, the webhook receiver): it prints
 * `<name> <port>` once listening, then answers each line written to it with one line; its stdin
 * ending stops it.
 */
export async function startLineProcess(script: string, args: string[] = []) {
  const child = spawn(TSX, [script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiters: Array<(line: string) => void> = [];
  let buffer = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      const waiter = waiters.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    }
  });
  const next = () => new Promise<string>((resolve) => (lines.length > 0 ? resolve(lines.shift()!) : waiters.push(resolve)));
  const port = Number((await next()).split(' ')[1]);
  return {
    port,
    /** Writes a line and answers the line that comes back. */
    async ask(line: string): Promise<string> {
      child.stdin!.write(`${line}\n`);
      return next();
    },
    stop: () => new Promise<void>((resolve) => {
      child.once('close', () => resolve());
      child.stdin!.end();
    }),
  };
}

/** CPU per message of each part of the machine (cpu-split.ts) during a phase. */
export type CpuPerMessage = Array<{ part: string; msPerMessage: number }>;

/**
 * Counts the CPU each thread of this process and each other process uses during a delivery; with
 * BENCH_PROFILE=<dir>, also writes V8's CPU profile of the main thread there (open it in Chrome's
 * DevTools) and prints the split to stderr.
 */
async function startProfile(): Promise<{ stop(messages: number): Promise<CpuPerMessage> }> {
  const dir = process.env.BENCH_PROFILE;
  const session = dir ? new inspector.Session() : null;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const cpu = startCpuSplit();
  return {
    async stop(messages) {
      const split = cpu().map(({ part, seconds }) => ({ part, msPerMessage: Number(((seconds * 1000) / messages).toFixed(3)) }));
      if (!session || !dir) return split;
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      await mkdir(dir, { recursive: true });
      const file = path.join(dir, `delivery-${process.pid}-${Date.now()}.cpuprofile`);
      await writeFile(file, JSON.stringify(profile));
      const lines = split.map(({ part, msPerMessage }) => `  ${msPerMessage.toFixed(3).padStart(7)} ms/msg  ${part}`);
      process.stderr.write(`delivery of ${messages} messages, CPU by part (profile: ${file}):\n${lines.join('\n')}\n`);
      return split;
    },
  };
}

/** Where the delivery goes, in a process of its own: it counts the messages it received. */
export type BenchSink = { port: number; count(): Promise<number>; stop(): Promise<void> };

async function startSink(): Promise<BenchSink> {
  const sink = await startLineProcess('bench/emails/sink.ts');
  return { ...sink, count: async () => Number((await sink.ask('?')).split(' ')[1]) };
}

const IMPORT_CHUNK = 10_000;

/**
 * A book of `total` contacts, imported through the API in bulk requests of 10,000; `emailOf(i)` is
 * the i-th one's address. `into`: a book made beforehand (else a new one).
 */
export async function importBook(
  bench: Pick<BenchHarness, 'api'>, total: number, emailOf = (i: number) => `reader${i}@example.org`, into?: { id: string },
): Promise<{ id: string }> {
  const book = into ?? await bench.api('POST', '/contactBooks', { name: 'Bench', variables: ['plan'] });
  for (let start = 0; start < total; start += IMPORT_CHUNK) {
    const rows = Array.from({ length: Math.min(IMPORT_CHUNK, total - start) }, (_, i) => ({
      email: emailOf(start + i), firstName: `Reader ${start + i}`, properties: { plan: i % 2 ? 'pro' : 'free' },
    }));
    await bench.api('POST', `/contactBooks/${book.id}/contacts/bulk`, rows);
  }
  return book;
}

/** The benchmarks' campaign: personalised, with a tracked link and the unsubscribe link, sent now. */
export const createCampaign = (bench: Pick<BenchHarness, 'api'>, bookId: string, name: string, batchSize: number) =>
  bench.api('POST', '/campaigns', {
    name, from: SENDER, subject: 'Hello {{firstName,fallback=there}}', contactBookId: bookId, batchSize, sendNow: true,
    html: '<h1>Hello {{firstName}}</h1><p>Your plan: <b>{{plan}}</b>. A <a href="https://example.com">link</a>.</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
  }) as Promise<{ id: string }>;

/** Releases every recipient of the campaign with a releaser of its own (no dispatcher); answers the seconds it took. */
export async function releaseAll(bench: Pick<BenchHarness, 'server'>, campaignId: string, total: number): Promise<number> {
  const started = performance.now();
  const releaser = startReleaser(bench.server.deps, { autostart: false });
  await releaser.tick();
  await releaser.stop();
  const seconds = (performance.now() - started) / 1000;
  const { released } = await bench.server.deps.db
    .selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('released'))
    .where('campaign_id', '=', campaignId).executeTakeFirstOrThrow();
  if (Number(released) !== total) throw new Error(`campaign ${campaignId}: released ${released} of ${total}`);
  return seconds;
}

export type BenchHarness = {
  server: RunningService;
  /** The scratch PostgreSQL database's URL; null on PGlite. */
  databaseUrl: string | null;
  apiKey: string;
  /** Calls the API as the bench team; a non-2xx answer fails the benchmark. */
  api(method: string, route: string, body?: unknown): Promise<any>;
  /** Collects garbage and starts counting peak RSS afresh, for a phase that should not carry an earlier one's. */
  resetPeakRss(): void;
  peakRssMb(): number;
  /**
   * Runs a dispatcher until no email is left to send; counts only what this call delivered. Its
   * transport is the configuration's unless one is given. `making`: work that makes the emails
   * while the dispatcher runs (a releaser's or an automation runner's pass), started with the
   * clock, `expected` of them.
   */
  deliver(
    transport?: Transport, options?: { making: () => Promise<unknown>; expected: number },
  ): Promise<{ messagesPerSecond: number; seconds: number; receivedBySink: number; cpu: CpuPerMessage }>;
  close(): Promise<void>;
};

/**
 * With `submission`, the SMTP submission listener (STARTTLS) on a free loopback port
 * (`server.submissionPort`); without, neither submission listener runs. With `inbound`, the inbound
 * SMTP listener on a free loopback port (`server.inboundPort`; it runs only with a ROLE other than
 * api, which `settings` then give); without, it stays off. The delivery goes to
 * `sink` (which the harness then stops when it closes), by default a relay sink of its own, and
 * `settings` override the server's (e.g. SMTP_URL=direct).
 */
export async function startBenchHarness(
  databaseUrl?: string, options: { submission?: boolean; inbound?: boolean; sink?: BenchSink; settings?: Record<string, string> } = {},
): Promise<BenchHarness> {
  const sink = options.sink ?? await startSink();
  const database = databaseUrl ? await scratchDatabase(databaseUrl) : null;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-bench-'));
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 100);
  // ROLE=api: the benchmark starts the workers itself, so each phase is measured alone.
  const config = loadConfig({
    ...BENCH_SETTINGS,
    PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'error', DATA_DIR: dataDir, SMTP_URL: `smtp://127.0.0.1:${sink.port}`,
    // For the webhook and inbound benchmarks, whose receiver listens on loopback; unused by the others.
    WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
    // Off unless asked for: the defaults (2587, 2465, 2525) may be taken, and only the submission and
    // inbound benchmarks use them.
    SMTP_SUBMISSION_PORT: '0', SMTP_SUBMISSION_TLS_PORT: '0', INBOUND_SMTP_PORT: '0',
    ...options.settings,
  });
  // 0 set in code (not the environment, where it means off) takes a free port; implicit TLS stays off.
  if (options.submission) config.submissionPort = 0;
  if (options.inbound) config.inboundSmtpPort = 0;
  // On PGlite, the service's own embedded database in DATA_DIR, on disk as a user runs it: one in
  // memory would count every stored row in the process's RSS.
  const source = database ? { url: database.url, poolSize: 10 } : { dataDir };
  const server = await startMailroom(config, { database: source, log: createLogger('error') });
  const { db } = server.deps;
  const { teamId, apiKey } = await createTeam({ db }, { name: 'bench' });
  const api = async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${server.url}/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const domain = await api('POST', '/domains', { name: 'bench.example.com' });
  // Verified by hand: DNS is not what these benchmarks measure.
  await db.updateTable('domains').set({ status: 'SUCCESS' }).where('team_id', '=', teamId).where('id', '=', domain.id).execute();

  const countAll = () => db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('n'));
  return {
    server,
    databaseUrl: database?.url ?? null,
    apiKey,
    api,
    resetPeakRss() {
      collectGarbage();
      peakRss = process.memoryUsage().rss;
    },
    peakRssMb: () => Math.round(peakRss / 1024 / 1024),
    async deliver(transport, options) {
      // What an earlier phase delivered is not this one's.
      const deliveredBefore = Number((await countAll().where('status', '=', 'DELIVERED').executeTakeFirstOrThrow()).n);
      const receivedBefore = await sink.count();
      const profile = await startProfile();
      const started = performance.now();
      const { deps } = server;
      const campaigns = new CampaignRenderer(deps.db, deps.config, deps.tokens);
      const dispatcher = startDispatcher(deps, { transport: transport ?? createTransport(deps.config), campaigns });
      let failed: unknown;
      const making = options?.making().catch((error: unknown) => (failed = error ?? new Error('making the emails failed')));
      // The sink is asked while mail flows, the database only once it has everything: on PGlite a
      // count of the queue runs in this very process, and polling it would slow what it measures.
      const due = options?.expected ?? Number((await countAll().where('send_at', 'is not', null).executeTakeFirstOrThrow()).n);
      while ((await sink.count()) - receivedBefore < due) {
        if (failed) throw failed;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await making;
      if (failed) throw failed;
      while (Number((await countAll().where('send_at', 'is not', null).executeTakeFirstOrThrow()).n) > 0) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const seconds = (performance.now() - started) / 1000;
      const cpu = await profile.stop(due);
      await dispatcher.stop();
      const sent = Number((await countAll().where('status', '=', 'DELIVERED').executeTakeFirstOrThrow()).n) - deliveredBefore;
      // The rate is what reached the sink; a message recorded as delivered that did not (or one
      // that arrived twice) fails the run instead of flattering it.
      const received = (await sink.count()) - receivedBefore;
      if (received !== sent) throw new Error(`the sink received ${received} messages; ${sent} were recorded as delivered`);
      return { messagesPerSecond: Math.round(received / seconds), seconds: Number(seconds.toFixed(2)), receivedBySink: received, cpu };
    },
    async close() {
      clearInterval(sampler);
      await server.close();
      await database?.drop();
      await sink.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
