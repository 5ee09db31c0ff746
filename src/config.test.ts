import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

const refusal = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was taken');
};

describe('direct delivery settings', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-config-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('SMTP_URL takes "direct" beside relay URLs; the HELO name defaults to the public host, an address literal for an IP', () => {
    expect(loadConfig({ SMTP_URL: 'direct', PUBLIC_URL: 'https://mail.example.com' }).direct).toMatchObject({
      mxPort: 25, ehloName: 'mail.example.com', requireTls: false, maxConnections: 10, messagesPerConnection: 100, ratePerMinute: null, timeoutScale: 1, policy: {},
    });
    expect(loadConfig({ SMTP_URL: 'direct' }).direct.ehloName).toBe('[127.0.0.1]');
    expect(refusal({ SMTP_URL: 'directly' })).toContain('SMTP_URL');
  });

  it('IP_POOLS lists named pools of addresses, each with an optional HELO name; anything else names the variable', () => {
    expect(loadConfig({ IP_POOLS: 'transactional=192.0.2.10/tx.example.com,192.0.2.11; bulk=[2001:db8::5]/bulk.example.com' }).ipPools).toEqual({
      transactional: [{ address: '192.0.2.10', ehloName: 'tx.example.com' }, { address: '192.0.2.11', ehloName: null }],
      bulk: [{ address: '2001:db8::5', ehloName: 'bulk.example.com' }],
    });
    expect(refusal({ IP_POOLS: 'a=not-an-ip' })).toMatch(/^Invalid configuration: IP_POOLS: pool a must list IP addresses/);
    expect(refusal({ IP_POOLS: 'a=192.0.2.1;a=192.0.2.2' })).toContain('IP_POOLS');
    expect(refusal({ IP_POOLS: 'a=' })).toContain('IP_POOLS');
  });

  it('DELIVERY_POLICY_FILE is read at start; a file that cannot be read or holds an unknown limit stops the start naming it', async () => {
    const good = path.join(dir, 'policy.json');
    await writeFile(good, JSON.stringify({ 'google.com': { maxConnections: 5, perMinute: 600 } }));
    expect(loadConfig({ DELIVERY_POLICY_FILE: good }).direct.policy).toEqual({ 'google.com': { maxConnections: 5, perMinute: 600 } });
    const bad = path.join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ 'google.com': { maxConnectionz: 5 } }));
    expect(refusal({ DELIVERY_POLICY_FILE: bad })).toMatch(/DELIVERY_POLICY_FILE: .*bad\.json/);
    expect(refusal({ DELIVERY_POLICY_FILE: path.join(dir, 'missing.json') })).toMatch(/DELIVERY_POLICY_FILE: cannot read/);
  });
});
