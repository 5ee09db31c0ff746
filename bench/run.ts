/**
 * `npm run bench`: every benchmark on PostgreSQL (when reachable) and on the embedded PGlite, with
 * the figures written to BENCHMARKS.md together with the machine and the date.
 * `npm run bench -- --only startup` (or `--only direct`, `--only inbound`, `--only segments`, `--only hostile`, `--only automations`, `--only webhooks`) measures that alone and replaces only its section.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { CampaignsBenchResult } from './campaigns.js';
import type { ContactsBenchResult } from './contacts.js';
import type { AcceptBenchResult } from './accept.js';
import type { AutomationsBenchResult } from './automations.js';
import type { DirectBenchResult } from './direct.js';
import type { EmailsBenchResult } from './emails.js';
import type { HostileBenchResult } from './hostile-requests.js';
import type { InboundBenchResult } from './inbound.js';
import { BENCH_SETTINGS, type CpuPerMessage } from './harness.js';
import { benchPostgresUrl, postgresReachable } from './postgres.js';
import { runNodeForJson } from './run-apart.js';
import type { RateLimitBenchResult } from './rate-limit.js';
import type { SegmentsBenchResult } from './segments.js';
import { startupBench, type StartupBenchResult } from './startup.js';
import type { SubmissionBenchResult } from './submission.js';
import type { WebhooksBenchResult } from './webhooks.js';

/**
 * The benchmark scripts, bundled as dist/ is (scripts/build.mjs) before any runs: each then runs
 * in plain node, as `npm start` runs the service, so its memory and CPU hold no TypeScript
 * loader's share (about 90 MB of RSS under tsx).
 */
const BUNDLES = path.resolve('node_modules/.cache/mailroom-bench');
const SCRIPTS = ['accept', 'contacts', 'emails', 'campaigns', 'webhooks', 'submission', 'direct', 'inbound', 'segments', 'hostile-requests', 'automations', 'rate-limit'];
await promisify(execFile)(process.execPath, ['scripts/build.mjs', '--outdir', BUNDLES, ...SCRIPTS.map((script) => `bench/${script}.ts`)]);
const bundleOf = (script: string) => path.join(BUNDLES, `${script}.js`);

/**
 * Each benchmark runs in a process of its own, so its peak RSS is its own service's and not what
 * an earlier benchmark left in the heap. The script prints its result as JSON.
 */
const inOwnProcess = <T>(script: string, args: string[]) => runNodeForJson<T>([bundleOf(script), ...args]);

/**
 * The webhook benchmark fails when a call is lost, printing what it measured: that goes into
 * BENCHMARKS.md as a failure, and the run fails once the file is written. On PGlite one statement
 * of the sender can hold the process, event loop and all, beyond any deadline of its own: hence a
 * time limit, enforced with SIGKILL. Its sink and receiver end with their stdin.
 */
async function webhooksBench(database: string, url: string): Promise<WebhooksOutcome> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [bundleOf('webhooks'), url], {
      maxBuffer: 16 * 1024 * 1024, timeout: 30 * 60_000, killSignal: 'SIGKILL',
    });
    return JSON.parse(stdout) as WebhooksBenchResult;
  } catch (error) {
    const { stdout, killed } = error as { stdout?: string; killed?: boolean };
    if (stdout?.trim()) return JSON.parse(stdout) as WebhooksBenchResult;
    if (killed) return { database, failure: 'did not finish within 30 minutes' };
    throw error;
  }
}

const cpu = os.cpus();
const machine = () =>
  `${cpu.length} × ${cpu[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, ${os.type()} ${os.release()}, Node ${process.version}`;
const today = () => new Date().toISOString().slice(0, 10);
const STARTUP_RUNS = 5;

function startupSection(r: StartupBenchResult): string[] {
  const row = (kind: string, series: StartupBenchResult['fresh']) =>
    Object.entries(series).map(
      ([command, s]) => `| ${kind} | \`${command}\` | ${s.healthMedianMs.toLocaleString('en')} | ${s.readyMedianMs.toLocaleString('en')} | ${s.runs.map((run) => run.healthMs).join(', ')} |`,
    );
  return [
    '## Startup',
    '',
    `Measured ${today()} on ${machine()}; load average ${r.loadAverage} when it ended.`,
    '',
    'From spawning the command to the first 200 from `/health`, and to the log line naming every port (`ready: …`, once the',
    'SMTP listeners and workers run too), on the embedded database with nothing configured, each start stopped with SIGTERM',
    `before the next, ${r.runs} starts each; dist/ is built first, as \`npm ci\` builds it. Fresh: an empty \`DATA_DIR\` each`,
    'time (the first start of a clone, which copies the empty database that the build made). Warm: the data directory of the',
    'first fresh start, started again. `npm start` includes npm itself and the check that dist/ is up to date. The bars:',
    '`/health` within 3 s warm and 10 s fresh.',
    '',
    '| Data directory | Command | /health, median (ms) | ready, median (ms) | /health, each start (ms) |',
    '|---|---|---|---|---|',
    ...row('fresh', r.fresh),
    ...row('warm', r.warm),
    '',
  ];
}

const peaks = (byDestination: Record<string, number>) => Object.values(byDestination).join(', ');

function directSection(results: DirectBenchResult[]): string[] {
  const { contacts = 20_000, domains = 50, destinations = 5, rounds = 2 } = results[0] ?? {};
  return [
    '## Direct delivery',
    '',
    `Measured ${today()} on ${machine()}.`,
    '',
    `A campaign to a book of ${contacts.toLocaleString('en')} contacts spread evenly over ${domains} recipient domains (\`d0.test\` …), personalised and`,
    'DKIM-signed as in the campaign benchmark, delivered with `SMTP_URL=direct`: a loopback DNS server (`DNS_SERVERS`) gives each',
    `domain one MX, \`mx.pK-mail.test\`, a host of one of ${destinations} registrable domains, so ${destinations} destinations of ${domains / destinations} domains each; their A`,
    'records are smtp-server receivers on 127.0.0.2, 127.0.0.3, … sharing one port (`DIRECT_MX_PORT`). DNS server and receivers',
    'run in a process of their own (`bench/direct/receivers.ts`). Relay: the same campaign through `SMTP_URL` to the one sink of',
    'the other benchmarks (a pool of `SMTP_POOL_SIZE`, 5 connections). Neither the receivers nor the sink offer STARTTLS (direct',
    'delivery uses it where offered), so both sides carry the same bytes in the clear. Otherwise the defaults:',
    '`DIRECT_MAX_CONNECTIONS` 10 per destination, `DIRECT_MESSAGES_PER_CONNECTION` 100. Each run is a process of its own on a',
    `fresh database, in ${rounds} rounds, relay then direct, then direct then relay; rates are the means of the runs (each run's in`,
    'the Runs column). Delivery: from the dispatcher\'s start until the receivers have every message and every outcome is',
    'written; each receiver must have the mail of its own domains and no other. Ratio: direct over relay (the goal is ≥ 0.8).',
    "Server CPU: of Mailroom's process during the delivery, per message (on PostgreSQL without the database's). Peak RSS: of",
    "that process over release and delivery, the highest of the runs. In use: the most sessions each destination's receiver",
    'had at once in any run, from the EHLO to the QUIT; cap held: every one ≤ `DIRECT_MAX_CONNECTIONS`. Connections: the same',
    'at the TCP level, from accept to close: a connection the sender has quit (and closed on its side before opening the',
    'next) counts there until the receiver sees its socket gone, which may come after it accepts the next. Sends: messages handed to the transport per',
    'message delivered; above 1, the destination postponed some untried (its queue was full) and they went back to the',
    'queue in the database, to be claimed, composed and signed again.',
    '',
    '| Database | Messages | Direct (msg/s) | Relay (msg/s) | Ratio | Server CPU, direct / relay (ms/msg) | Peak RSS, direct / relay (MB) | In use per destination (cap) | Connections | Cap held | Sends per message, direct | Runs, direct; relay (msg/s) | Load average |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.database} | ${r.contacts.toLocaleString('en')} | ${r.direct.messagesPerSecond.toLocaleString('en')} | ${r.relay.messagesPerSecond.toLocaleString('en')} | ${r.ratio} | ` +
        `${r.direct.serverCpuMsPerMessage} / ${r.relay.serverCpuMsPerMessage} | ${r.direct.peakRssMb} / ${r.relay.peakRssMb} | ` +
        `${peaks(r.direct.peakInUse)} (${r.cap}) | ${peaks(r.direct.peakConnections)} | ${r.capHeld ? 'yes' : 'no'} | ${r.direct.sendsPerMessage} | ` +
        `${r.direct.runs.map((n) => n.toLocaleString('en')).join(', ')}; ${r.relay.runs.map((n) => n.toLocaleString('en')).join(', ')} | ${r.loadAverage} |`,
    ),
    ...results.flatMap((r) =>
      r.capHeld ? [] : ['', `**Cap not held on ${r.database}:** up to ${Math.max(...Object.values(r.direct.peakInUse))} sessions at once to one destination (cap ${r.cap}).`],
    ),
    '',
  ];
}

const en = (n: number) => n.toLocaleString('en');

/** A delivery's CPU per message (cpu-split.ts) in the parts BENCHMARKS.md names. */
function cpuParts(cpu: CpuPerMessage) {
  const sum = (test: (part: string) => boolean) => Number(cpu.filter((c) => test(c.part)).reduce((total, c) => total + c.msPerMessage, 0).toFixed(3));
  const main = sum((part) => part === 'this process: main thread');
  const threads = sum((part) => part.startsWith('this process: ') && part !== 'this process: main thread');
  const postgres = sum((part) => part === 'postgres backends');
  const sink = sum((part) => part === 'process bench/emails/sink.ts');
  const total = sum(() => true);
  return { main, threads, postgres, sink, rest: Number((total - main - threads - postgres - sink).toFixed(3)), total };
}

function inboundSection(results: InboundBenchResult[]): string[] {
  const { throughput: t, big: b } = results[0] ?? { throughput: undefined, big: undefined };
  const goalMisses = results.flatMap((r) => [
    ...(r.database === 'postgres' && r.throughput.acceptedPerSecond < 500 ? [`**Below the goal on postgres:** ${en(r.throughput.acceptedPerSecond)} messages/s accepted (the goal is ≥ 500).`] : []),
    ...(r.big.growthRatio >= 2 ? [`**Over the goal on ${r.database}:** RSS grew ${r.big.growthRatio} × the message size while receiving it (the goal is < 2).`] : []),
  ]);
  return [
    '## Inbound',
    '',
    `Measured ${today()} on ${machine()}.`,
    '',
    'Mail received by the inbound SMTP listener (`bench/inbound.ts`). The server is a process of its own with `ROLE=all` (the',
    'listener, the webhook sender and the other workers) on a fresh database, otherwise as in the other benchmarks, with',
    '`DNS_SERVERS` at a loopback DNS server in a process of its own that publishes the sending domain\'s SPF record, DKIM key and',
    `DMARC policy (so every message is authenticated the whole way; the listener reuses each answer for 30 s, so the timed messages asked ${t?.dnsQueriesPerMessage ?? 0} lookups each) and the default \`INBOUND_MAX_BYTES\``,
    `(${en(b?.maxBytes ?? 26_214_400)}). A team whose domain is marked verified has a route \`*@in.bench.example.com\` with action \`webhook\`, and one webhook`,
    'taking `email.received`, posting to a loopback node:http receiver in a process of its own that answers 200 at once.',
    '',
    `Throughput: a load generator in a process of its own (nodemailer, a pool of ${t?.connections ?? 4} connections with TCP_NODELAY, STARTTLS as the`,
    'listener offers it, a new connection every 250 messages, since the listener ends a session after 1,000 commands) sends',
    `${t?.warmup ?? 200} messages not counted, then the messages counted: ${en(t?.messageBytes ?? 20_480)} bytes each (text and HTML, one attachment of`,
    `${en(t?.attachmentBytes ?? 13_680)} bytes in base64), each to an address of its own, DKIM-signed and built before the clock starts, all handed to the pool`,
    'at once. Accepted: messages over the time from handing them over to the last 250; latency: nodemailer\'s, from MAIL FROM to',
    'the reply to the final dot. Every message must come out as exactly one stored email (by its Message-ID), passing SPF, DKIM',
    'and DMARC, with exactly one `email.received` call that the receiver got and the database records DELIVERED (calls',
    "delivered counts the warm-up's too). Server CPU: of the server's process per message, during the batch / until its last",
    "call was delivered (on PostgreSQL without the database's; PGlite runs inside it). Machine: the cores the whole machine kept",
    'busy during the batch (server, database, load generator, DNS server and receiver share them). Last call: from the start',
    "of the batch until the receiver had its last call; slowest call: the longest from a call's writing to its delivery. Peak",
    "RSS: the server's VmHWM from the start of the batch until the last call. The goal: ≥ 500 messages/s on PostgreSQL.",
    '',
    '| Database | Messages | Accepted (msg/s) | p50 (ms) | p99 (ms) | Server CPU, batch / with calls (ms/msg) | Machine busy (cores) | Webhook calls delivered | Last call (s) | Slowest call (s) | Peak RSS (MB) | Load average |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(({ database, throughput: r, loadAverage }) =>
      `| ${database} | ${en(r.messages)} | ${en(r.acceptedPerSecond)} | ${r.p50Ms} | ${r.p99Ms} | ${r.serverCpuMsPerMessage} / ${r.serverCpuMsPerMessageWithCalls} | ` +
      `${r.machineBusyCores} of ${r.cores} | ${en(r.calls.total)} of ${en(r.messages + r.warmup)} | ${r.calls.secondsToLastCall} | ${r.calls.slowestSeconds} | ${r.peakRssMb} | ${loadAverage} |`),
    '',
    `25 MiB: on a fresh server, after ${b?.warmup ?? 20} small messages, one message of exactly ${en(b?.messageBytes ?? 26_214_400)} bytes as the listener counts it (text and`,
    `HTML, one attachment of ${en(b?.attachmentBytes ?? 19_155_363)} bytes in base64, DKIM-signed), which fits the default limit. RSS before: the server's VmRSS`,
    "after a full collection and a second's pause; peak: its VmHWM (reset through /proc/self/clear_refs just before) from the",
    "MAIL until the message's webhook call was delivered, never below the load generator's samples of its VmRSS every 10 ms.",
    'Growth / size: the peak over the RSS before, over the message size (the goal is < 2).',
    '',
    '| Database | Message (bytes) | To the 250 (s) | RSS before (MB) | Peak RSS (MB) | Growth (MB) | Growth / size |',
    '|---|---|---|---|---|---|---|',
    ...results.map(({ database, big: r }) =>
      `| ${database} | ${en(r.messageBytes)} | ${r.secondsTo250} | ${r.rssBeforeMb} | ${r.peakRssMb} | ${r.growthMb} | ${r.growthRatio} |`),
    ...goalMisses.flatMap((line) => ['', line]),
    '',
  ];
}

function segmentsSection(results: SegmentsBenchResult[]): string[] {
  const postgres = results.find((r) => r.database === 'postgres');
  const countAt1M = postgres?.books.find((b) => b.contacts === 1_000_000);
  const goalMisses = [
    ...(countAt1M && countAt1M.countMs >= 1_000 ? [`**Over the goal on postgres:** counting the segment of 1M took ${en(countAt1M.countMs)} ms (the goal is < 1 s).`] : []),
    ...results.flatMap((r) => (r.release.ratio < 0.8
      ? [`**Below the goal on ${r.database}:** the segment released ${en(r.release.segment.emailsPerSecond)} emails/s, ${r.release.ratio} × the whole book's ${en(r.release.wholeBook.emailsPerSecond)} (the goal is ≥ 0.8).`]
      : [])),
  ];
  const books = (r: SegmentsBenchResult) => r.books.map((b) => en(b.contacts)).join(' and ');
  return [
    '## Segments',
    '',
    `Measured ${today()} on ${machine()}.`,
    '',
    'A segment of three conditions, `{ "all": [{ "field": "properties.plan", "op": "eq", "value": "pro" }, { "field": "createdAt",',
    '"op": "gte", "value": "365 days ago" }, { "event": "opened", "within": "30 days" }] }`, on books written straight into a fresh',
    'database by set-based SQL (`bench/segments.ts`): contacts created over the last two years, two in five on plan "pro", each',
    'with one email of an earlier campaign, sent over the last 41 days, delivered, and two in three opened (the time of the',
    "open kept on the contact's row, as recording it does); the segment matches 9.8 % of the book. On PostgreSQL the tables",
    'are then vacuumed and analysed, as autovacuum would; on PGlite, which has none, only contacts has statistics (gathered',
    'as a bulk import gathers them), emails and email_events none, as in a running service. Books:',
    `${results.map((r) => `${books(r)} contacts on ${r.database}`).join(', ')}, in one database (the larger measured with the`,
    'smaller beside it). Count: what the segment endpoints count with; pages of 100 in creation order, the first and the one',
    '90 % of the way through the matches (the API answers each page with the count beside it, in parallel); each the median of',
    '3 runs after one not counted. Written in: the seconds to write the book, its mail and events, and to gather the statistics.',
    '',
    '| Database | Contacts | Matching | Count (ms) | First page (ms) | Deep page, offset | Deep page (ms) | Written in (s) |',
    '|---|---|---|---|---|---|---|---|',
    ...results.flatMap((r) => r.books.map((b) =>
      `| ${r.database} | ${en(b.contacts)} | ${en(b.matching)} | ${en(b.countMs)} | ${en(b.firstPageMs)} | ${en(b.deepPage.offset)} | ${en(b.deepPage.ms)} | ${b.seedSeconds} |`)),
    '',
    `Release: a campaign to the segment of the largest book, released by the releaser in batches of ${en(results[0]?.release.batchSize ?? 5_000)} recipients as in`,
    "the campaign benchmark (no dispatcher), then one to the whole book; the segment's release reads about ten contacts for",
    'each email it releases. On PostgreSQL each starts just after a checkpoint, so that neither pays alone for logging whole',
    'pages changed first since the book was written. Ratio: emails released per second, segment over whole book (the goal is',
    '≥ 0.8). The goal for the count: < 1 s at 1M on PostgreSQL.',
    '',
    '| Database | Contacts | Segment: emails | Segment (s) | Segment (emails/s) | Segment (contacts read/s) | Whole book (s) | Whole book (emails/s) | Ratio | Load average |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(({ database, release: r, loadAverage }) =>
      `| ${database} | ${en(r.contacts)} | ${en(r.segment.released)} | ${r.segment.seconds} | ${en(r.segment.emailsPerSecond)} | ${en(r.segment.contactsReadPerSecond)} | ` +
      `${r.wholeBook.seconds} | ${en(r.wholeBook.emailsPerSecond)} | ${r.ratio} | ${loadAverage} |`),
    ...goalMisses.flatMap((line) => ['', line]),
    '',
  ];
}

function hostileSection(results: HostileBenchResult[]): string[] {
  const { heapGoalMultiple = 4, loopGoalMs = 100 } = results[0] ?? {};
  const goalMisses = results.flatMap((r) => r.attacks.flatMap((a) => [
    ...(a.loopMaxMs > loopGoalMs ? [`**Over the goal on ${r.database}:** ${a.label} held the event loop for ${en(a.loopMaxMs)} ms at once (the goal is ~${loopGoalMs} ms).`] : []),
    ...(a.heapRatio > heapGoalMultiple ? [`**Over the goal on ${r.database}:** ${a.label} grew the heap ${a.heapRatio} × the bytes in flight (the goal is ≤ ${heapGoalMultiple}).`] : []),
    ...(a.rssRatio > heapGoalMultiple ? [`**Over the goal on ${r.database}:** ${a.label} grew RSS ${a.rssRatio} × the bytes in flight (the goal is ≤ ${heapGoalMultiple}).`] : []),
  ]));
  return [
    '## Hostile requests',
    '',
    `Measured ${today()} on ${machine()}.`,
    '',
    'What one big request costs the server while it is refused, or taken at the limit (`bench/hostile-requests.ts`). The goal:',
    `no single authenticated request holds the event loop for more than ~${loopGoalMs} ms or grows the heap by more than a`,
    `small multiple of its body, here at most ${heapGoalMultiple} × the bytes of the requests in flight. The server (ROLE=api, SMTP submission on, a`,
    'fresh database) runs in the measuring process; the requests come from a process of its own, each attack in turn, after',
    'each once at a twentieth of the size not counted: SMTP submission of 4 messages at once whose HTML part is 9.4 MB of 7bit',
    'lines (STARTTLS, AUTH with the API key; the API takes html of at most 5,000,000 characters, so 552); the same HTML in 4',
    '`POST /v1/emails` at once; one `POST /v1/emails` with html just under the limit, taken; 8 `POST /v1/contactBooks/{id}/contacts/bulk`',
    'at once of 7.5 MB of `[{},{},…]` each (2,500,000 items); one `POST /login` of a 7.9 MB form of 800,000 fields, no session.',
    'Loop held: `monitorEventLoopDelay` at 1 ms resolution (less the resolution), from the request for the attack until 300 ms',
    'after its last answer, its maximum and 99th percentile (with requests at once, whatever of their work falls in one turn of',
    'the loop counts together, as it holds everything else). Heap: V8\'s heap in use on the main thread plus Buffers\' external',
    'memory, sampled every 5 ms, its peak over the level after a full collection just before (a worker thread\'s heap, such as',
    "the one that parses submitted MIME, shows in RSS only); RSS: VmHWM, reset just before, over VmRSS then; both also over the",
    "bytes in flight (requests × body). Server CPU: the process's, every thread's. /health: the slowest of the load generator's",
    'requests every 25 ms meanwhile. Server and load generator share the cores; the load average says what else ran.',
    '',
    '| Database | Attack | Requests × body (bytes) | Answers | Loop held, max (ms) | p99 (ms) | Slowest /health (ms) | Heap growth (MB) | × in flight | RSS growth (MB) | × in flight | Server CPU (ms) | Last answer (s) | Load average |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...results.flatMap(({ database, attacks, loadAverage }) => attacks.map((a) =>
      `| ${database} | ${a.label} | ${a.requests} × ${en(a.bodyBytes)} | ${a.answers} | ${en(a.loopMaxMs)} | ${a.loopP99Ms} | ${en(a.slowestHealthMs)} | ` +
      `${a.heapGrowthMb} | ${a.heapRatio} | ${a.rssGrowthMb} | ${a.rssRatio} | ${en(a.serverCpuMs)} | ${a.seconds} | ${loadAverage} |`)),
    ...goalMisses.flatMap((line) => ['', line]),
    '',
  ];
}

const STEPS_GOAL = 5_000;
const SENDING_GOAL = 0.8;
const RSS_GOAL_MB = 300;

function automationsSection(results: AutomationsBenchResult[]): string[] {
  const e = results[0]?.entering;
  const rss = ({ startRssMb, peakRssMb }: { startRssMb: number; peakRssMb: number }) => `${startRssMb} / ${peakRssMb}`;
  const goalMisses = results.flatMap(({ database, entering, steps, sending }) => [
    ...(database === 'postgres' && steps.stepsPerSecond < STEPS_GOAL ? [`**Below the goal on postgres:** ${en(steps.stepsPerSecond)} steps/s (the goal is ≥ ${en(STEPS_GOAL)}).`] : []),
    ...(sending.ratio < SENDING_GOAL ? [`**Below the goal on ${database}:** the send step delivered ${sending.ratio} × the campaign's rate (the goal is ≥ ${SENDING_GOAL}).`] : []),
    ...([
      ['while the contacts entered', entering, `; the same import with no automation: ${entering.withoutAutomation.peakRssMb} MB`],
      ['while the runner walked the steps', steps, ''],
      ["while the send step's mail was made and delivered", sending.automation, `; the campaign's: ${sending.campaign.peakRssMb} MB`],
    ] as const).flatMap(([phase, r, beside]) =>
      r.peakRssMb > RSS_GOAL_MB
        ? [`**Over the goal on ${database}:** peak RSS ${r.peakRssMb} MB ${phase}, from ${r.startRssMb} MB at its start${beside} (the goal is ≤ ${RSS_GOAL_MB} MB).`]
        : []),
  ]);
  return [
    '## Automations',
    '',
    `Measured ${today()} on ${machine()}.`,
    '',
    '`bench/automations.ts`, one process on a fresh database: the server (`ROLE=api`), and the runner, releaser and dispatcher',
    'it starts itself, each phase after the one before. Entering: a book with an ACTIVE `contact.added` automation, and',
    `${en(e?.contacts ?? 100_000)} new contacts imported into it through \`POST /v1/contactBooks/{id}/contacts/bulk\` in ${e?.requests ?? 10} requests of 10,000, one after`,
    'another; the service writes each request in chunks of 2,500 and starts their runs in the same transaction, so every run',
    'exists when the last request is answered. No automation: the same import just before, into a book none watches. INSERTs:',
    'the statements into `automation_runs` the import sent (one per chunk, each starting its 2,500 runs). Steps: those runs, all',
    'due at once at a condition on a property (`plan` is "pro", half of them), then an `update_contact`, then the end, walked',
    'by an automation runner of its own, its pass claiming batches of `AUTOMATION_BATCH_SIZE` until one is not full; steps',
    "are runs × 2, and every run must end COMPLETED with its contact updated. CPU: this process's per 1,000 steps (on",
    "PostgreSQL without the database's). Sending: a book of the size in the table whose automation's first step sends a",
    "template like the campaign benchmark's message (personalised, a link, the unsubscribe link), then a campaign to the same",
    "book, delivered over SMTP to the same loopback sink: each timed from when its mail is due (the service's runner, or its",
    'releaser, starts together with a dispatcher, each polling as in the service) until the sink has every message and every',
    "outcome is written; the campaign first, so the automation's mail meets the larger emails table. Ratio: the send step's",
    "rate over the campaign's. RSS: of the process (on PGlite it holds the database too) when the phase started, after a full",
    "collection, and its peak during the phase; the import's load generator runs in the same process. On PostgreSQL each",
    `phase starts just after a checkpoint. The goals: ≥ ${en(STEPS_GOAL)} steps/s on PostgreSQL, sending at ≥ ${SENDING_GOAL} × the campaign's rate, peak RSS ≤ ${RSS_GOAL_MB} MB.`,
    '',
    '| Database | Contacts | No automation (s) | RSS, start / peak (MB) | With the automation (s) | Contacts/s | Runs started | INSERTs into runs | RSS, start / peak (MB) |',
    '|---|---|---|---|---|---|---|---|---|',
    ...results.map(({ database, entering: r }) =>
      `| ${database} | ${en(r.contacts)} | ${r.withoutAutomation.seconds} | ${rss(r.withoutAutomation)} | ${r.seconds} | ${en(r.contactsPerSecond)} | ${en(r.runsStarted)} | ${r.runStatements} | ${rss(r)} |`),
    '',
    '| Database | Runs | Steps | Batch size | Seconds | Steps/s | CPU (ms per 1,000 steps) | RSS, start / peak (MB) | Load average |',
    '|---|---|---|---|---|---|---|---|---|',
    ...results.map(({ database, steps: r, loadAverage }) =>
      `| ${database} | ${en(r.runs)} | ${en(r.steps)} | ${en(r.batchSize)} | ${r.seconds} | ${en(r.stepsPerSecond)} | ${r.cpuMsPer1000Steps} | ${rss(r)} | ${loadAverage} |`),
    '',
    '| Database | Emails | Send step (msg/s) | Send step (s) | RSS, start / peak (MB) | Campaign (msg/s) | Campaign (s) | RSS, start / peak (MB) | Ratio |',
    '|---|---|---|---|---|---|---|---|---|',
    ...results.map(({ database, sending: r }) =>
      `| ${database} | ${en(r.emails)} | ${en(r.automation.messagesPerSecond)} | ${r.automation.seconds} | ${rss(r.automation)} | ` +
      `${en(r.campaign.messagesPerSecond)} | ${r.campaign.seconds} | ${rss(r.campaign)} | ${r.ratio} |`),
    ...goalMisses.flatMap((line) => ['', line]),
    '',
  ];
}

async function measuredDatabases(): Promise<Array<'postgres' | 'pglite'>> {
  if (await postgresReachable()) return ['postgres', 'pglite'];
  console.error(`PostgreSQL not reachable at ${benchPostgresUrl}: measuring PGlite only`);
  return ['pglite'];
}

const urlOf = (database: 'postgres' | 'pglite') => (database === 'postgres' ? benchPostgresUrl : '');

/**
 * A benchmark on each database, each run in a process of its own: direct delivery beside the relay
 * (bench/direct.ts, which runs each delivery in a process of its own), inbound mail (bench/inbound.ts,
 * likewise for its two runs), segments (bench/segments.ts).
 */
async function onEachDatabase<T>(what: string, script: string, databases: Array<'postgres' | 'pglite'>): Promise<T[]> {
  const results: T[] = [];
  for (const database of databases) {
    console.error(`${what} on ${database}…`);
    results.push(await inOwnProcess<T>(script, [urlOf(database)]));
  }
  return results;
}
const directBench = (databases: Array<'postgres' | 'pglite'>) => onEachDatabase<DirectBenchResult>('direct delivery', 'direct', databases);
const inboundBench = (databases: Array<'postgres' | 'pglite'>) => onEachDatabase<InboundBenchResult>('inbound', 'inbound', databases);
const segmentsBench = (databases: Array<'postgres' | 'pglite'>) => onEachDatabase<SegmentsBenchResult>('segments', 'segments', databases);
const hostileBench = (databases: Array<'postgres' | 'pglite'>) => onEachDatabase<HostileBenchResult>('hostile requests', 'hostile-requests', databases);
const automationsBench = (databases: Array<'postgres' | 'pglite'>) => onEachDatabase<AutomationsBenchResult>('automations', 'automations', databases);

type WebhooksOutcome = WebhooksBenchResult | { database: string; failure: string };

function webhooksSection(webhooks: WebhooksOutcome[]): string[] {
  return [
    '## Webhooks',
    '',
    'A campaign to a book of 20,000 contacts delivered as above, twice, each time on a fresh database: with no webhook, then',
    'with one webhook subscribed to every email event, whose sender runs in the same process as the dispatcher and posts to a',
    'loopback node:http receiver in its own process that answers 200 at once and checks no signature. Ratio: delivery rate with',
    'the webhook on over the rate with it off (the goal is ≥ 0.9). Calls: three per email (queued, sent, delivered), each counted',
    'by its `webhook-id`; a call that does not arrive within five minutes of the last email fails the benchmark. Behind at last',
    'email: calls the receiver lacked when the last email\'s outcome was written (the goal is ≤ 10 %); after last email: from',
    'then until the receiver had every call (the goal is ≤ 30 s); last call: from the start of the second run\'s release. Receiver',
    'CPU: what each call cost the receiver, on the same cores as everything else. Peak RSS is of the second run\'s campaign.',
    '',
    '| Database | Contacts | Delivered, off (msg/s) | Delivered, on (msg/s) | Ratio | Calls | Received | Duplicates | Behind at last email | After last email (s) | Last call (s) | Calls/s | Receiver CPU (ms/call) | Peak RSS (MB) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...webhooks.map((r) =>
      !('calls' in r)
        ? `| ${r.database} | – | – | – | – | – | – | – | – | – | – | – | – | – |`
        : `| ${r.database} | ${en(r.contacts)} | ${en(r.off.messagesPerSecond)} | ${en(r.on.messagesPerSecond)} | ${r.ratio} | ${en(r.calls.total)} | ` +
          `${en(r.calls.received)} | ${en(r.calls.duplicates)} | ${en(r.calls.behindAtDeliveryEnd)} (${Math.round((100 * r.calls.behindAtDeliveryEnd) / r.calls.total)} %) | ` +
          `${r.failure ? '–' : r.calls.secondsAfterLastEmail} | ${r.failure ? '–' : r.calls.secondsToLastCall} | ${r.failure ? '–' : en(r.calls.callsPerSecond)} | ${r.calls.receiverCpuMsPerCall} | ${r.peakRssMb} |`,
    ),
    ...webhooks.flatMap((r) => {
      const bound = 'calls' in r ? r.calls.bound : null;
      if (!bound) return [];
      const verdict = bound.coreSecondsNeeded > bound.coreSecondsSpare ? 'more than there is: the two goals cannot both hold on this machine' : 'room for both';
      const { floor } = bound;
      const floorVerdict =
        floor.coreSecondsNeeded > bound.coreSecondsSpare
          ? 'more than is spare, so no sender on this machine could meet both, whatever its database work'
          : `within what is spare: a sender would have ${(bound.coreSecondsSpare - floor.coreSecondsNeeded).toFixed(1)} core-seconds for its database work`;
      return [
        '',
        `Both goals at once on ${r.database}: a call cost ${bound.callCpuMs} ms of CPU (sender, its database writes and the receiver, measured while the calls ` +
          `held back were caught up); making 90 % of them during the delivery needs ${bound.coreSecondsNeeded} core-seconds, and a delivery at 0.9 × the ` +
          `rate without them leaves ${bound.coreSecondsSpare} core-seconds of the ${bound.cores} cores spare: ${verdict}. ` +
          `The floor: ${floor.calls.toLocaleString('en')} calls posted as the sender posts them, signed, with no database work at all, cost ` +
          `${floor.callCpuMs} ms each (posting ${floor.senderCpuMs}, receiving ${floor.receiverCpuMs}); at that, 90 % of the calls during the delivery ` +
          `need ${floor.coreSecondsNeeded} core-seconds: ${floorVerdict}.`,
      ];
    }),
    ...webhooks.flatMap((r) => (r.failure ? ['', `**Failed on ${r.database}:** ${r.failure}.`] : [])),
    ...webhooks.flatMap((r) => {
      if (!('calls' in r) || r.failure) return [];
      const misses = [
        ...(r.ratio < 0.9 ? [`delivery with the webhook on at ${r.ratio} × without (the goal is ≥ 0.9)`] : []),
        ...(r.calls.behindAtDeliveryEnd > r.calls.total * 0.1 ? [`${Math.round((100 * r.calls.behindAtDeliveryEnd) / r.calls.total)} % of the calls behind at the last email (the goal is ≤ 10 %)`] : []),
        ...(r.calls.secondsAfterLastEmail > 30 ? [`the last call ${r.calls.secondsAfterLastEmail} s after the last email (the goal is ≤ 30 s)`] : []),
      ];
      return misses.length > 0 ? ['', `**Below the goal on ${r.database}:** ${misses.join('; ')}.`] : [];
    }),
  ];
}

/** The sections that `--only <name>` measures alone: it replaces that section of BENCHMARKS.md, or adds it at the end. */
const measuredAlone: Record<string, () => Promise<string[]>> = {
  startup: async () => {
    console.error('startup…');
    return startupSection(await startupBench(STARTUP_RUNS));
  },
  direct: async () => directSection(await directBench(await measuredDatabases())),
  inbound: async () => inboundSection(await inboundBench(await measuredDatabases())),
  segments: async () => segmentsSection(await segmentsBench(await measuredDatabases())),
  hostile: async () => hostileSection(await hostileBench(await measuredDatabases())),
  automations: async () => automationsSection(await automationsBench(await measuredDatabases())),
  webhooks: async () => {
    const results: WebhooksOutcome[] = [];
    for (const database of await measuredDatabases()) {
      console.error(`webhooks on ${database}…`);
      results.push(await webhooksBench(database, urlOf(database)));
    }
    return webhooksSection(results);
  },
};

/** The document with `section` (whose first line is its heading) in place of its namesake, or added at the end. */
function withSection(document: string, section: string[]): string {
  const text = section.join('\n').trimEnd();
  const start = document.indexOf(`\n${section[0]}\n`);
  if (start === -1) return `${document.trimEnd()}\n\n${text}\n`;
  const end = document.indexOf('\n## ', start + 1);
  return `${document.slice(0, start + 1)}${text}\n${end === -1 ? '' : document.slice(end)}`;
}

if (process.argv.includes('--only')) {
  const only = process.argv[process.argv.indexOf('--only') + 1] ?? '';
  const measure = measuredAlone[only];
  if (!measure) throw new Error(`--only takes ${Object.keys(measuredAlone).map((name) => `"${name}"`).join(' or ')}, not "${only}"`);
  const section = await measure();
  await writeFile('BENCHMARKS.md', withSection(await readFile('BENCHMARKS.md', 'utf8'), section));
  console.log(section.join('\n'));
  process.exit(0);
}

const databases = await measuredDatabases();

const accept: AcceptBenchResult[] = [];
const contacts: ContactsBenchResult[] = [];
const emails: EmailsBenchResult[] = [];
const campaigns: CampaignsBenchResult[] = [];
const webhooks: WebhooksOutcome[] = [];
const submission: SubmissionBenchResult[] = [];
for (const database of databases) {
  const url = urlOf(database);
  console.error(`accept path on ${database}…`);
  accept.push(await inOwnProcess('accept', [url]));
  console.error(`contacts on ${database}…`);
  contacts.push(await inOwnProcess('contacts', [database]));
  console.error(`emails on ${database}…`);
  emails.push(await inOwnProcess('emails', [url]));
  console.error(`campaigns on ${database}…`);
  campaigns.push(await inOwnProcess('campaigns', [url]));
  console.error(`webhooks on ${database}…`);
  webhooks.push(await webhooksBench(database, url));
  console.error(`SMTP submission on ${database}…`);
  submission.push(await inOwnProcess('submission', [url]));
}
const direct = await directBench(databases);
const inbound = await inboundBench(databases);
const segments = await segmentsBench(databases);
const hostile = await hostileBench(databases);
const automations = await automationsBench(databases);
console.error('startup…');
const startup = await startupBench(STARTUP_RUNS);
// Only PostgreSQL shares the limit between processes; PGlite counts it in memory as before.
let rateLimit: RateLimitBenchResult | null = null;
if (databases.includes('postgres')) {
  console.error('rate limit on postgres…');
  rateLimit = await inOwnProcess('rate-limit', [benchPostgresUrl]);
}

const [load1] = os.loadavg();
const lines = [
  '# Benchmarks',
  '',
  `Measured ${today()} by \`npm run bench\` on ${machine()}. ` +
    `Load generator, server and SMTP sink share the same cores; load average ${load1?.toFixed(1)} when the run ended.`,
  'Each benchmark runs in plain node from a bundle of its script made as dist/ is (`scripts/build.mjs`), as `npm start`',
  `runs the service: its memory and CPU hold no TypeScript loader. \`MALLOC_ARENA_MAX\`: ${process.env.MALLOC_ARENA_MAX ?? "unset (glibc's default)"} (\`npm start\` and`,
  '`npm run bench` set 2 unless it is set).',
  '',
  `Settings that are not the defaults, in every benchmark's server: ${Object.entries(BENCH_SETTINGS).map(([name, value]) => `\`${name}=${value}\``).join(', ')}`,
  '(a `ROLE=api` server, whose workers each benchmark starts itself, so that each phase is measured alone).',
  '',
  '## Accept path',
  '',
  '`POST /v1/emails` of mail scheduled a month ahead, so that only accepting runs, against a naive peer on the same',
  'database (`bench/accept/naive-peer.ts`: node:http, a pg pool of 10, one `INSERT … RETURNING` per request, no key check,',
  "no validation, no transaction). Same body, same load: autocannon's CLI in a process of its own, 32 connections, after",
  'a warm-up of each, in rounds with the order turning. Only 2xx answers count; any other fails the run. Ratio: Mailroom',
  "over the peer, accepted/s (the bar is ≥ 1.0) and p99 (the bar is ≤ 1.5). Server CPU: Mailroom's process per request.",
  '',
  '| Database | Requests | Mailroom (req/s) | p50 (ms) | p99 (ms) | Peer (req/s) | p50 (ms) | p99 (ms) | Ratio | p99 ratio | Server CPU (ms/req) | Load average |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...accept.map(
    (r) =>
      `| ${r.database} | ${r.requests.toLocaleString('en')} | ${r.mailroom.acceptedPerSecond.toLocaleString('en')} | ${r.mailroom.p50Ms} | ${r.mailroom.p99Ms} | ` +
      (r.peer ? `${r.peer.acceptedPerSecond.toLocaleString('en')} | ${r.peer.p50Ms} | ${r.peer.p99Ms} | ${r.ratio} | ${r.p99Ratio}` : '– | – | – | – | –') +
      ` | ${r.mailroom.serverCpuMsPerRequest} | ${r.loadAverage} |`,
  ),
  '',
  '## Contacts',
  '',
  'Bulk upsert: 100,000 new contacts sent as 10 `POST /v1/contactBooks/{id}/contacts/bulk` requests of 10,000, one',
  'after another, and again (into another book) with two requests in flight. Book of 1M: the same 100,000 sent to a book',
  'already holding 1,000,000 contacts (on PostgreSQL vacuumed and analysed after its import, as autovacuum would), new ones,',
  'then changes to 100,000 of those it holds (the bar: as fast as into an empty book). Read: `GET /v1/contactBooks/{id}/contacts/{email}` of random contacts under autocannon for 10 s with 20',
  'connections. The server runs as its own process.',
  '',
  '| Database | Bulk upsert (contacts/s) | 100k in (s) | Two in flight (contacts/s) | Book of 1M, new (contacts/s) | Book of 1M, changed (contacts/s) | GET one (req/s) | p50 (ms) | p99 (ms) | Errors |',
  '|---|---|---|---|---|---|---|---|---|---|',
  ...contacts.map(
    (r) =>
      `| ${r.database} | ${r.bulkUpsert.contactsPerSecond.toLocaleString('en')} | ${r.bulkUpsert.seconds} | ` +
      `${r.bulkUpsertTwoAtATime.contactsPerSecond.toLocaleString('en')} | ` +
      `${r.bigBook.newPerSecond.toLocaleString('en')} | ${r.bigBook.changedPerSecond.toLocaleString('en')} | ` +
      `${r.getOne.requestsPerSecond.toLocaleString('en')} | ${r.getOne.p50Ms} | ${r.getOne.p99Ms} | ${r.getOne.errors} |`,
  ),
  '',
  '## Transactional email',
  '',
  'Emails accepted through `POST /v1/emails` (autocannon\'s CLI in a process of its own, 32 connections), then delivered',
  'DKIM-signed over SMTP to a loopback smtp-server sink running in its own process. Accept and delivery are measured as',
  'separate phases. Peak RSS is of the process running server and dispatcher (on PGlite it holds the database too).',
  '',
  '| Database | Emails | Accept (2xx/s) | p50 (ms) | p99 (ms) | Not accepted | Delivered (msg/s) | Peak RSS (MB) |',
  '|---|---|---|---|---|---|---|---|',
  ...emails.map(
    (r) =>
      `| ${r.database} | ${r.emails.toLocaleString('en')} | ${r.accept.requestsPerSecond.toLocaleString('en')} | ` +
      `${r.accept.p50Ms} | ${r.accept.p99Ms} | ${r.accept.errors} | ${r.delivery.messagesPerSecond.toLocaleString('en')} | ${r.peakRssMb} |`,
  ),
  '',
  '## Campaigns',
  '',
  'A campaign to a book of 100,000 contacts, personalised and DKIM-signed, delivered over SMTP to the same kind of sink.',
  'Release: all recipients turned into queued emails by the set-based releaser. Delivery: until the sink has every message.',
  'Peak RSS is of the process running server, releaser and dispatcher (on PGlite it holds the database too). Ceiling',
  '(`bench/ceiling.ts`, measured in the same run right after): 20,000 prebuilt unsigned personalised messages pushed',
  "through Mailroom's own pipelining SMTP transport (the one delivery uses, a pool of the same size) to a fresh sink, and",
  'RSA-2048 signatures per second with every core signing; one message needs both, so the ceiling is',
  '1 / (1/pushed + 1/signed). Ratio: delivered over that ceiling (the goal is ≥ 0.8 on PostgreSQL, ≥ 0.6 on PGlite). Beside',
  'it, the same ceiling with the messages pushed through a nodemailer pool (TCP_NODELAY), what a library client reaches.',
  '',
  '| Database | Contacts | Batch size | Release (recipients/s) | Delivered (msg/s) | Peak RSS (MB) | Pushed unsigned, own client (msg/s) | Signatures (/s, all cores) | Ceiling (msg/s) | Ratio | Pushed unsigned, nodemailer (msg/s) | Ceiling, nodemailer (msg/s) | Ratio |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...campaigns.map(
    (r) =>
      `| ${r.database} | ${en(r.contacts)} | ${en(r.batchSize)} | ${en(r.release.recipientsPerSecond)} | ${en(r.delivery.messagesPerSecond)} | ${r.peakRssMb} | ` +
      `${en(r.ceiling.ownPushedPerSecond)} | ${en(r.ceiling.signaturesPerSecond)} | ${en(r.ceiling.messagesPerSecond)} | ${r.ratio} | ` +
      `${en(r.ceiling.pushedPerSecond)} | ${en(r.ceiling.nodemailerMessagesPerSecond)} | ${r.nodemailerRatio} |`,
  ),
  '',
  'Where the CPU went during the delivery, per message (`bench/cpu-split.ts`, from /proc): the main thread (claiming,',
  "composing, personalising, canonicalising for DKIM, the SMTP client, writing outcomes), the process's other threads (libuv's",
  "pool, where the RSA signatures are made, and V8's collector helpers), the database's processes (on PGlite inside the main",
  'thread), the sink, and the rest of the machine. A signature alone takes 2 cores / signatures per second.',
  '',
  '| Database | Main thread (ms/msg) | Other threads (ms/msg) | A signature (ms) | PostgreSQL (ms/msg) | Sink (ms/msg) | Rest (ms/msg) | Cores busy |',
  '|---|---|---|---|---|---|---|---|',
  ...campaigns.map((r) => {
    const cpu = cpuParts(r.delivery.cpu);
    const busy = (cpu.total * r.delivery.messagesPerSecond) / 1000;
    return `| ${r.database} | ${cpu.main} | ${cpu.threads} | ${((r.ceiling.cores * 1000) / r.ceiling.signaturesPerSecond).toFixed(3)} | ${cpu.postgres} | ${cpu.sink} | ${cpu.rest} | ${busy.toFixed(2)} of ${r.ceiling.cores} |`;
  }),
  ...campaigns.flatMap((r) => {
    const goal = r.database === 'postgres' ? 0.8 : 0.6;
    return r.ratio < goal ? ['', `**Below the goal on ${r.database}:** delivery at ${r.ratio} × the ceiling (the goal is ≥ ${goal}).`] : [];
  }),
  '',
  ...webhooksSection(webhooks),
  '',
  '## SMTP submission',
  '',
  `The same ${(submission[0]?.messages ?? 5_000).toLocaleString('en')} small messages (text and HTML, one recipient) accepted through \`POST /v1/emails\` and through the SMTP`,
  'submission listener, on one fresh database, by a server with `ROLE=api` and `RATE_LIMIT_PER_SECOND=1000000`: no dispatcher',
  'takes them, and all are still QUEUED at the end. HTTP: autocannon, 4 keep-alive connections, timed to the last response.',
  'SMTP: nodemailer, `pool: true, maxConnections: 4, maxMessages: Infinity`, STARTTLS with `requireTLS` to the self-signed',
  'certificate (`tls: { rejectUnauthorized: false }`), AUTH PLAIN with the API key, each batch handed to the pool at once;',
  "then the same with TCP_NODELAY on its sockets (opened through nodemailer's `getSocket`): nodemailer leaves Nagle's",
  "algorithm on and writes a message's body and its terminating dot apart, so the dot waits for the server's acknowledgement",
  'of the body, which Linux delays by 40 ms. nodemailer waits for each reply before its next command: four round trips a',
  "message. Pipelining: Mailroom's own relay client (the one `SMTP_URL` sends through) with a pool of 4 sessions, the same",
  'STARTTLS and AUTH, which pipelines (RFC 2920) as Postfix does: a body and its dot leave in one write with the next',
  "message's envelope behind them, two messages per session in its hands. Each path has a load generator in a process of",
  `its own, which first sends ${submission[0]?.warmup ?? 200} messages not counted; the messages then go in ${submission[0]?.rounds ?? 5} rounds, each path in turn with its`,
  'share and the order turning from round to round, so that whatever else runs on the machine meanwhile hits every path',
  'alike. Every message must be accepted exactly once (2xx, or `250 2.0.0 Queued as <id>` with distinct ids; the new rows in',
  "`emails` counted). Latency: autocannon's response time; for nodemailer its own, from MAIL FROM to the reply to DATA; for",
  'the pipelining client from handing it the message to the reply to its dot. Server CPU: of the server\'s process per',
  "message, every thread's (on PostgreSQL without the database's). Client CPU: of each path's load generator per message; it",
  'runs on the same cores as the server, so what a client spends is taken from the server. Ratio: SMTP over HTTP accepted/s.',
  "The goals: with a client that loses no time of its own (no Nagle delay, no wait the server does not ask for: the",
  "pipelining one), server CPU per message ≤ 2 × HTTP's and the accepted rate ≥ 0.7 × HTTP's.",
  '',
  '| Database | Messages | HTTP (msg/s) | p50 (ms) | p99 (ms) | SMTP (msg/s) | Ratio | SMTP, no delay (msg/s) | p50 (ms) | p99 (ms) | Ratio | SMTP, pipelining (msg/s) | p50 (ms) | p99 (ms) | Ratio | Server CPU, HTTP / SMTP / no delay / pipelining (ms/msg) | Client CPU, HTTP / SMTP / no delay / pipelining (ms/msg) | Peak RSS (MB) |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...submission.map(
    (r) =>
      `| ${r.database} | ${r.messages.toLocaleString('en')} | ${r.http.acceptedPerSecond.toLocaleString('en')} | ${r.http.p50Ms} | ${r.http.p99Ms} | ` +
      `${r.smtp.acceptedPerSecond.toLocaleString('en')} | ${r.ratio} | ` +
      `${r.smtpNoDelay.acceptedPerSecond.toLocaleString('en')} | ${r.smtpNoDelay.p50Ms} | ${r.smtpNoDelay.p99Ms} | ${r.ratioNoDelay} | ` +
      `${r.smtpPipelining.acceptedPerSecond.toLocaleString('en')} | ${r.smtpPipelining.p50Ms} | ${r.smtpPipelining.p99Ms} | ${r.ratioPipelining} | ` +
      `${r.http.serverCpuMsPerMessage} / ${r.smtp.serverCpuMsPerMessage} / ${r.smtpNoDelay.serverCpuMsPerMessage} / ${r.smtpPipelining.serverCpuMsPerMessage} | ` +
      `${r.http.clientCpuMsPerMessage} / ${r.smtp.clientCpuMsPerMessage} / ${r.smtpNoDelay.clientCpuMsPerMessage} / ${r.smtpPipelining.clientCpuMsPerMessage} | ${r.peakRssMb} |`,
  ),
  ...submission.flatMap((r) => {
    const cpuRatio = Number((r.smtpPipelining.serverCpuMsPerMessage / r.http.serverCpuMsPerMessage).toFixed(2));
    const misses = [
      ...(cpuRatio > 2 ? [`server CPU per message ${cpuRatio} × HTTP's (the goal is ≤ 2)`] : []),
      ...(r.ratioPipelining < 0.7 ? [`the pipelining client accepted at ${r.ratioPipelining} × HTTP's rate (the goal is ≥ 0.7)`] : []),
    ];
    const lockStep =
      `With nodemailer (no delay) on ${r.database}: ${r.ratioNoDelay} × HTTP's rate, its four round trips a message and ` +
      `${(r.smtpNoDelay.clientCpuMsPerMessage / r.http.clientCpuMsPerMessage).toFixed(1)} × autocannon's CPU per message spent on the same cores.`;
    return ['', misses.length > 0 ? `**Below the goal on ${r.database}:** ${misses.join('; ')}. ${lockStep}` : lockStep];
  }),
  '',
  '## Peak memory',
  '',
  'The peak RSS of the process running the service in each benchmark above (on PGlite it holds the database too; the',
  "import's load generator runs in it as well). The goals: ≤ 600 MB on PGlite, ≤ 300 MB on PostgreSQL.",
  '',
  '| Database | Transactional email (MB) | Campaign (MB) | Webhooks (MB) | SMTP submission (MB) | Goal (MB) | Met |',
  '|---|---|---|---|---|---|---|',
  ...databases.map((database) => {
    const peaks = [emails, campaigns, webhooks, submission].map((results) => {
      const result = (results as Array<{ database: string; peakRssMb?: number }>).find((r) => r.database === database);
      return result?.peakRssMb ?? null;
    });
    const goal = database === 'pglite' ? 600 : 300;
    return `| ${database} | ${peaks.map((peak) => peak ?? '–').join(' | ')} | ${goal} | ${peaks.every((peak) => peak === null || peak <= goal) ? 'yes' : 'no'} |`;
  }),
  '',
  '## Shared rate limit',
  '',
  `\`POST /v1/emails\` accepted by a \`ROLE=api\` server (no dispatcher) on a fresh PostgreSQL database, ${(rateLimit?.requests ?? 12_000).toLocaleString('en')} requests per mode`,
  `from autocannon's CLI in a process of its own (${rateLimit?.connections ?? 32} connections), in ${rateLimit?.rounds ?? 6} rounds, each mode in turn with its share and the order`,
  'turning from round to round, after a warm-up of each. Off: the team limit counted in the process\'s memory, as each',
  'process did before it was shared. On: shared through `rate_limit_windows`, at 1,000,000/s (nothing refused; slices of',
  `20,000, about one lease a second) and at ${(rateLimit?.onTight.limit ?? 5_000).toLocaleString('en')}/s (slices of 100: a lease every 100 requests, still nothing refused). Ratio: on over`,
  'off accepted/s (the bar is 0.95); rounds: the lowest and highest ratio of one round, how much the machine moved meanwhile.',
  "Server CPU: of the server's process per request (not the database's), which a busy machine moves less than a rate.",
  '',
  '| Database | Off (req/s) | p50 (ms) | p99 (ms) | On (req/s) | p50 (ms) | p99 (ms) | Ratio | Rounds | On, tight limit (req/s) | p50 (ms) | p99 (ms) | Ratio | Server CPU, off / on / tight (ms/req) | Load average |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ...(rateLimit
    ? [
        `| ${rateLimit.database} | ${rateLimit.off.requestsPerSecond.toLocaleString('en')} | ${rateLimit.off.p50Ms} | ${rateLimit.off.p99Ms} | ` +
          `${rateLimit.on.requestsPerSecond.toLocaleString('en')} | ${rateLimit.on.p50Ms} | ${rateLimit.on.p99Ms} | ${rateLimit.ratio} | ` +
          `${rateLimit.roundRatios.join('–')} | ${rateLimit.onTight.requestsPerSecond.toLocaleString('en')} | ${rateLimit.onTight.p50Ms} | ` +
          `${rateLimit.onTight.p99Ms} | ${rateLimit.ratioTight} | ` +
          `${rateLimit.off.serverCpuMsPerRequest} / ${rateLimit.on.serverCpuMsPerRequest} / ${rateLimit.onTight.serverCpuMsPerRequest} | ${rateLimit.loadAverage} |`,
      ]
    : ['| postgres | – | – | – | – | – | – | – | – | – | – | – | – | – | – |']),
  '',
  ...startupSection(startup),
  ...directSection(direct),
  ...inboundSection(inbound),
  ...segmentsSection(segments),
  ...hostileSection(hostile),
  ...automationsSection(automations),
];
await writeFile('BENCHMARKS.md', lines.join('\n'));
console.log(lines.join('\n'));
if (webhooks.some((r) => r.failure)) process.exitCode = 1;
