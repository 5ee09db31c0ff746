import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/**
 * Runs the script of this process again, with `args`, in a process of its own loaded the same way
 * (its bundle under `npm run bench`, tsx when run by hand), and answers what it printed as JSON.
 */
export async function runThisScriptApart<T>(args: string[]): Promise<T> {
  const { stdout } = await promisify(execFile)(process.execPath, [...process.execArgv, process.argv[1]!, ...args], { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as T;
}
