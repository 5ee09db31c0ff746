/** Load from autocannon's CLI, run in a process of its own so that the server's event loop does only the server's work. */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

export type LoadBatch = {
  /** Answered 2xx: the only answers counted as done. */
  accepted: number;
  seconds: number;
  /** Answers other than 2xx, and requests that got no answer. */
  errors: number;
  p50: number;
  p99: number;
  /** CPU time of this process meanwhile (the server's, where it runs here). */
  cpuMicros: number;
};

export async function loadBatch(options: { url: string; headers: Record<string, string>; body: string; count: number; connections: number }): Promise<LoadBatch> {
  const cpuBefore = process.cpuUsage();
  const headers = Object.entries(options.headers).flatMap(([name, value]) => ['-H', `${name}=${value}`]);
  const { stdout } = await promisify(execFile)(
    path.resolve('node_modules/.bin/autocannon'),
    // Sampled every 10 ms: autocannon ends a run on a sample tick, so at its default of a second a
    // batch's time is rounded up to whole seconds and its rate understated by up to one in four.
    ['-j', '-L', '10', '-c', String(options.connections), '-a', String(options.count), '-m', 'POST', ...headers, '-b', options.body, options.url],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const cpu = process.cpuUsage(cpuBefore);
  const result = JSON.parse(stdout) as { duration: number; '2xx': number; non2xx: number; errors: number; latency: { p50: number; p99: number } };
  return {
    accepted: result['2xx'], seconds: result.duration, errors: result.non2xx + result.errors, p50: result.latency.p50, p99: result.latency.p99,
    cpuMicros: cpu.user + cpu.system,
  };
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
