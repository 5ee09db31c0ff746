import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, inject } from 'vitest';

/**
 * Real server and CLI processes for the operator-facing tests: src/ run with tsx's loader (one
 * process, which gets its signals itself), or `npm start` itself where a test runs what a user
 * types. Every child runs in its own process group, so killAll() leaves nothing behind.
 */

// Bounds for a child that hangs, not for a slow one: each waits on the child's own signal (its
// 'listening' line, its exit), and a start on a busy machine takes many times its usual few seconds.
const START_TIMEOUT_MS = 120_000;
const CLI_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 60_000;

const running = new Set<ChildProcess>();

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

export const tempDir = () => mkdtemp(path.join(os.tmpdir(), 'mailroom-proc-'));

/**
 * A DATA_DIR for children that may as well find the embedded database there already, migrated:
 * creating and migrating one takes a child seconds. On PostgreSQL runs it is empty, as the
 * children keep their data in the database DATABASE_URL names.
 */
export async function seededDataDir(): Promise<string> {
  const dir = await tempDir();
  const template = inject('pgliteDataDir');
  if (template) await cp(template, dir, { recursive: true });
  return dir;
}

/**
 * The environment of a child: this process's, minus any database setting (each test says which
 * * database it wants), on a loopback port chosen by the OS, with no SMTP listeners.
 */
export function childEnv(settings: { DATA_DIR: string; DATABASE_URL?: string | null; [name: string]: string | null | undefined }) {
  const env: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', INBOUND_SMTP_PORT: '0', SMTP_SUBMISSION_PORT: '0', SMTP_SUBMISSION_TLS_PORT: '0' };
  delete env.DATABASE_URL;
  for (const [name, value] of Object.entries(settings)) {
    if (value == null) delete env[name];
    else env[name] = value;
  }
  return env;
}

type Spawned = { child: ChildProcess; stdout: () => string; stderr: () => string; exit: Promise<Exit> };

/** A program and its arguments. */
export type Command = readonly [string, readonly string[]];

/** A script of src/ run with tsx's loader, as the tests start servers and CLI runs. */
const tsx = (script: string, args: readonly string[] = []): Command => [process.execPath, ['--import', 'tsx', script, ...args]];

/** `npm start` itself, as a user types it: it runs dist/, rebuilt first where src/ changed. */
export const NPM_START: Command = ['npm', ['start']];

function spawnChild([file, args]: Command, env: NodeJS.ProcessEnv): Spawned {
  const child = spawn(file, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exit = new Promise<Exit>((resolve) =>
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

/**
 * For the calling test file: after each test, every child process still running is killed, then
 * the cleanups the test pushed run, newest first. Answers the list to push them on.
 */
export function cleanUpAfterEach(): Array<() => Promise<unknown>> {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    killAll();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return cleanups;
}

/** SIGKILLs every child still running, with anything it started. */
export function killAll() {
  for (const child of running) killGroup(child);
}

export function killGroup(child: ChildProcess) {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export type CliRun = {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed, when the command succeeded with JSON (--help answers text). */
  json: any;
  /** The { error, code } line that ends stderr, when the command failed. */
  failure: { error: string; code: string } | null;
};

export async function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const run = spawnChild(tsx('src/cli.ts', args), env);
  const { code } = await within(run.exit, CLI_TIMEOUT_MS, `cli ${args.join(' ')}`);
  const stdout = run.stdout();
  const stderr = run.stderr();
  const lastLine = stderr.trim().split('\n').at(-1) ?? '';
  return {
    code,
    stdout,
    stderr,
    json: code === 0 && /^[[{]/.test(stdout) ? JSON.parse(stdout) : null,
    failure: code !== 0 && lastLine.startsWith('{') ? JSON.parse(lastLine) : null,
  };
}

/** Runs a CLI command that must succeed and returns its JSON output. */
export async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<any> {
  const run = await runCli(args, env);
  if (run.code !== 0) throw new Error(`cli ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return run.json;
}

export type ServerProcess = {
  url: string;
  child: ChildProcess;
  stderr: () => string;
  exit: Promise<Exit>;
  /** SIGTERM, as a service manager stops it; resolves with the exit. */
  stop(): Promise<Exit>;
};

/** Starts `src/main.ts` (or `command`) and resolves once it logs that it is listening. */
export async function startServerProcess(env: NodeJS.ProcessEnv, command = tsx('src/main.ts')): Promise<ServerProcess> {
  const server = spawnChild(command, env);
  const listening = new Promise<string>((resolve, reject) => {
    const onData = () => {
      const url = listeningUrl(server.stderr());
      if (url) {
        server.child.stderr!.off('data', onData);
        resolve(url);
      }
    };
    server.child.stderr!.on('data', onData);
    void server.exit.then((exit) =>
      reject(new Error(`server exited (${exit.code ?? exit.signal}) before listening: ${server.stderr()}`)),
    );
  });
  try {
    const url = await within(listening, START_TIMEOUT_MS, 'server start');
    return {
      url,
      child: server.child,
      stderr: server.stderr,
      exit: server.exit,
      stop: () => {
        server.child.kill('SIGTERM');
        return within(server.exit, STOP_TIMEOUT_MS, 'server stop');
      },
    };
  } catch (error) {
    killGroup(server.child);
    throw error;
  }
}

/** Starts `src/main.ts` expecting it to refuse; resolves with its exit and stderr. */
export async function failedServerStart(env: NodeJS.ProcessEnv): Promise<Exit & { stderr: string }> {
  const server = spawnChild(tsx('src/main.ts'), env);
  const exit = await within(server.exit, START_TIMEOUT_MS, 'server refusal');
  return { ...exit, stderr: server.stderr() };
}

/** The JSON log lines a process wrote to stderr. */
export function logLines(stderr: string): Array<Record<string, any>> {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line));
}

/** The error lines among them. */
export const errorsLogged = (stderr: string) => logLines(stderr).filter((line) => line.level === 'error');

function listeningUrl(stderr: string): string | undefined {
  return logLines(stderr.slice(0, stderr.lastIndexOf('\n') + 1)).find((line) => line.msg === 'listening')?.url;
}
