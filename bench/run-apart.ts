import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/** Runs node with `args` (a script and its arguments) in a process of its own, and answers what it printed as JSON. */
export async function runNodeForJson<T>(args: string[]): Promise<T> {
  const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as T;
}

/**
 * Runs the script of this process again, with `args`, loaded the same way (its bundle under
 * `npm run bench`, tsx when run by hand): runNodeForJson.
 */
export const runThisScriptApart = <T>(args: string[]) => runNodeForJson<T>([...process.execArgv, process.argv[1]!, ...args]);
