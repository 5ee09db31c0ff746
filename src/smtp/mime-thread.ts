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
 * copied). The thread starts with the first message and is kept (holding the process open only
 * while it has work); one that dies fails the message it was parsing, and the next message starts
 * another.
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
parentPort.on('message', ({ raw, options }) => {
  // A message that is the whole of its ArrayBuffer (any but a small one) is handed over as that:
  // postal-mime then makes no copy of its own.
  const whole = raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength;
  PostalMime.parse(whole ? raw.buffer : raw, options).then(
    // Attachments' bytes are moved back, not copied.
    (email) => parentPort.postMessage({ email }, [...new Set(email.attachments.map((a) => a.content).filter((c) => c instanceof ArrayBuffer))]),
    (error) => parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) }),
  );
});`;

type Job = { raw: Uint8Array; options: PostalMimeOptions; resolve(email: Email): void; reject(error: Error): void };

// The package as a CommonJS module: what the thread's require loads, wherever this module was built to.
const postalMime = createRequire(import.meta.url).resolve('postal-mime');

let thread: Worker | null = null;
let current: Job | null = null;
const waiting: Job[] = [];

function finish(outcome: { email?: Email; error?: string | Error }): void {
  const job = current;
  current = null;
  if (job) {
    if (outcome.email) job.resolve(outcome.email);
    else job.reject(outcome.error instanceof Error ? outcome.error : new Error(outcome.error ?? 'the message could not be parsed'));
  }
  next();
}

function start(): Worker {
  const worker = new Worker(THREAD, { eval: true, workerData: { postalMime } });
  worker.on('message', (outcome: { email?: Email; error?: string }) => finish(outcome));
  const died = (error: Error) => {
    if (thread !== worker) return;
    thread = null;
    finish({ error });
  };
  worker.on('error', died);
  worker.on('exit', (code) => died(new Error(`the MIME parsing thread stopped (exit code ${code})`)));
  return worker;
}

function next(): void {
  if (current) return;
  current = waiting.shift() ?? null;
  if (!current) {
    thread?.unref();
    return;
  }
  thread ??= start();
  thread.ref();
  thread.postMessage({ raw: current.raw, options: current.options });
}

/** PostalMime.parse(raw, options), on the parsing thread: the message is copied there, the result back (its attachments' bytes moved). */
export function parseMime(raw: Uint8Array, options: PostalMimeOptions = {}): Promise<Email> {
  return new Promise((resolve, reject) => {
    waiting.push({ raw, options, resolve, reject });
    next();
  });
}
