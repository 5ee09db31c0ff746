import { open, readFile, rm, type FileHandle } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { SMTPServer, SMTPServerDataStream } from 'smtp-server';

/** An error smtp-server answers with the given reply code (the message carries the enhanced code). */
export const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

/** The client went away before the end of its message: nothing to store, and no fault of ours. */
export class MessageCutOff extends Error {}

/**
 * The message of a DATA command, or null once it went over the size limit (the rest is read and
 * thrown away: smtp-server refuses only a size declared too big at MAIL, so the caller answers 552).
 */
export function readMessage(stream: SMTPServerDataStream): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => {
      if (!stream.sizeExceeded) chunks.push(chunk);
    });
    // smtp-server fails the stream only when the connection closes in the middle of the message.
    stream.once('error', (error) => reject(new MessageCutOff(error.message)));
    stream.once('end', () => resolve(stream.sizeExceeded ? null : Buffer.concat(chunks)));
  });
}

/** Starts listening; answers the port (the one the OS chose, for 0) and how to stop. */
export async function listen(server: SMTPServer, host: string, port: number): Promise<{ port: number; close(): Promise<void> }> {
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What a message may hold in memory while it arrives; past it, it goes on to a file. */
const IN_MEMORY_BYTES = 1024 * 1024;

/**
 * The message of a DATA command read the way big ones should be: kept in memory up to 1 MiB (most
 * mail), past that written to a file of its own in `dir` (private, removed before this answers)
 * as it arrives, then read back whole once. So a 25 MiB message costs one 25 MiB buffer, not its
 * chunks and then their concatenation, and a slow sender's half-sent message costs little memory.
 * Null once it went over the size limit.
 */
export async function spoolMessage(stream: SMTPServerDataStream, dir: string): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let held = 0;
  let file: { path: string; handle: FileHandle } | undefined;
  const chunksOf = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let ended = false;
  try {
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await chunksOf.next();
      } catch (error) {
        // smtp-server fails the stream only when the connection closes in the middle of the message.
        throw new MessageCutOff((error as Error).message);
      }
      if (next.done) {
        ended = true;
        break;
      }
      // Past the size limit the rest is read and thrown away, never kept.
      if (stream.sizeExceeded) continue;
      if (!file && held + next.value.length <= IN_MEMORY_BYTES) {
        chunks.push(next.value);
        held += next.value.length;
        continue;
      }
      if (!file) {
        const spooled = path.join(dir, `inbound-${randomUUID()}.eml`);
        file = { path: spooled, handle: await open(spooled, 'wx', 0o600) };
        await file.handle.writev(chunks.splice(0));
      }
      await file.handle.write(next.value);
    }
    if (stream.sizeExceeded) return null;
    if (!file) return Buffer.concat(chunks, held);
    await file.handle.close();
    return await readFile(file.path);
  } finally {
    // Left early (a file fault): the rest of the message is not read.
    if (!ended) await chunksOf.return?.();
    if (file) {
      await file.handle.close().catch(() => undefined);
      await rm(file.path, { force: true });
    }
  }
}
