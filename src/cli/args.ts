import { usageError } from './failure.js';

export type SplitArgs = { words: string[]; flags: Map<string, string> };

/**
 * Splits argv into the command words that come before the first flag and the flags after them,
 * each given as `--flag VALUE` or `--flag=VALUE` (the second form for values starting with "--").
 */
export function splitArgs(argv: readonly string[]): SplitArgs {
  const words: string[] = [];
  const flags = new Map<string, string>();
  let i = 0;
  while (i < argv.length && !argv[i]!.startsWith('-')) words.push(argv[i++]!);
  while (i < argv.length) {
    const arg = argv[i++]!;
    const match = /^--([a-z][a-z-]*)(?:=([\s\S]*))?$/.exec(arg);
    if (!match) throw usageError(`Unexpected argument "${arg}": expected --flag VALUE`);
    const flag = match[1]!;
    if (flags.has(flag)) throw usageError(`--${flag} is given more than once`);
    const next = argv[i];
    const value = match[2] ?? (next !== undefined && !next.startsWith('--') ? (i++, next) : undefined);
    if (value === undefined) throw usageError(`--${flag} needs a value`);
    flags.set(flag, value);
  }
  return { words, flags };
}
