import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

/** How the README words one range of package.json's `engines.node`. */
function inWords(range: string): string {
  const caret = /^\^(\d+)\.(\d+)\.0$/.exec(range);
  if (caret) return `${caret[1]}.${caret[2]} or a later ${caret[1]}.x`;
  const atLeast = /^>=(\d+)\.(\d+)\.0$/.exec(range);
  if (atLeast) return `${atLeast[1]}.${atLeast[2]} or later`;
  throw new Error(`no wording for the range ${range}`);
}

describe("the README's Node.js version", () => {
  it('is the one package.json asks for (engines), range by range', async () => {
    const { engines } = JSON.parse(await readFile('package.json', 'utf8'));
    const readme = await readFile('README.md', 'utf8');
    const stated = /needs \*\*Node\.js ([^*]+)\*\*/.exec(readme);
    expect(stated, 'the README says which Node.js it needs').not.toBeNull();
    expect(stated![1]).toBe(engines.node.split('||').map((range: string) => inWords(range.trim())).join(', or '));
  });
});
