import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Email, PostalMimeOptions } from 'postal-mime';

/**
 * postal-mime parses a message from start to end without ever giving the event loop back. It
 * gathers each part's decoded lines into a Blob and reads it back; Node's Blob makes every line a
 * part of its own and reads them one by one, which was most of the cost (a 1 KB message took half
 * a millisecond, 64 KiB of short 7bit lines a fifth of a second). On its thread, postal-mime finds
 * instead a Blob that only joins its parts into one buffer when read, which is all it asks of one:
 * 5 to 30 times faster. Even so a big message takes long enough that every request of the process
 * would wait, so every message Mailroom reads (submitted, received, a report, an attachment read
 * again) is parsed here, on a thread of its own, one at a time in the order asked; the loop only
 * copies the message there and takes the parsed result back (attachments' bytes moved, not
 * copied). The thread is handed the next messages while it parses one (up to MAX_HANDED of them,
 * MAX_HANDED_BYTES together), so it never waits for the loop between two, and their results reach
 * the loop together, to be stored together. It starts with the first message and is kept (holding
 * the process open only while it has work); one that dies fails the message it was parsing, and
 * the messages handed to it after that one go to the next thread.
 */
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
globalThis.Blob = class JoinedParts {
  #parts;
  constructor(parts = [], options = {}) {
    this.#parts = parts;
    this.type = options.type ?? '';
  }
  async arrayBuffer() {
    const bytes = Buffer.concat(this.#parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : ArrayBuffer.isView(part) ? part : new Uint8Array(part))));
    // Its own ArrayBuffer (a small one is a slice of Buffer's shared pool): attachments' are moved to the loop.
    return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes.buffer : bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  }
};
const PostalMime = require(workerData.postalMime);
// Parsed one at a time, in the order handed: the loop matches each result to the oldest message it handed over.
const queue = [];
let parsing = false;
async function parseAll() {
  parsing = true;
  while (queue.length > 0) {
    const { raw, options } = queue.shift();
    try {
      // The message is the whole of its ArrayBuffer: postal-mime makes no copy of its own.
      const email = await PostalMime.parse(raw.buffer, options);
      // Attachments' bytes are moved back, not copied.
      parentPort.postMessage({ email }, [...new Set(email.attachments.map((a) => a.content).filter((c) => c instanceof ArrayBuffer))]);
    } catch (error) {
      parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) });
    }
  }
  parsing = false;
}
parentPort.on('message', (job) => {
  queue.push(job);
  if (!parsing) void parseAll();
});`;

type Job = { raw: Uint8Array; options: PostalMimeOptions; resolve(email: Email): void; reject(error: Error): void };

// The package as a CommonJS module: what the thread's require loads, wherever this module was built to.
const postalMime = createRequire(import.meta.url).resolve('postal-mime');

/** Messages in the thread's hands at once, and their bytes together (one larger message goes alone). */
const MAX_HANDED = 32;
const MAX_HANDED_BYTES = 4 * 1024 * 1024;

let thread: Worker | null = null;
/** Handed to the thread, oldest first: the next result is the first one's. */
const handed: Job[] = [];
const waiting: Job[] = [];

function finish(outcome: { email?: Email; error?: string | Error }): void {
  const job = handed.shift();
  if (job) {
    if (outcome.email) job.resolve(outcome.email);
    else job.reject(outcome.error instanceof Error ? outcome.error : new Error(outcome.error ?? 'the message could not be parsed'));
  }
  hand();
}

function start(): Worker {
  const worker = new Worker(THREAD, { eval: true, workerData: { postalMime } });
  worker.on('message', (outcome: { email?: Email; error?: string }) => finish(outcome));
  const died = (error: Error) => {
    if (thread !== worker) return;
    thread = null;
    // The oldest was being parsed; the others were not begun and go to the next thread.
    const failed = handed.shift();
    waiting.unshift(...handed.splice(0));
    failed?.reject(error);
    hand();
  };
  worker.on('error', died);
  worker.on('exit', (code) => died(new Error(`the MIME parsing thread stopped (exit code ${code})`)));
  return worker;
}

const fits = (job: Job) =>
  handed.length === 0 ||
  (handed.length < MAX_HANDED && handed.reduce((bytes, held) => bytes + held.raw.byteLength, job.raw.byteLength) <= MAX_HANDED_BYTES);

function hand(): void {
  while (waiting.length > 0 && fits(waiting[0]!)) {
    const job = waiting.shift()!;
    thread ??= start();
    handed.push(job);
    // Its bytes alone, moved there: a small message is a slice of Buffer's shared pool, which a
    // plain copy would carry whole.
    const raw = new Uint8Array(job.raw);
    thread.postMessage({ raw, options: job.options }, [raw.buffer]);
  }
  if (handed.length > 0) thread?.ref();
  else thread?.unref();
}

/** PostalMime.parse(raw, options), on the parsing thread: a copy of the message is moved there, the result comes back (its attachments' bytes moved, not copied). */
export function parseMime(raw: Uint8Array, options: PostalMimeOptions = {}): Promise<Email> {
  return new Promise((resolve, reject) => {
    waiting.push({ raw, options, resolve, reject });
    hand();
  });
}
