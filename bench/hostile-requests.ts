/**
 * Hostile requests: what one big request costs the server while it is refused, or taken at the
 * limit. The goal: no single authenticated request stalls the event loop for
 * more than ~100 ms or grows the heap by more than a small multiple of its body (here: at most
 * 4 × the bytes of the requests in flight).
 *
 *   npx tsx bench/hostile-requests.ts [postgres://…/db]   (no URL: embedded PGlite)
 *
 * The server is this process (bench/harness.ts, ROLE=api, the SMTP submission listener on); the
 * requests come from a process of its own (this file with `--client`), so that the event loop
 * measured does only the server's work. Each attack in turn, on the same server:
 * - smtp: 4 connections at once, each submitting (STARTTLS, AUTH with the API key) one message
 *   whose HTML part is 9.4 MB of 7bit lines of 70 characters (it fits SMTP_SUBMISSION_MAX_BYTES);
 *   the API's schema takes html of at most 5,000,000 characters, so each is refused with 552;
 * - api: the same HTML in 4 `POST /v1/emails` at once (JSON bodies under MAX_BODY_BYTES), refused;
 * - at-limit: one `POST /v1/emails` whose html is just under 5,000,000 characters, taken (what the
 *   largest email the API accepts costs: its derived text, its row);
 * - bulk: 8 `POST /v1/contactBooks/{id}/contacts/bulk` at once, each 7.5 MB of `[{},{},…]`
 *   (2,500,000 items), refused;
 * - login: one `POST /login` form of 7.9 MB and 800,000 fields, without a session, refused.
 * Before them each path once at a twentieth of the size, not counted. Measured in this process
 * over each attack, from the request for it to 300 ms after its last answer: the event-loop delay
 * (perf_hooks.monitorEventLoopDelay at 1 ms resolution, less the resolution: how late a timer ran,
 * the longest stretch the loop was held), its maximum and 99th percentile; the heap's growth (V8's
 * heap in use on the main thread plus the external memory of Buffers, sampled every 5 ms, its peak
 * over the level after a full collection just before; a worker thread's heap shows in RSS only);
 * RSS growth (VmHWM, reset through /proc/self/clear_refs just before, over VmRSS then); and the
 * process's CPU time (every thread's). The load generator asks `/health` every 25 ms throughout:
 * its slowest answer is what a load balancer saw.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import nodemailer from 'nodemailer';
import { SENDER, startBenchHarness, startLineProcess } from './harness.js';

/** What the goal allows a request to grow the heap by: this many times the bytes of the requests in flight. */
const HEAP_GOAL_MULTIPLE = 4;
const LOOP_GOAL_MS = 100;
const RESOLUTION_MS = 1;
const SETTLE_MS = 300;
const HEALTH_EVERY_MS = 25;
const HTML_CHARS = 9_400_000;
const BULK_BYTES = 7_500_000;
const FORM_FIELDS = 800_000;
const WARMUP_SHARE = 20;

type AttackName = 'smtp' | 'api' | 'at-limit' | 'bulk' | 'login';
const ATTACKS: AttackName[] = ['smtp', 'api', 'at-limit', 'bulk', 'login'];
const LABELS: Record<AttackName, string> = {
  smtp: 'SMTP submission, 4 × 9.4 MB of HTML at once',
  api: '`POST /v1/emails`, 4 × 9.4 MB of html at once',
  'at-limit': '`POST /v1/emails`, html just under 5,000,000 characters',
  bulk: '`POST …/contacts/bulk`, 8 × 7.5 MB of `[{},…]` at once',
  login: '`POST /login`, a 7.9 MB form of 800,000 fields',
};
/** The API's limit on html (and text), in characters. */
const HTML_LIMIT = 5_000_000;

/** What the load generator is told for each attack. */
type AttackSpec = {
  attack: AttackName;
  /** Divides the body's size: 1 for the attack itself, WARMUP_SHARE for the warm-up. */
  share: number;
  url: string;
  submissionPort: number;
  apiKey: string;
  bookId: string;
};

/** What the load generator saw of one attack. */
type AttackOutcome = {
  requests: number;
  /** Of each request: the message as sent (SMTP) or the HTTP body. */
  bodyBytes: number;
  /** Each answer, as `<status or reply code>`, with how often it came: `552 × 4`. */
  answers: string;
  /** One answer's text, for the reader of the table (the first refusal's). */
  sample: string;
  /** From the first byte to the last answer. */
  seconds: number;
  slowestHealthMs: number;
};

export type HostileAttackResult = AttackOutcome & {
  attack: AttackName;
  /** The attack in a few words, for BENCHMARKS.md. */
  label: string;
  loopMaxMs: number;
  loopP99Ms: number;
  heapGrowthMb: number;
  /** Heap growth over the bytes of all the requests in flight (requests × bodyBytes). */
  heapRatio: number;
  rssGrowthMb: number;
  rssRatio: number;
  /** CPU time of the server's process (all its threads) over the attack. */
  serverCpuMs: number;
};

export type HostileBenchResult = {
  database: 'postgres' | 'pglite';
  heapGoalMultiple: number;
  loopGoalMs: number;
  attacks: HostileAttackResult[];
  loadAverage: number;
};

// ---------------------------------------------------------------------------------------------
// The bodies

/** HTML of about `chars` ASCII characters (a whole number of lines) in lines of 70 with CRLF, as a mail client writes 7bit. */
function bigHtml(chars: number): string {
  const line = `${'<p>Hello <b>reader</b>, a <a href="https://example.com">link</a>.</p>'.padEnd(68, ' ')}\r\n`;
  return line.repeat(Math.floor(chars / line.length));
}

/** A whole message: headers, and the HTML as one 7bit part. */
function rawMessage(html: string): string {
  return [
    `From: ${SENDER}`,
    'To: reader@example.org',
    'Subject: A very large newsletter',
    'MIME-Version: 1.0',
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: 7bit',
    '',
    html,
  ].join('\r\n');
}

/** `[{},{},…]` of exactly `bytes` bytes (give or take one item). */
const emptyObjects = (bytes: number) => `[${'{},'.repeat(Math.floor(bytes / 3) - 1)}{}]`;

/** A form of `fields` fields, `a0=x&a1=x&…`, email and password among them. */
const hugeForm = (fields: number) =>
  ['email=someone%40example.org', 'password=wrong-password', ...Array.from({ length: fields - 2 }, (_, i) => `f${i}=x`)].join('&');

// ---------------------------------------------------------------------------------------------
// The load generator

/** Counts answers by kind: `552 × 4`. */
function tally(codes: string[]): string {
  const counts = new Map<string, number>();
  for (const code of codes) counts.set(code, (counts.get(code) ?? 0) + 1);
  return [...counts].map(([code, n]) => `${code} × ${n}`).join(', ');
}

/** A POST over a connection of its own that answers the status and body even when the server stops reading the body early. */
function post(url: string, headers: Record<string, string>, body: Buffer): Promise<Answer> {
  return new Promise((resolve) => {
    let answered = false;
    const request = http.request(url, { method: 'POST', agent: false, headers: { ...headers, 'content-length': String(body.length) } }, (response) => {
      answered = true;
      let text = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: String(response.statusCode), text }));
      response.on('error', () => resolve({ status: String(response.statusCode), text }));
    });
    request.on('error', (error) => {
      if (!answered) resolve({ status: `error ${(error as NodeJS.ErrnoException).code ?? error.message}`, text: '' });
    });
    request.end(body);
  });
}

/** One message through SMTP submission on a connection of its own, as an application would send it. */
async function submit(spec: AttackSpec, raw: Buffer): Promise<Answer> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1', port: spec.submissionPort, secure: false, requireTLS: true,
    auth: { user: 'bench', pass: spec.apiKey }, tls: { rejectUnauthorized: false },
  });
  try {
    const info = await transport.sendMail({ envelope: { from: 'news@bench.example.com', to: ['reader@example.org'] }, raw });
    return { status: info.response.slice(0, 3), text: info.response };
  } catch (error) {
    const { responseCode, response, message } = error as { responseCode?: number; response?: string; message: string };
    return { status: String(responseCode ?? 'error'), text: response ?? message };
  } finally {
    transport.close();
  }
}

type Answer = { status: string; text: string };

/**
 * The attack with its bodies built (before the clock and the /health probe start: building them
 * holds this process's event loop, which would delay its own probe): how many requests of how
 * many bytes, and how to send them all at once.
 */
function prepareAttack(spec: AttackSpec): { requests: number; body: Buffer; send(): Promise<Answer[]> } {
  const json = { authorization: `Bearer ${spec.apiKey}`, 'content-type': 'application/json' };
  const times = (requests: number, body: Buffer, one: (body: Buffer) => Promise<Answer>) =>
    ({ requests, body, send: () => Promise.all(Array.from({ length: requests }, () => one(body))) });
  const emailBody = (subject: string, chars: number) =>
    Buffer.from(JSON.stringify({ from: SENDER, to: 'reader@example.org', subject, html: bigHtml(Math.floor(chars / spec.share)) }));
  switch (spec.attack) {
    case 'smtp':
      return times(4, Buffer.from(rawMessage(bigHtml(Math.floor(HTML_CHARS / spec.share)))), (raw) => submit(spec, raw));
    case 'api':
      return times(4, emailBody('A very large newsletter', HTML_CHARS), (body) => post(`${spec.url}/v1/emails`, json, body));
    case 'at-limit':
      return times(1, emailBody('The largest newsletter', HTML_LIMIT - 1_000), (body) => post(`${spec.url}/v1/emails`, json, body));
    case 'bulk':
      return times(8, Buffer.from(emptyObjects(Math.floor(BULK_BYTES / spec.share))), (body) => post(`${spec.url}/v1/contactBooks/${spec.bookId}/contacts/bulk`, json, body));
    case 'login': {
      const form = spec.share === 1 ? hugeForm(FORM_FIELDS) : 'email=someone%40example.org&password=wrong-password';
      return times(1, Buffer.from(form), (body) => post(`${spec.url}/login`, { 'content-type': 'application/x-www-form-urlencoded' }, body));
    }
  }
}

/** Runs the attack while asking /health every 25 ms; answers what it saw. */
async function attackWithProbe(spec: AttackSpec): Promise<AttackOutcome> {
  const attack = prepareAttack(spec);
  let running = true;
  let slowest = 0;
  const probe = (async () => {
    while (running) {
      const started = performance.now();
      await fetch(`${spec.url}/health`).then((res) => res.arrayBuffer()).catch(() => undefined);
      slowest = Math.max(slowest, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, HEALTH_EVERY_MS));
    }
  })();
  const started = performance.now();
  const answers = await attack.send();
  const seconds = (performance.now() - started) / 1000;
  running = false;
  await probe;
  // A page's words without its markup; an SMTP reply or a JSON error as it came.
  const sample = answers[0]!.text.startsWith('<') ? answers[0]!.text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim() : answers[0]!.text;
  return {
    requests: attack.requests, bodyBytes: attack.body.length, answers: tally(answers.map((a) => a.status)), sample,
    seconds: Number(seconds.toFixed(2)), slowestHealthMs: Math.round(slowest),
  };
}

/** The load generator's process: prints `client 0`, then answers each AttackSpec line with an AttackOutcome line. */
async function clientProcess(): Promise<void> {
  process.stdout.write('client 0\n');
  for await (const line of createInterface({ input: process.stdin })) {
    process.stdout.write(`${JSON.stringify(await attackWithProbe(JSON.parse(line) as AttackSpec))}\n`);
  }
}

// ---------------------------------------------------------------------------------------------
// The server's side

const statusKb = (field: 'VmRSS' | 'VmHWM') => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
const heapInUse = () => {
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
};
const mb = (bytes: number) => Number((bytes / 2 ** 20).toFixed(1));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function benchHostileRequests(options: { databaseUrl?: string } = {}): Promise<HostileBenchResult> {
  const bench = await startBenchHarness(options.databaseUrl, { submission: true });
  const client = await startLineProcess('bench/hostile-requests.ts', ['--client']);
  try {
    const { server, apiKey } = bench;
    if (server.submissionPort === null) throw new Error('the submission listener did not start');
    const book = (await bench.api('POST', '/contactBooks', { name: 'Hostile' })) as { id: string };
    const spec = (attack: AttackName, share: number): AttackSpec => ({
      attack, share, url: server.url, submissionPort: server.submissionPort!, apiKey, bookId: book.id,
    });
    for (const attack of ATTACKS) await client.ask(JSON.stringify(spec(attack, WARMUP_SHARE)));

    const loop = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    const attacks: HostileAttackResult[] = [];
    for (const attack of ATTACKS) {
      // From what the process holds after a full collection, not from the last attack's garbage.
      bench.resetPeakRss();
      await pause(SETTLE_MS);
      bench.resetPeakRss();
      const heapBefore = heapInUse();
      const rssBeforeKb = statusKb('VmRSS');
      writeFileSync('/proc/self/clear_refs', '5');
      let heapPeak = heapBefore;
      const sampler = setInterval(() => (heapPeak = Math.max(heapPeak, heapInUse())), 5);
      const cpuBefore = process.cpuUsage();
      loop.reset();
      loop.enable();
      const outcome = JSON.parse(await client.ask(JSON.stringify(spec(attack, 1)))) as AttackOutcome;
      await pause(SETTLE_MS);
      loop.disable();
      clearInterval(sampler);
      const cpu = process.cpuUsage(cpuBefore);
      heapPeak = Math.max(heapPeak, heapInUse());
      const rssGrowth = Math.max(0, statusKb('VmHWM') - rssBeforeKb) * 1024;
      const inFlight = outcome.requests * outcome.bodyBytes;
      const late = (ns: number) => Math.max(0, Math.round(ns / 1e6 - RESOLUTION_MS));
      attacks.push({
        attack,
        label: LABELS[attack],
        ...outcome,
        loopMaxMs: late(loop.max),
        loopP99Ms: late(loop.percentile(99)),
        heapGrowthMb: mb(heapPeak - heapBefore),
        heapRatio: Number(((heapPeak - heapBefore) / inFlight).toFixed(2)),
        rssGrowthMb: mb(rssGrowth),
        rssRatio: Number((rssGrowth / inFlight).toFixed(2)),
        serverCpuMs: Math.round((cpu.user + cpu.system) / 1000),
      });
    }
    return { database: server.deps.dbKind, heapGoalMultiple: HEAP_GOAL_MULTIPLE, loopGoalMs: LOOP_GOAL_MS, attacks, loadAverage: Number(os.loadavg()[0]!.toFixed(1)) };
  } finally {
    await client.stop();
    await bench.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === '--client') await clientProcess();
  else console.log(JSON.stringify(await benchHostileRequests({ databaseUrl: process.argv[2] || undefined }), null, 2));
}
