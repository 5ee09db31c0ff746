/**
 * Inbound email: messages accepted per second by the inbound SMTP listener, stored with their
 * `email.received` webhook calls, and the memory one message of the largest size it takes costs.
 *
 *   npx tsx bench/inbound.ts [postgres://…/db] [messages]   (no URL: embedded PGlite)
 *
 * The goals (the issue's): ≥ 500 messages/s on PostgreSQL (4 connections, 20 KiB messages with one
 * attachment, the webhook sent), and RSS growth under 2 × the message size while one 25 MiB
 * message is received.
 *
 * The server is this process (ROLE=all: the inbound listener, the webhook sender and the other
 * workers, on a fresh database), with a team whose domain is marked verified, a route
 * `*@in.bench.example.com` with action webhook, and one webhook taking email.received that posts to
 * the webhook benchmark's receiver (bench/webhooks/receiver.ts, a process of its own, answering 200).
 * The senders' DNS is a loopback DNS server in a process of its own (bench/inbound/dns.ts,
 * DNS_SERVERS) publishing the sending domain's SPF, DKIM key and DMARC policy, so that every
 * message is authenticated the whole way (each must come out spf, dkim and dmarc pass). The load
 * generator is a process of its own too (this file with `--client`): nodemailer, a pool of 4
 * connections with TCP_NODELAY (as bench/submission.ts), STARTTLS as the listener offers it, a new
 * connection every 250 messages (the listener closes a session after 1,000 commands), each
 * message DKIM-signed and built before the clock starts, all of a batch handed to the pool at once.
 *
 * Two runs, each a process of its own (`--run throughput|big`) on a fresh database and server:
 * - throughput: a warm-up of 200 messages, then N (5,000) timed from the first MAIL to the last 250;
 *   then every webhook call awaited. Every message must come out as exactly one stored email
 *   (by its Message-ID) and exactly one call, received by the receiver and recorded DELIVERED.
 * - big: a warm-up of 20 small messages, then one message of exactly 25 MiB as the listener counts
 *   it (INBOUND_MAX_BYTES, the default limit, which it fits): a text part and one attachment,
 *   base64. The server's RSS just before (after a full collection) against its peak (VmHWM, reset
 *   through /proc/self/clear_refs) from the MAIL until its webhook call was delivered; the load
 *   generator also samples the server's VmRSS every 10 ms meanwhile.
 */
import { generateKeyPairSync, randomBytes, createPrivateKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { createInterface } from 'node:readline';
import nodemailer from 'nodemailer';
import { DkimSigner } from '../src/domains/dkim.js';
import { startBenchHarness, startLineProcess, type BenchHarness } from './harness.js';
import { runThisScriptApart } from './run-apart.js';

const CONNECTIONS = 4;
/**
 * Messages a connection of the pool carries before nodemailer opens a new one: the listener ends a
 * session after 1,000 commands (421), and each message takes three (MAIL, RCPT, DATA).
 */
const MESSAGES_PER_CONNECTION = 250;
const MESSAGE_BYTES = 20 * 1024;
const BIG_BYTES = 25 * 1024 * 1024;
const WARMUP = 200;
const BIG_WARMUP = 20;
const SENDER_DOMAIN = 'sender.bench.test';
const SELECTOR = 'bench';
/** The harness's verified domain, and the subdomain the route takes every address of. */
const VERIFIED_DOMAIN = 'bench.example.com';
const ROUTED_DOMAIN = `in.${VERIFIED_DOMAIN}`;
/** How long the webhook calls may take to arrive after the last 250 before the benchmark fails. */
const CALLS_DEADLINE_MS = 5 * 60_000;

type Run = 'throughput' | 'big';

// ---------------------------------------------------------------------------------------------
// The messages

const messageId = (tag: string, index: number) => `<${tag}-${index}@${SENDER_DOMAIN}>`;
const recipientOf = (tag: string, index: number) => `${tag}${index}@${ROUTED_DOMAIN}`;

/** base64 in lines of 76 characters, each ending CRLF. */
function base64Lines(bytes: Buffer): string {
  const encoded = bytes.toString('base64');
  const lines: string[] = [];
  for (let offset = 0; offset < encoded.length; offset += 76) lines.push(encoded.slice(offset, offset + 76));
  return `${lines.join('\r\n')}\r\n`;
}

/** Exactly `length` bytes of plain text in lines of at most 72 characters, ending CRLF. */
function filler(length: number, opening: string): string {
  const words = ['invoice', 'payment', 'attached', 'please', 'find', 'the', 'of', 'this', 'month', 'regards', 'account', 'summary'];
  let text = opening;
  let line = 0;
  for (let i = 0; text.length < length; i++) {
    const word = words[i % words.length]!;
    if (line + word.length + 1 > 72) {
      text += '\r\n';
      line = 0;
    }
    text += line === 0 ? word : ` ${word}`;
    line += word.length + 1;
  }
  let cut = text.slice(0, length - 2);
  if (cut.endsWith('\r') || cut.endsWith(' ')) cut = `${cut.slice(0, -1)}x`;
  return `${cut}\r\n`;
}

/**
 * A message as a mail client writes it, unsigned, of exactly `bytes` bytes (CRLF line ends):
 * text and HTML alternatives, and one attachment (random bytes, base64) taking all the room the
 * rest leaves; the text part takes up the last few bytes.
 */
export function composeMessage(tag: string, index: number, bytes: number): Buffer {
  const outer = `----=_Part_${tag}_${index}_mixed`;
  const inner = `----=_Part_${tag}_${index}_alt`;
  const file = `invoice-${tag}-${index}.pdf`;
  const head =
    [
      `From: Ann Sender <ann@${SENDER_DOMAIN}>`,
      `To: <${recipientOf(tag, index)}>`,
      `Subject: Invoice ${tag}-${index}`,
      `Date: ${new Date().toUTCString().replace('GMT', '+0000')}`,
      `Message-ID: ${messageId(tag, index)}`,
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${outer}"`,
      '',
      `--${outer}`,
      `Content-Type: multipart/alternative; boundary="${inner}"`,
      '',
      `--${inner}`,
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 7bit',
      '',
      '',
    ].join('\r\n');
  const middle =
    [
      `--${inner}`,
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: 7bit',
      '',
      `<p>Hello,</p><p>Please find attached invoice <b>${tag}-${index}</b> of this month.</p><p>Regards,<br>Ann</p>`,
      `--${inner}--`,
      `--${outer}`,
      `Content-Type: application/pdf; name="${file}"`,
      `Content-Disposition: attachment; filename="${file}"`,
      'Content-Transfer-Encoding: base64',
      '',
      '',
    ].join('\r\n');
  const tail = `--${outer}--\r\n`;
  const fixed = head.length + middle.length + tail.length;
  const minText = 300;
  // 57 bytes of the attachment are one line of 76 base64 characters and its CRLF.
  const lines = Math.floor((bytes - fixed - minText) / 78);
  if (lines < 1) throw new Error(`a message of ${bytes} bytes has no room for an attachment`);
  const attachment = base64Lines(randomBytes(lines * 57));
  const text = filler(bytes - fixed - attachment.length, `Hello,\r\n\r\nPlease find attached invoice ${tag}-${index}.\r\n\r\n`);
  const message = Buffer.from(head + text + middle + attachment + tail, 'latin1');
  if (message.length !== bytes) throw new Error(`composed ${message.length} bytes, not ${bytes}`);
  return message;
}

/** The attachment's size in a message of `bytes` composed as above. */
const attachmentBytes = (message: Buffer) => {
  const start = message.indexOf('Content-Transfer-Encoding: base64\r\n\r\n') + 'Content-Transfer-Encoding: base64\r\n\r\n'.length;
  const end = message.lastIndexOf('\r\n--');
  return Buffer.from(message.subarray(start, end).toString('latin1'), 'base64').length;
};

// ---------------------------------------------------------------------------------------------
// The load generator (`--client`), a process of its own

type ClientSpec = { port: number; privateKeyPem: string; serverPid: number };

/** What the load generator measured of one batch. */
type BatchResult = {
  seconds: number;
  accepted: number;
  /** Replies other than 250, and connection errors. */
  errors: number;
  firstError?: string;
  /** Of each accepted message, in ms: MAIL FROM to the reply to the message's end (nodemailer's envelopeTime + messageTime). */
  latencies: number[];
  /** With `sample`: the server's VmRSS every 10 ms while the batch was in flight. */
  rss?: { peakKb: number; timeline: Array<[ms: number, kb: number]> };
};

const statusKb = (pid: number | 'self', field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

function inboundClient(spec: ClientSpec) {
  const signer = new DkimSigner(SENDER_DOMAIN, SELECTOR, createPrivateKey(spec.privateKeyPem));
  // nodemailer writes a message's body and its terminating dot apart: with Nagle's algorithm the dot
  // would wait for the server's delayed acknowledgement (bench/submission.ts).
  const getSocket = (_options: unknown, callback: (error: Error | null, socket?: { connection: net.Socket }) => void) => {
    const socket = net.connect(spec.port, '127.0.0.1');
    socket.setNoDelay(true);
    socket.once('error', callback).once('connect', () => {
      socket.off('error', callback);
      callback(null, { connection: socket });
    });
  };
  const transport = nodemailer.createTransport({
    host: '127.0.0.1', port: spec.port, secure: false, name: `mx.${SENDER_DOMAIN}`,
    // STARTTLS as offered (an MTA's opportunistic TLS), to the listener's self-signed certificate.
    tls: { rejectUnauthorized: false },
    pool: true, maxConnections: CONNECTIONS, maxMessages: MESSAGES_PER_CONNECTION, getSocket,
  });
  let prepared: Array<{ to: string; raw: Buffer }> = [];
  let signatureBytes: number | undefined;

  return {
    /** Builds and signs the messages of the next batch (before its clock starts); answers the first one's size and its attachment's. */
    async prepare(tag: string, count: number, bytes: number) {
      // The DKIM-Signature field is the same length on every message: what the unsigned one leaves room for.
      signatureBytes ??= (await signer.sign(composeMessage('probe', 0, 4096))).length - 4096;
      prepared = await Promise.all(
        Array.from({ length: count }, async (_, index) => ({ to: recipientOf(tag, index), raw: await signer.sign(composeMessage(tag, index, bytes - signatureBytes!)) })),
      );
      const first = prepared[0]!.raw;
      return { bytes: first.length, attachmentBytes: attachmentBytes(first) };
    },
    /** Hands every prepared message to the pool at once; with `sample`, samples the server's RSS meanwhile. */
    async send(sample: boolean): Promise<BatchResult> {
      const messages = prepared;
      prepared = [];
      const timeline: Array<[number, number]> = [];
      const started = performance.now();
      const sampler = sample ? setInterval(() => timeline.push([Math.round(performance.now() - started), statusKb(spec.serverPid, 'VmRSS')]), 10) : undefined;
      const results = await Promise.allSettled(
        messages.map(({ to, raw }) => transport.sendMail({ envelope: { from: `ann@${SENDER_DOMAIN}`, to: [to] }, raw })),
      );
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      const latencies: number[] = [];
      let errors = 0;
      let firstError: string | undefined;
      for (const result of results) {
        if (result.status === 'fulfilled' && /^250[ -]/.test(result.value.response)) {
          const info = result.value as { envelopeTime?: number; messageTime?: number };
          latencies.push((info.envelopeTime ?? 0) + (info.messageTime ?? 0));
        } else {
          errors++;
          firstError ??= result.status === 'rejected' ? String(result.reason) : result.value.response;
        }
      }
      return {
        seconds, accepted: latencies.length, errors, firstError, latencies,
        ...(sample && { rss: { peakKb: Math.max(...timeline.map(([, kb]) => kb)), timeline } }),
      };
    },
    close: () => transport.close(),
  };
}

/**
 * The load generator's process: prints `client 0`, takes its ClientSpec as the first line and
 * answers `ready`; then each line is a command (JSON) answered with one line of JSON:
 * `{"prepare":[tag,count,bytes]}` or `{"send":sample}`.
 */
async function clientProcess(): Promise<void> {
  process.stdout.write('client 0\n');
  let client: ReturnType<typeof inboundClient> | undefined;
  for await (const line of createInterface({ input: process.stdin })) {
    if (!client) {
      client = inboundClient(JSON.parse(line) as ClientSpec);
      process.stdout.write('ready\n');
      continue;
    }
    const command = JSON.parse(line) as { prepare?: [string, number, number]; send?: boolean };
    const answer = command.prepare ? await client.prepare(...command.prepare) : await client.send(command.send ?? false);
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  }
  client?.close();
}

// ---------------------------------------------------------------------------------------------
// The server's side

type Receiver = Awaited<ReturnType<typeof startLineProcess>>;
type ReceiverCounts = { requests: number; distinct: number; lastNewAtMs: number };

/** The server and its world: DNS, the webhook receiver, the load generator; the route and the webhook. */
async function setUp(databaseUrl: string | undefined) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const dns = await startLineProcess('bench/inbound/dns.ts', [SENDER_DOMAIN, SELECTOR, publicKey.export({ type: 'spki', format: 'der' }).toString('base64')]);
  const receiver: Receiver = await startLineProcess('bench/webhooks/receiver.ts');
  let bench: BenchHarness | undefined;
  let client: Awaited<ReturnType<typeof startLineProcess>> | undefined;
  const stop = async () => {
    await client?.stop();
    await bench?.close();
    await Promise.all([receiver.stop(), dns.stop()]);
  };
  try {
    bench = await startBenchHarness(databaseUrl, { inbound: true, settings: { ROLE: 'all', DNS_SERVERS: `127.0.0.1:${dns.port}` } });
    const { server, api } = bench;
    if (server.inboundPort === null) throw new Error('the inbound listener did not start');
    // Verified by hand, as test/helpers/domains.ts does, and not checked again during the run (the
    // domain worker runs here, and DNS has nothing of this domain): a check already under way
    // loses its claim and writes nothing.
    await server.deps.db
      .updateTable('domains')
      .set({
        status: 'SUCCESS', dkim_status: 'SUCCESS', spf_status: 'SUCCESS', mx_status: 'SUCCESS', dmarc_status: 'SUCCESS',
        is_verifying: false, next_check_at: new Date(Date.now() + 30 * 86_400_000), claim_token: null, claimed_until: null,
      })
      .where('name', '=', VERIFIED_DOMAIN)
      .execute();
    const webhook = await api('POST', '/webhooks', { url: `http://127.0.0.1:${receiver.port}/hook`, events: ['email.received'] });
    await api('POST', '/inbound/routes', { match: `*@${ROUTED_DOMAIN}`, action: 'webhook' });
    client = await startLineProcess('bench/inbound.ts', ['--client']);
    const spec: ClientSpec = { port: server.inboundPort, privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), serverPid: process.pid };
    if ((await client.ask(JSON.stringify(spec))) !== 'ready') throw new Error('the load generator did not start');
    const generator = client;
    const ask = async <T>(command: object) => JSON.parse(await generator.ask(JSON.stringify(command))) as T;
    return {
      bench: bench as BenchHarness,
      webhookId: webhook.id as string,
      prepare: (tag: string, count: number, bytes: number) => ask<{ bytes: number; attachmentBytes: number }>({ prepare: [tag, count, bytes] }),
      send: (sample = false) => ask<BatchResult>({ send: sample }),
      receiverCounts: async () => {
        const line = await receiver.ask('?');
        return JSON.parse(line.slice(line.indexOf(' ') + 1)) as ReceiverCounts;
      },
      dnsQueries: async () => {
        const line = await dns.ask('?');
        return JSON.parse(line.slice(line.indexOf(' ') + 1)) as Record<string, number>;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

type World = Awaited<ReturnType<typeof setUp>>;

/** Sends a prepared batch; fails unless every message was accepted. */
async function sendAll(world: World, what: string, count: number, sample = false): Promise<BatchResult> {
  const result = await world.send(sample);
  if (result.errors > 0 || result.accepted !== count) {
    throw new Error(`${what}: ${result.accepted} of ${count} accepted, ${result.errors} refused (first: ${result.firstError ?? '?'})`);
  }
  return result;
}

/** Waits until the receiver has `total` distinct calls and the database has them all DELIVERED; answers what it saw. */
async function awaitCalls(world: World, total: number) {
  const { db } = world.bench.server.deps;
  const deadline = Date.now() + CALLS_DEADLINE_MS;
  let seen = await world.receiverCounts();
  while (seen.distinct < total && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    seen = await world.receiverCounts();
  }
  const delivered = async () =>
    Number((await db.selectFrom('webhook_calls').select((eb) => eb.fn.countAll<number>().as('n'))
      .where('webhook_id', '=', world.webhookId).where('status', '=', 'DELIVERED').executeTakeFirstOrThrow()).n);
  let recorded = await delivered();
  while (recorded < total && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    recorded = await delivered();
  }
  if (seen.distinct !== total || recorded !== total) {
    throw new Error(`webhook calls: ${seen.distinct} of ${total} received, ${recorded} recorded DELIVERED, within ${CALLS_DEADLINE_MS / 1000} s`);
  }
  return seen;
}

/**
 * Every message sent came out as exactly one stored email (by its Message-ID, none other stored),
 * authenticated (SPF, DKIM and DMARC pass), and exactly one email.received call of the webhook,
 * DELIVERED: answers the calls' count.
 */
async function checkStored(world: World, sent: Array<[tag: string, count: number]>) {
  const { db } = world.bench.server.deps;
  const expected = new Set(sent.flatMap(([tag, count]) => Array.from({ length: count }, (_, index) => messageId(tag, index))));
  const stored = await db.selectFrom('inbound_emails').select(['id', 'message_id', 'authentication']).execute();
  const byMessageId = new Map<string, number>();
  for (const row of stored) byMessageId.set(row.message_id ?? '', (byMessageId.get(row.message_id ?? '') ?? 0) + 1);
  const problems: string[] = [];
  if (stored.length !== expected.size) problems.push(`${stored.length} stored emails for ${expected.size} messages`);
  const missing = [...expected].filter((id) => byMessageId.get(id) !== 1);
  if (missing.length > 0) problems.push(`${missing.length} messages not stored exactly once (first: ${missing[0]} ×${byMessageId.get(missing[0]!) ?? 0})`);
  const unauthenticated = stored.filter(({ authentication: a }) => a.spf.result !== 'pass' || a.dkim.result !== 'pass' || a.dmarc.result !== 'pass');
  if (unauthenticated.length > 0) problems.push(`${unauthenticated.length} stored emails not spf, dkim and dmarc pass (first: ${JSON.stringify(unauthenticated[0]!.authentication)})`);
  const calls = await db.selectFrom('webhook_calls').select(['subject_key', 'type', 'status']).where('webhook_id', '=', world.webhookId).execute();
  const ids = new Set(stored.map((row) => row.id));
  const callsOf = new Map<string, number>();
  for (const call of calls) callsOf.set(call.subject_key ?? '', (callsOf.get(call.subject_key ?? '') ?? 0) + 1);
  if (calls.length !== stored.length) problems.push(`${calls.length} webhook calls for ${stored.length} stored emails`);
  if ([...ids].some((id) => callsOf.get(id) !== 1)) problems.push('a stored email without exactly one webhook call');
  if (calls.some((call) => call.type !== 'email.received' || call.status !== 'DELIVERED')) problems.push('a webhook call not email.received and DELIVERED');
  if (problems.length > 0) throw new Error(problems.join('; '));
  return calls.length;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000;
const mb = (kb: number) => Number((kb / 1024).toFixed(1));

/** Jiffies all cores spent busy, and in all, since boot (/proc/stat). */
function machineJiffies() {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((sum, n) => sum + n, 0);
  return { busy: total - fields[3]! - fields[4]!, total };
}

/** Forgets the process's peak RSS (VmHWM) so far: Linux's clear_refs. */
const resetHighWaterMark = () => writeFileSync('/proc/self/clear_refs', '5');

export type InboundThroughputRun = {
  database: 'postgres' | 'pglite';
  messages: number;
  messageBytes: number;
  attachmentBytes: number;
  connections: number;
  warmup: number;
  /** From handing the batch to the pool (its connections open since the warm-up) to the last 250. */
  seconds: number;
  acceptedPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Of this process (listener, webhook sender, the other workers; on PGlite the database too) per message, during the batch. */
  serverCpuMsPerMessage: number;
  /** The same from the batch's start until its last webhook call was recorded DELIVERED. */
  serverCpuMsPerMessageWithCalls: number;
  /**
   * Cores the whole machine kept busy during the batch (of `cores`): server, database, load
   * generator, DNS server and webhook receiver share them.
   */
  machineBusyCores: number;
  cores: number;
  calls: {
    /** Calls of the webhook at the end, warm-up included: one per stored email, each DELIVERED. */
    total: number;
    /** Distinct webhook-id values the receiver saw, and requests (beyond one per id: repeats). */
    received: number;
    requests: number;
    /** Of the batch's calls, those the receiver still lacked at the last 250. */
    behindAtLast250: number;
    /** From the batch's start until the receiver saw its last new call. */
    secondsToLastCall: number;
    /** The longest from a call's writing (with its email) to its recorded delivery, and how many took over 5 s. */
    slowestSeconds: number;
    over5s: number;
  };
  /** DNS questions per message (SPF, DKIM key, DMARC), as the DNS server counted them. */
  dnsQueriesPerMessage: number;
  /** This process's peak RSS (VmHWM) from the batch's start until every call was delivered. */
  peakRssMb: number;
};

export async function benchInboundThroughput(options: { databaseUrl?: string; messages?: number } = {}): Promise<InboundThroughputRun> {
  const messages = options.messages ?? 5_000;
  const world = await setUp(options.databaseUrl);
  try {
    await world.prepare('warmup', WARMUP, MESSAGE_BYTES);
    await sendAll(world, 'warm-up', WARMUP);
    await awaitCalls(world, WARMUP);
    const prepared = await world.prepare('m', messages, MESSAGE_BYTES);

    world.bench.resetPeakRss();
    resetHighWaterMark();
    const startedAtMs = Date.now();
    const cpuBefore = process.cpuUsage();
    const machineBefore = machineJiffies();
    const batch = await sendAll(world, 'batch', messages);
    const cpuBatch = process.cpuUsage(cpuBefore);
    const machineAfter = machineJiffies();
    const behindAtLast250 = WARMUP + messages - (await world.receiverCounts()).distinct;
    const seen = await awaitCalls(world, WARMUP + messages);
    const cpuWithCalls = process.cpuUsage(cpuBefore);
    const peakRssKb = statusKb('self', 'VmHWM');

    const calls = await checkStored(world, [['warmup', WARMUP], ['m', messages]]);
    const delays = (await world.bench.server.deps.db.selectFrom('webhook_calls').select(['created_at', 'updated_at']).where('webhook_id', '=', world.webhookId).execute())
      .map((call) => (call.updated_at.getTime() - call.created_at.getTime()) / 1000);
    const queries = Object.values(await world.dnsQueries()).reduce((sum, n) => sum + n, 0);
    const latencies = batch.latencies.sort((a, b) => a - b);
    return {
      database: world.bench.server.deps.dbKind,
      messages,
      messageBytes: prepared.bytes,
      attachmentBytes: prepared.attachmentBytes,
      connections: CONNECTIONS,
      warmup: WARMUP,
      seconds: Number(batch.seconds.toFixed(2)),
      acceptedPerSecond: Math.round(messages / batch.seconds),
      p50Ms: Number(percentile(latencies, 50).toFixed(1)),
      p99Ms: Number(percentile(latencies, 99).toFixed(1)),
      serverCpuMsPerMessage: Number((cpuMs(cpuBatch) / messages).toFixed(3)),
      serverCpuMsPerMessageWithCalls: Number((cpuMs(cpuWithCalls) / messages).toFixed(3)),
      machineBusyCores: Number((((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * os.cpus().length).toFixed(2)),
      cores: os.cpus().length,
      calls: {
        total: calls,
        received: seen.distinct,
        requests: seen.requests,
        behindAtLast250,
        secondsToLastCall: Number(((seen.lastNewAtMs - startedAtMs) / 1000).toFixed(2)),
        slowestSeconds: Number(Math.max(...delays).toFixed(1)),
        over5s: delays.filter((seconds) => seconds > 5).length,
      },
      dnsQueriesPerMessage: Number((queries / (WARMUP + messages)).toFixed(2)),
      peakRssMb: mb(peakRssKb),
    };
  } finally {
    await world.stop();
  }
}

export type InboundBigRun = {
  database: 'postgres' | 'pglite';
  /** The message as the listener counts it (INBOUND_MAX_BYTES is 26,214,400 by default). */
  messageBytes: number;
  attachmentBytes: number;
  maxBytes: number;
  /** Small messages sent first, not measured. */
  warmup: number;
  /** From handing it to nodemailer to the 250. */
  secondsTo250: number;
  /** This process's RSS just before (after a full collection), and its peak (VmHWM) from then until the webhook call was delivered. */
  rssBeforeMb: number;
  peakRssMb: number;
  growthMb: number;
  /** growth / message size: the goal is < 2. */
  growthRatio: number;
  /** The peak of the load generator's samples of VmRSS every 10 ms, while the message was in flight. */
  sampledPeakRssMb: number;
  /** Those samples every 100 ms (ms from handing the message over, MB), for where the memory goes. */
  timeline: Array<[number, number]>;
};

export async function benchInboundBig(options: { databaseUrl?: string } = {}): Promise<InboundBigRun> {
  const world = await setUp(options.databaseUrl);
  try {
    const { config, db } = world.bench.server.deps;
    await world.prepare('warmup', BIG_WARMUP, MESSAGE_BYTES);
    await sendAll(world, 'warm-up', BIG_WARMUP);
    await awaitCalls(world, BIG_WARMUP);
    const big = await world.prepare('big', 1, BIG_BYTES);
    if (big.bytes > config.inboundMaxBytes) throw new Error(`the message (${big.bytes} bytes) is over INBOUND_MAX_BYTES (${config.inboundMaxBytes})`);

    world.bench.resetPeakRss();
    // What the collection let go of is given back to the system over the next moments.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const beforeKb = statusKb('self', 'VmRSS');
    resetHighWaterMark();
    const sent = await sendAll(world, '25 MiB message', 1, true);
    await awaitCalls(world, BIG_WARMUP + 1);
    const peakKb = Math.max(statusKb('self', 'VmHWM'), sent.rss!.peakKb);

    await checkStored(world, [['warmup', BIG_WARMUP], ['big', 1]]);
    const row = await db.selectFrom('inbound_emails').select(['size', 'attachments']).where('message_id', '=', messageId('big', 0)).executeTakeFirstOrThrow();
    if (row.size !== big.bytes || row.attachments[0]?.size !== big.attachmentBytes) {
      throw new Error(`the 25 MiB message was stored as ${row.size} bytes with attachments ${JSON.stringify(row.attachments)}`);
    }
    const growthKb = peakKb - beforeKb;
    return {
      database: world.bench.server.deps.dbKind,
      messageBytes: big.bytes,
      attachmentBytes: big.attachmentBytes,
      maxBytes: config.inboundMaxBytes,
      warmup: BIG_WARMUP,
      secondsTo250: Number(sent.seconds.toFixed(2)),
      rssBeforeMb: mb(beforeKb),
      peakRssMb: mb(peakKb),
      growthMb: mb(growthKb),
      growthRatio: Number(((growthKb * 1024) / big.bytes).toFixed(2)),
      sampledPeakRssMb: mb(sent.rss!.peakKb),
      timeline: sent.rss!.timeline.filter((_, i) => i % 10 === 0).map(([ms, kb]) => [ms, mb(kb)]),
    };
  } finally {
    await world.stop();
  }
}

export type InboundBenchResult = {
  database: 'postgres' | 'pglite';
  throughput: InboundThroughputRun;
  big: InboundBigRun;
  /** The 1-minute load average when the benchmark ended. */
  loadAverage: number;
};

/** A run in a process of its own (this script with `--run`), which prints its result as JSON. */
const runApart = <T>(run: Run, databaseUrl: string, messages?: number) =>
  runThisScriptApart<T>(['--run', run, databaseUrl, ...(messages ? [String(messages)] : [])]);

/** Both runs, each in a process of its own on a fresh database. */
export async function benchInbound(options: { databaseUrl?: string; messages?: number } = {}): Promise<InboundBenchResult> {
  const throughput = await runApart<InboundThroughputRun>('throughput', options.databaseUrl ?? '', options.messages);
  const big = await runApart<InboundBigRun>('big', options.databaseUrl ?? '');
  return { database: throughput.database, throughput, big, loadAverage: Number(os.loadavg()[0]!.toFixed(1)) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [first, ...rest] = process.argv.slice(2);
  if (first === '--client') {
    await clientProcess();
  } else if (first === '--run') {
    const [run, url, messages] = rest;
    const databaseUrl = url || undefined;
    if (run === 'throughput') console.log(JSON.stringify(await benchInboundThroughput({ databaseUrl, messages: messages ? Number(messages) : undefined }), null, 2));
    else if (run === 'big') console.log(JSON.stringify(await benchInboundBig({ databaseUrl }), null, 2));
    else throw new Error(`--run takes "throughput" or "big", not ${run}`);
  } else {
    console.log(JSON.stringify(await benchInbound({ databaseUrl: first || undefined, messages: rest[0] ? Number(rest[0]) : undefined }), null, 2));
  }
}
