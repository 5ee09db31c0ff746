import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, runCli, tempDir } from './helpers/processes.js';

// Arguments are checked before the CLI opens any store: an empty DATA_DIR is all it needs.
describe("the CLI's arguments", () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    dataDir = await tempDir();
    env = childEnv({ DATA_DIR: dataDir });
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('bad arguments get an error naming the flag and exit status 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [[], /Missing command/],
      [['team', 'frobnicate'], /Unknown command "team frobnicate"/],
      [['team', 'create'], /--name is required/],
      [['team', 'create', '--name'], /--name needs a value/],
      [['key', 'create', '--team', 'abc'], /--team must be a positive integer/],
      [['key', 'create', '--team', '1', '--permission', 'admin'], /--permission must be one of: full, sending/],
      [['key', 'list', '--team', '1', '--nme', 'x'], /Unknown flag --nme/],
      [['team', 'set-rate-limit', '--team', '1', '--per-second', '0'], /--per-second must be a positive integer or "default"/],
    ];
    const runs = await Promise.all(cases.map(([args]) => runCli(args, env)));
    runs.forEach((run, i) => {
      expect(run.code, cases[i]![0].join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.failure).toEqual({ error: expect.stringMatching(cases[i]![1]), code: 'USAGE_ERROR' });
    });
  });

  it('--help describes every command and the output contract', async () => {
    const run = await runCli(['--help'], env);
    expect(run.code).toBe(0);
    for (const command of ['team create', 'team set-rate-limit', 'key create', 'key list', 'key revoke', 'user invite', 'user list', 'user set-role', 'user reset-two-factor', 'user remove', 'secret rotate']) {
      expect(run.stdout).toContain(command);
    }
    expect(run.stdout).toContain('exit');
  });
});
