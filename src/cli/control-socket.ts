import { unlink } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import type { Logger } from '../log.js';
import { CliError, describeFailure, type Failure } from './failure.js';

/**
 * The protocol between the CLI and a server that holds the embedded database: the client sends
 * one JSON line `{ "command": [argv…] }`, the server answers one JSON line
 * `{ "ok": true, "result": … }` or `{ "ok": false, "error": { "error", "code" } }` and closes.
 * Access is guarded by file permissions: the socket is created 0600 inside DATA_DIR.
 */
export type Reply = { ok: true; result: unknown } | { ok: false; error: Failure };

export const controlSocketPath = (dataDir: string) => path.join(dataDir, 'mailroom.sock');

const MAX_REQUEST_BYTES = 64 * 1024;
const MAX_REPLY_BYTES = 16 * 1024 * 1024;
// A client that connects and does not send its request in time is dropped.
const IDLE_TIMEOUT_MS = 10_000;
const REPLY_TIMEOUT_MS = 30_000;
// sockaddr_un holds 108 bytes on Linux and 104 elsewhere, the final NUL included; Node truncates
// a longer path silently, which would bind a socket at another name.
const MAX_SOCKET_PATH_BYTES = process.platform === 'linux' ? 107 : 103;

const requestSchema = z.object({ command: z.array(z.string().max(4096)).max(64) });

export type ControlSocket = { close(): Promise<void> };

/**
 * Listens for CLI commands. The caller must hold the data-directory lock: a socket file already
 * there was left by a server that died, and is replaced.
 */
export async function serveControlSocket(
  socketPath: string,
  execute: (command: string[]) => Promise<unknown>,
  log: Logger,
): Promise<ControlSocket> {
  checkLength(socketPath);
  await unlink(socketPath).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
  const waiting = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    // A client that goes away mid-answer must not take the server down with it.
    socket.on('error', () => {});
    socket.setTimeout(IDLE_TIMEOUT_MS, () => socket.destroy());
    waiting.add(socket);
    readLine(socket, MAX_REQUEST_BYTES).then(
      async (line) => {
        waiting.delete(socket);
        // The command may wait behind other work on the database; only the request was on a clock.
        socket.setTimeout(0);
        socket.end(`${JSON.stringify(await answer(line, execute, log))}\n`);
      },
      (error: unknown) => {
        waiting.delete(socket);
        socket.end(`${JSON.stringify({ ok: false, error: describeFailure(error) })}\n`);
      },
    );
  });

  // The umask covers the bind itself (listen binds synchronously), so the socket never exists
  // with wider permissions, whatever those of DATA_DIR.
  const umask = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(umask);
  }

  return {
    close: () =>
      new Promise<void>((resolve) => {
        // Commands under way finish and answer; connections that have not sent one are dropped.
        server.close(() => resolve());
        for (const socket of waiting) socket.destroy();
      }),
  };
}

async function answer(line: string, execute: (command: string[]) => Promise<unknown>, log: Logger): Promise<Reply> {
  let request: z.output<typeof requestSchema>;
  try {
    request = requestSchema.parse(JSON.parse(line));
  } catch {
    return { ok: false, error: { error: 'Malformed request: expected one JSON line {"command": [strings]}', code: 'BAD_REQUEST' } };
  }
  try {
    return { ok: true, result: await execute(request.command) };
  } catch (error) {
    const failure = describeFailure(error);
    if (failure.code === 'INTERNAL_ERROR') log.error('CLI command failed', { command: request.command[0], error });
    return { ok: false, error: failure };
  }
}

/**
 * Hands a command to the server listening on the socket and returns its reply, or null when no
 * server listens there (no socket file, or one left by a server that is gone).
 */
export async function sendCommand(socketPath: string, command: readonly string[]): Promise<Reply | null> {
  checkLength(socketPath);
  const socket = net.createConnection(socketPath);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
  } catch (error) {
    socket.destroy();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ECONNREFUSED') return null;
    if (code === 'EACCES') {
      throw new CliError('PERMISSION_DENIED', `Permission denied on ${socketPath}: run the CLI as the user that runs the server`);
    }
    throw error;
  }
  socket.setTimeout(REPLY_TIMEOUT_MS, () =>
    socket.destroy(new CliError('TIMEOUT', `The server did not answer on ${socketPath} within ${REPLY_TIMEOUT_MS / 1000} s; the command may still complete`)),
  );
  socket.write(`${JSON.stringify({ command })}\n`);
  try {
    const reply = JSON.parse(await readLine(socket, MAX_REPLY_BYTES)) as Reply;
    if (typeof reply?.ok !== 'boolean') throw new Error('unexpected reply');
    return reply;
  } catch (error) {
    if (error instanceof CliError) throw error;
    // The command may have run: the CLI reports the doubt instead of retrying it.
    throw new CliError('INTERNAL_ERROR', `The server on ${socketPath} did not answer properly (${(error as Error).message}); check with "key list" before retrying`);
  } finally {
    socket.destroy();
  }
}

/** Resolves with the first line the peer sends (without its newline); rejects past maxBytes. */
function readLine(socket: net.Socket, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error: Error | null, line?: string) => {
      socket.off('data', onData).off('end', onClose).off('close', onClose).off('error', onError);
      if (error) reject(error);
      else resolve(line!);
    };
    const onData = (chunk: Buffer) => {
      const newline = chunk.indexOf(0x0a);
      const part = newline === -1 ? chunk : chunk.subarray(0, newline);
      chunks.push(part);
      size += part.length;
      if (size > maxBytes) finish(new CliError('PAYLOAD_TOO_LARGE', `Message exceeds ${maxBytes} bytes`));
      else if (newline !== -1) finish(null, Buffer.concat(chunks).toString('utf8'));
    };
    const onClose = () => finish(new Error('connection closed before a complete line'));
    const onError = (error: Error) => finish(error);
    socket.on('data', onData).on('end', onClose).on('close', onClose).on('error', onError);
  });
}

function checkLength(socketPath: string) {
  const bytes = Buffer.byteLength(socketPath);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new CliError(
      'CONFIG_ERROR',
      `DATA_DIR is too deep for its control socket: ${socketPath} is ${bytes} bytes, Unix sockets allow ${MAX_SOCKET_PATH_BYTES}; use a shorter DATA_DIR`,
    );
  }
}
