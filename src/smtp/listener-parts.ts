import { createWriteStream } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
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

/**
 * The message of a DATA command read the way big ones should be: written to a file of its own in
 * `dir` (private, removed before this answers) as it arrives, then read back whole once. So a
 * 25 MiB message costs one 25 MiB buffer, not its chunks and then their concatenation, and a slow
 * sender's half-sent message costs no memory at all. Null once it went over the size limit.
 */
export async function spoolMessage(stream: SMTPServerDataStream, dir: string): Promise<Buffer | null> {
  const file = path.join(dir, `inbound-${randomUUID()}.eml`);
  try {
    try {
      // Past the size limit the rest is read and thrown away, never written.
      const withinLimit = new Transform({ transform: (chunk, _encoding, done) => done(null, stream.sizeExceeded ? undefined : chunk) });
      await pipeline(stream, withinLimit, createWriteStream(file, { mode: 0o600 }));
    } catch (error) {
      // smtp-server fails the stream only when the connection closes in the middle of the message.
      throw new MessageCutOff((error as Error).message);
    }
    return stream.sizeExceeded ? null : await readFile(file);
  } finally {
    await rm(file, { force: true });
  }
}
