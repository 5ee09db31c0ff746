import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { expect } from 'vitest';

/**
 * The examples of a guide, read from its text, so that a test of them fails when the guide's own
 * example breaks: the fenced blocks of one section, and a runner for its shell blocks.
 */

/** The address the README's examples call; a test swaps in its own server's. */
export const README_URL = 'http://127.0.0.1:3000';

/**
 * The fenced `lang` blocks of the section of `file` whose heading line starts with `heading` (e.g.
 * `## Quick start`), in order, up to the next heading of the same level or above. A block indented
 * in a list item comes back unindented, as a reader copies it.
 */
export async function sectionBlocks(file: string, heading: string, lang: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.startsWith(heading));
  expect(start, `${file} has a section "${heading}"`).toBeGreaterThan(-1);
  const level = /^#+/.exec(heading)![0].length;
  // A `#` line inside a fenced block is a shell comment, not a heading.
  let fenced = false;
  let end = start + 1;
  for (; end < lines.length; end++) {
    if (/^ *```/.test(lines[end]!)) fenced = !fenced;
    else if (!fenced && /^#+ /.test(lines[end]!) && /^#+/.exec(lines[end]!)![0].length <= level) break;
  }
  const section = `${lines.slice(start, end).join('\n')}\n`;
  return [...section.matchAll(new RegExp(`^( *)\`\`\`${lang}\\n([\\s\\S]*?)^\\1\`\`\`$`, 'gm'))].map(([, indent, body]) =>
    body!.split('\n').map((line) => (line.startsWith(indent!) ? line.slice(indent!.length) : line)).join('\n'),
  );
}

const BLOCK_END = '--- end of block ---';

/**
 * Runs shell blocks as one bash script that stops at the first failing command, each with the
 * README's address swapped for `url`; answers each block's output, then that of `after` (a command
 * run last in the same shell, e.g. to read a variable the blocks set).
 */
export async function runShellBlocks(blocks: string[], env: NodeJS.ProcessEnv, url: string, after = 'true'): Promise<{ outputs: string[]; after: string }> {
  const script = [
    'set -euo pipefail',
    ...blocks.map((block) => `${block.replaceAll(README_URL, url)}\nprintf '\\n%s\\n' '${BLOCK_END}'`),
    after,
  ].join('\n');
  const { stdout } = await promisify(execFile)('bash', ['-c', script], { env, cwd: process.cwd(), timeout: 240_000 });
  const parts = stdout.split(`\n${BLOCK_END}\n`);
  return { outputs: parts.slice(0, -1), after: parts.at(-1)! };
}
