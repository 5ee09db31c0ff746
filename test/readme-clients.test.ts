import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { README_URL, sectionBlocks } from './helpers/markdown-examples.js';
import { startTestServer, type TestServer } from './helpers/server.js';

/**
 * The README's "With the official clients" snippets, run as written against a server on the
 * capture transport: the usesend-js one as a TypeScript module beside this checkout's node_modules,
 * with its key in MAILROOM_KEY; the Python one with the `usesend` package, where python3 has it,
 * its `"mr_…"` replaced by the key. Only the address changes: the README's http://127.0.0.1:3000
 * becomes the test server's. A line after each prints what the snippet got back.
 */

const SECTION = '## With the official clients';

/** python3 with the official `usesend` package: the Python snippet runs only where both are. */
const PYTHON = spawnSync('python3', ['-c', ''], { stdio: 'ignore' }).status === 0;
const PYTHON_USESEND = PYTHON && spawnSync('python3', ['-c', 'import usesend'], { stdio: 'ignore' }).status === 0;

let server: TestServer;
let key: string;
let dir: string;

beforeAll(async () => {
  server = await startTestServer();
  ({ apiKey: key } = await server.team('Clients'));
  dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-readme-clients-'));
  // The snippet imports usesend-js as an application that installed it would.
  await symlink(path.resolve('node_modules'), path.join(dir, 'node_modules'), 'dir');
});
afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The only block of `lang` in the section. */
async function snippet(lang: string): Promise<string> {
  const blocks = await sectionBlocks('README.md', SECTION, lang);
  expect(blocks, `one ${lang} block in "${SECTION}"`).toHaveLength(1);
  expect(blocks[0], 'it calls the README address').toContain(README_URL);
  return blocks[0]!.replaceAll(README_URL, server.url);
}

/** The email the snippet sent, once settled: sent from the sandbox, delivered to the capture. */
async function expectDelivered(emailId: string) {
  const email = await waitForEmail(server, key, emailId, settled);
  expect(email).toMatchObject({ from: 'hello@sandbox.mailroom.localhost', subject: 'Hello from Mailroom' });
  expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
}

describe("the README's official-client examples", () => {
  it('the usesend-js snippet, run as written, sends an email that is delivered, and gets { data: { emailId }, error: null } back', async () => {
    const code = await snippet('ts');
    await writeFile(path.join(dir, 'send.mts'), `${code}\nconsole.log(JSON.stringify({ data, error }));\n`);
    const { stdout } = await promisify(execFile)(path.resolve('node_modules/.bin/tsx'), ['send.mts'], {
      cwd: dir,
      env: { PATH: process.env.PATH, MAILROOM_KEY: key },
      timeout: 60_000,
    });
    const { data, error } = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(error).toBeNull();
    expect(data.emailId).toMatch(/^\w{8,}$/);
    await expectDelivered(data.emailId);
  });

  it.skipIf(!PYTHON)('the Python snippet is valid Python', async () => {
    const code = await snippet('python');
    const check = spawnSync('python3', ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], { input: code, encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  });

  it.skipIf(!PYTHON_USESEND)('the Python snippet, run as written with the usesend package, sends an email that is delivered', async () => {
    const code = await snippet('python');
    expect(code, 'the snippet has a key to replace').toContain('"mr_…"');
    await writeFile(path.join(dir, 'send.py'), `${code.replace('"mr_…"', JSON.stringify(key))}\nimport json\nprint(json.dumps(data))\n`);
    const { stdout } = await promisify(execFile)('python3', ['send.py'], { cwd: dir, timeout: 60_000 });
    const data = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(data.emailId).toMatch(/^\w{8,}$/);
    await expectDelivered(data.emailId);
  });
});
