import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { verifiedDomain } from './helpers/domains.js';
import { sectionBlocks } from './helpers/markdown-examples.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { deliverRaw } from './helpers/smtp-client.js';
import { waitFor } from './helpers/wait.js';
import { closedPort } from './helpers/webhook-receiver.js';

/**
 * docs/inbound.md's example receiver, run as written (node, no packages) against a server that
 * receives mail: it must accept Mailroom's signed email.received calls, print each message once,
 * and refuse a call whose signature is wrong.
 */

let dns: TestDnsServer;
let server: TestServer;
let receiver: ChildProcess;
let dir: string;
let output = '';
let url: string;

/** The `js` block of the guide's "An example receiver" section. */
async function exampleReceiver(): Promise<string> {
  const [block] = await sectionBlocks('docs/inbound.md', '### An example receiver', 'js');
  expect(block, 'a js block in it').toBeDefined();
  return block!;
}

beforeAll(async () => {
  // A DNS server of its own: the listener's SPF, DKIM and DMARC lookups never leave the machine.
  dns = await startDnsServer();
  server = await startTestServer({ DNS_SERVERS: dns.address, WEBHOOK_POLL_MS: '50', WEBHOOK_RETRY_BASE_MS: '50' }, { inbound: true });
  dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-receiver-'));
  await writeFile(path.join(dir, 'receiver.mjs'), await exampleReceiver());
}, 30_000);
afterAll(async () => {
  receiver?.kill('SIGKILL');
  await server?.stop();
  await dns?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the inbound guide's example receiver", () => {
  it('verifies the signature of each email.received call, prints the sender and subject once however often a call comes, and refuses a forged call', async () => {
    const { apiKey: key } = await server.team('Receiver');
    const ok = (method: string, urlPath: string, body?: unknown) => expectOk(server, key, method, urlPath, body);
    await verifiedDomain(server, key, 'example.com');
    const port = await closedPort();
    url = `http://127.0.0.1:${port}/`;
    const webhook = await ok('POST', '/v1/webhooks', { url, events: ['email.received'] });

    receiver = spawn(process.execPath, ['receiver.mjs'], { cwd: dir, env: { PATH: process.env.PATH, MAILROOM_WEBHOOK_SECRET: webhook.secret, PORT: String(port) } });
    receiver.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    receiver.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitFor('the receiver listening', () => fetch(url, { method: 'POST', body: '{}' }).then((r) => r.status).catch(() => 0), (status) => status !== 0);

    await ok('POST', '/v1/inbound/routes', { match: 'support@example.com', action: 'webhook' });
    const raw = ['From: Ann <ann@sender.test>', 'To: support@example.com', 'Subject: Where is my order?', 'Message-ID: <1@sender.test>', '', 'It has not come.', ''].join('\r\n');
    expect(await deliverRaw(server.inboundPort!, { from: 'ann@sender.test', to: ['support@example.com'] }, raw)).toMatchObject({ accepted: true });

    const [call] = await waitFor('the call delivered', async () => (await ok('GET', `/v1/webhooks/${webhook.id}/calls`)).data, (calls: any[]) => calls[0]?.status === 'DELIVERED', 20_000);
    expect(call.type).toBe('email.received');
    expect(output).toBe('From ann@sender.test: Where is my order?\n');

    // The same call again (as after a lost answer): answered 200, printed once.
    await ok('POST', `/v1/webhooks/${webhook.id}/calls/${call.id}/retry`);
    await waitFor('the retry delivered', () => ok('GET', `/v1/webhooks/${webhook.id}/calls/${call.id}`), (again) => again.status === 'DELIVERED' && again.attempt === 2);
    expect(output).toBe('From ann@sender.test: Where is my order?\n');

    // A call signed with another secret, or not signed at all, is refused.
    const body = JSON.stringify({ id: 'forged', type: 'email.received', data: { from: 'mallory@evil.test', subject: 'Forged' } });
    const headers = { 'webhook-id': 'forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}` };
    expect((await fetch(url, { method: 'POST', headers, body })).status).toBe(401);
    expect((await fetch(url, { method: 'POST', body })).status).toBe(401);
    expect(output).not.toContain('Forged');
  });
});
