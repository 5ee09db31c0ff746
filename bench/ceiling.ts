/**
 * This machine's signed ceiling for campaign delivery, measured beside the campaign benchmark:
 * what the SMTP path alone carries (prebuilt, unsigned, personalised messages pushed through the
 * service's own pipelining SMTP transport, the one delivery uses, to the benchmarks' sink) and what
 * signing alone produces (RSA-2048 signatures per second on every core at once, one worker thread
 * a core). A message needs both, one after the other, so the ceiling is
 * 1 / (1 / pushed + 1 / signed) messages per second. The same with the messages pushed through a
 * nodemailer pool (TCP_NODELAY) instead is reported beside it, as a library user's ceiling.
 *
 *   npx tsx bench/ceiling.ts [messages]
 */
import net from 'node:net';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import nodemailer from 'nodemailer';
import { buildMessage } from '../src/mail/mime.js';
import { smtpTransport } from '../src/sending/transports/smtp.js';
import { startLineProcess } from './harness.js';

export type Ceiling = {
  /** Unsigned messages per second through a nodemailer pool to the sink. */
  pushedPerSecond: number;
  /** The same through the service's own SMTP transport (pipelined). */
  ownPushedPerSecond: number;
  /** RSA-2048 signatures per second, every core signing. */
  signaturesPerSecond: number;
  cores: number;
  poolSize: number;
  /** With the own client's push rate. */
  messagesPerSecond: number;
  /** With nodemailer's. */
  nodemailerMessagesPerSecond: number;
};

const SIGNING_MS = 3_000;

/** Signatures per second of one thread signing a message-sized digest input for SIGNING_MS. */
const SIGNER = `
const { generateKeyPairSync, sign } = require('node:crypto');
const { parentPort, workerData } = require('node:worker_threads');
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const data = Buffer.alloc(600, 'a');
const end = Date.now() + workerData.ms;
let count = 0;
while (Date.now() < end) { sign('sha256', data, privateKey); count++; }
parentPort.postMessage(count / (workerData.ms / 1000));
`;

async function signaturesPerSecond(cores: number): Promise<number> {
  const rates = await Promise.all(
    Array.from({ length: cores }, () => new Promise<number>((resolve, reject) => {
      const worker = new Worker(SIGNER, { eval: true, workerData: { ms: SIGNING_MS } });
      worker.once('message', resolve);
      worker.once('error', reject);
    })),
  );
  return rates.reduce((sum, rate) => sum + rate, 0);
}

type Push = (message: { id: string; raw: Buffer; envelope: { from: string; to: string[] } }) => Promise<boolean>;

/** A nodemailer pool as a library user sets one up for speed: pooled, reused, Nagle's algorithm off. */
function nodemailerPool(port: number, poolSize: number): { push: Push; close(): void } {
  const transporter = nodemailer.createTransport({
    host: '127.0.0.1', port, secure: false, pool: true, maxConnections: poolSize, maxMessages: Infinity,
    getSocket: (_options: unknown, callback: (error: Error | null, socket?: { connection: net.Socket }) => void) => {
      const socket = net.connect({ host: '127.0.0.1', port });
      socket.setNoDelay(true);
      socket.once('connect', () => callback(null, { connection: socket }));
      socket.once('error', (error) => callback(error));
    },
  } as nodemailer.TransportOptions);
  return {
    push: async (message) => {
      await transporter.sendMail({ envelope: message.envelope, raw: message.raw, messageId: message.id });
      return true;
    },
    close: () => transporter.close(),
  };
}

function ownTransport(port: number, poolSize: number): { push: Push; close(): Promise<void> } {
  const transport = smtpTransport({ url: `smtp://127.0.0.1:${port}`, poolSize, maxMessagesPerConnection: 1_000_000, timeoutMs: 30_000 });
  return {
    push: async (message) => (await transport.send(message.id, message.raw, message.envelope)).kind === 'sent',
    close: () => transport.close(),
  };
}

async function pushedPerSecond(messages: number, poolSize: number, client: typeof nodemailerPool | typeof ownTransport): Promise<number> {
  const sink = await startLineProcess('bench/emails/sink.ts');
  const transport = client(sink.port, poolSize);
  try {
    const built = Array.from({ length: messages }, (_, i) => ({
      id: `m${i}`,
      envelope: { from: 'bounces@bench.example.com', to: [`reader${i}@example.org`] },
      raw: buildMessage({
        id: `m${i}`, from: 'Bench <news@bench.example.com>', to: [`reader${i}@example.org`], cc: [], bcc: [], replyTo: [],
        subject: `Hello Reader ${i}`, text: `Hello Reader ${i}\n\nYour plan: pro. A link: https://example.com`,
        html: `<h1>Hello Reader ${i}</h1><p>Your plan: <b>pro</b>. A <a href="https://example.com">link</a>.</p>`,
        headers: {}, attachments: [], messageId: `<m${i}@bench.example.com>`,
      }, new Date()),
    }));
    const started = performance.now();
    const results = await Promise.all(built.map((message) => transport.push(message)));
    if (results.some((sent) => !sent)) throw new Error('the sink refused a message');
    const seconds = (performance.now() - started) / 1000;
    const received = Number((await sink.ask('?')).split(' ')[1]);
    if (received !== messages) throw new Error(`the sink received ${received} of ${messages} messages`);
    return messages / seconds;
  } finally {
    await transport.close();
    await sink.stop();
  }
}

export async function measureCeiling(options: { messages?: number; poolSize: number }): Promise<Ceiling> {
  const cores = os.cpus().length;
  const pushed = await pushedPerSecond(options.messages ?? 20_000, options.poolSize, nodemailerPool);
  const ownPushed = await pushedPerSecond(options.messages ?? 20_000, options.poolSize, ownTransport);
  const signed = await signaturesPerSecond(cores);
  return {
    pushedPerSecond: Math.round(pushed),
    ownPushedPerSecond: Math.round(ownPushed),
    signaturesPerSecond: Math.round(signed),
    cores,
    poolSize: options.poolSize,
    messagesPerSecond: Math.round(1 / (1 / ownPushed + 1 / signed)),
    nodemailerMessagesPerSecond: Math.round(1 / (1 / pushed + 1 / signed)),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await measureCeiling({ messages: process.argv[2] ? Number(process.argv[2]) : undefined, poolSize: 8 }), null, 2));
}
