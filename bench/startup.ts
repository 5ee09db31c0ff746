/**
 * Startup: from spawning `npm start` (and `node dist/main.js`, the same without npm) to the first
 * 200 from /health, on the embedded database, each run in a process group of its own, stopped with
 * SIGTERM before the next. Fresh: an empty DATA_DIR each run. Warm: one DATA_DIR that a first start
 * has created. Also timed: the line naming every port ('ready: …'), which comes once the SMTP
 * listeners and the workers run too. dist/ is built first, so no run builds it.
 *
 * `tsx bench/startup.ts [runs]` prints the result as JSON.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

type Command = 'npm start' | 'node dist/main.js';
const COMMANDS: Record<Command, [string, string[]]> = {
  'npm start': ['npm', ['start']],
  'node dist/main.js': [process.execPath, ['dist/main.js']],
};
// Bounds for a start that hangs, not for a slow one.
const START_LIMIT_MS = 120_000;
const POLL_MS = 20;

type Run = { healthMs: number; readyMs: number };
type Series = { runs: Run[]; healthMedianMs: number; readyMedianMs: number };

export type StartupBenchResult = {
  database: 'pglite';
  runs: number;
  fresh: Record<Command, Series>;
  warm: Record<Command, Series>;
  loadAverage: string;
};

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).status === 200;
  } catch {
    return false;
  }
}

async function startOnce(command: Command, dataDir: string): Promise<Run> {
  const [file, args] = COMMANDS[command];
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: String(port),
    INBOUND_SMTP_PORT: String(await freePort()),
    SMTP_SUBMISSION_PORT: String(await freePort()),
    SMTP_SUBMISSION_TLS_PORT: String(await freePort()),
    LOG_LEVEL: 'info',
  };
  delete env.DATABASE_URL;
  const started = performance.now();
  const child = spawn(file, args, { env, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let stderr = '';
  let readyMs: number | undefined;
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    if (readyMs === undefined && stderr.includes('"msg":"ready: ')) readyMs = performance.now() - started;
  });
  let gone = false;
  void exited.then(() => (gone = true));
  try {
    let healthMs: number | undefined;
    while (healthMs === undefined || readyMs === undefined) {
      if (gone) throw new Error(`${command} exited before it was ready: ${stderr}`);
      if (performance.now() - started > START_LIMIT_MS) throw new Error(`${command} was not ready within ${START_LIMIT_MS} ms: ${stderr}`);
      if (healthMs === undefined && (await healthy(`http://127.0.0.1:${port}/health`))) healthMs = performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    return { healthMs: Math.round(healthMs), readyMs: Math.round(readyMs) };
  } finally {
    if (!gone) process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

function series(runs: Run[]): Series {
  return { runs, healthMedianMs: median(runs.map((r) => r.healthMs)), readyMedianMs: median(runs.map((r) => r.readyMs)) };
}

export async function startupBench(runs: number): Promise<StartupBenchResult> {
  await promisify(execFile)(process.execPath, ['scripts/build.mjs']);
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'mailroom-startup-'));
  try {
    const fresh = {} as Record<Command, Series>;
    const warm = {} as Record<Command, Series>;
    for (const command of Object.keys(COMMANDS) as Command[]) {
      const freshRuns: Run[] = [];
      for (let i = 0; i < runs; i++) freshRuns.push(await startOnce(command, path.join(scratch, `${command}-fresh-${i}`)));
      fresh[command] = series(freshRuns);
      // The first fresh run's DATA_DIR, started again.
      const warmDir = path.join(scratch, `${command}-fresh-0`);
      const warmRuns: Run[] = [];
      for (let i = 0; i < runs; i++) warmRuns.push(await startOnce(command, warmDir));
      warm[command] = series(warmRuns);
    }
    return { database: 'pglite', runs, fresh, warm, loadAverage: os.loadavg()[0]!.toFixed(1) };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await startupBench(Number(process.argv[2] ?? 5)), null, 2));
}
