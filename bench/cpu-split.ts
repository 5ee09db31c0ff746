/**
 * Where the machine's CPU went during a phase: this process's threads by name (the main thread,
 * libuv's pool, where signing runs, V8's helpers), and the other processes by what they run (the
 * database's backends, the sink, the load generator). Read from /proc, so Linux only; elsewhere empty.
 */
import { readdirSync, readFileSync } from 'node:fs';

type Snapshot = Map<string, number>;

const TICKS_PER_SECOND = 100;

/** utime + stime of a /proc stat line, in clock ticks (fields 14 and 15, after the command in parentheses). */
function ticksOf(statLine: string): { name: string; ticks: number } {
  const open = statLine.indexOf('(');
  const close = statLine.lastIndexOf(')');
  const fields = statLine.slice(close + 2).split(' ');
  return { name: statLine.slice(open + 1, close), ticks: Number(fields[11]) + Number(fields[12]) };
}

const read = (file: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
};

function processLabel(pid: string, name: string): string {
  const cmdline = (read(`/proc/${pid}/cmdline`) ?? '').replaceAll('\0', ' ');
  const script = /bench\/[\w/-]+\.ts/.exec(cmdline)?.[0];
  return script ? `process ${script}` : name.startsWith('postgres') ? 'postgres backends' : `process ${name}`;
}

function snapshot(): Snapshot {
  const totals: Snapshot = new Map();
  const add = (key: string, ticks: number) => totals.set(key, (totals.get(key) ?? 0) + ticks);
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return totals;
  }
  for (const pid of pids) {
    if (pid === String(process.pid)) {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const stat = read(`/proc/${pid}/task/${tid}/stat`);
        if (!stat) continue;
        const { name, ticks } = ticksOf(stat);
        add(tid === pid ? 'this process: main thread' : `this process: ${name.replace(/\d+$/, '').trim()}`, ticks);
      }
      continue;
    }
    const stat = read(`/proc/${pid}/stat`);
    if (!stat) continue;
    const { name, ticks } = ticksOf(stat);
    if (ticks > 0) add(processLabel(pid, name), ticks);
  }
  return totals;
}

/** Starts counting; the function it answers gives the CPU seconds each part used since, the busiest first. */
export function startCpuSplit(): () => Array<{ part: string; seconds: number }> {
  const before = snapshot();
  return () => [...snapshot()]
    .map(([part, ticks]) => ({ part, seconds: (ticks - (before.get(part) ?? 0)) / TICKS_PER_SECOND }))
    .filter((entry) => entry.seconds >= 0.05)
    .sort((a, b) => b.seconds - a.seconds);
}
