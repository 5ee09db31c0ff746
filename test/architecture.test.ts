import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve('src');

/**
 * The rooms of src/, top to bottom (docs/architecture.md draws the same picture). A
 * file may import its own room and the rooms of lower layers; rooms side by side in one layer
 * never import each other. A top-level file is a room of its own; `cli.ts` belongs to `cli/`.
 */
const LAYERS: string[][] = [
  ['main'],
  ['cli', 'server'],
  ['dashboard'],
  ['api', 'submission'],
  ['http'],
  ['feedback'],
  ['inbound'],
  ['services'],
  ['people'],
  ['automations'],
  ['campaigns'],
  ['sending'],
  ['domains'],
  ['webhooks'],
  ['events'],
  ['retention'],
  ['deps'],
  ['workers'],
  ['data'],
  ['db'],
  ['audience'],
  ['scheduling', 'validation', 'secret'],
  ['mail', 'smtp', 'config', 'errors', 'log', 'ids', 'metrics'],
  ['reuse-for'],
];
const layerOf = new Map(LAYERS.flatMap((rooms, layer) => rooms.map((room) => [room, layer] as const)));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

/** The room of a source file, or of the file an import names (which names `.js` for the `.ts` it loads). */
export function roomOf(file: string): string {
  const [first, ...rest] = path.relative(SRC, file).split(path.sep);
  return rest.length > 0 ? first! : first!.replace(/\.[jt]s$/, '');
}

/** Every module a file names in an import or export (static, type-only or dynamic). */
function specifiers(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s+'([^']+)'/g), ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)];
  return found.map((match) => match[1]!);
}

const files = sourceFiles(SRC);
const imports = files.flatMap((file) =>
  specifiers(file).map((specifier) => ({
    file: path.relative(SRC, file),
    from: roomOf(file),
    specifier,
    to: specifier.startsWith('.') ? roomOf(path.resolve(path.dirname(file), specifier)) : null,
  })),
);

describe('the house is one-way', () => {
  it('every folder and top-level file of src/, and every room an import names, has its place in the layers', () => {
    const unplaced = [...new Set([...files.map(roomOf), ...imports.flatMap((edge) => (edge.to === null ? [] : [edge.to]))])].filter((room) => !layerOf.has(room));
    expect(unplaced).toEqual([]);
    expect(imports.length).toBeGreaterThan(100);
  });

  it('a relative import of a top-level file names the room of that file', () => {
    expect(roomOf(path.join(SRC, 'deps.js'))).toBe('deps');
    expect(roomOf(path.join(SRC, 'workers', 'signals.js'))).toBe('workers');
  });

  it('imports flow down the layers: nothing imports a room above it or beside it', () => {
    const upward = imports
      .filter((edge) => edge.to !== null && edge.to !== edge.from && layerOf.get(edge.to)! <= layerOf.get(edge.from)!)
      .map((edge) => `${edge.file} (${edge.from}) imports ${edge.specifier} (${edge.to})`);
    expect(upward).toEqual([]);
  });

  it('mail/ is pure: it imports only itself and node built-ins, never the database, the network or the config', () => {
    const outside = imports
      .filter((edge) => edge.from === 'mail' && !(edge.to === 'mail' || edge.specifier === 'node:crypto' || edge.specifier === 'node:url'))
      .map((edge) => `${edge.file} imports ${edge.specifier}`);
    expect(outside).toEqual([]);
  });

  it('SQL is written only in data/ and db/', () => {
    const querying = imports
      .filter((edge) => edge.specifier === 'kysely' && edge.from !== 'data' && edge.from !== 'db')
      .map((edge) => edge.file);
    expect(querying).toEqual([]);
  });
});
