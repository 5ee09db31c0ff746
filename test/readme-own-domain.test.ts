import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { startDnsServer } from './helpers/dns-server.js';
import { verifyDkim } from './helpers/dkim.js';
import { waitForDomain } from './helpers/domains.js';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { runShellBlocks, sectionBlocks } from './helpers/markdown-examples.js';
import { childEnv, cleanUpAfterEach, NPM_START, startServerProcess, tempDir, within } from './helpers/processes.js';
import { apiAt } from './helpers/server.js';
import { startSmtpSink } from './helpers/smtp-sink.js';
import { closedPort } from './helpers/webhook-receiver.js';

/**
 * The README's "Send from your own domain" steps, run as written after its quick start, as a reader
 * goes: `npm start` with the settings of step 1, then each curl of steps 2 and 3 in the same shell
 * state (the quick start's $KEY). Three things stand in for the world: the relay of SMTP_URL is an
 * SMTP server on loopback that takes the same credentials over the same implicit TLS (its
 * self-signed certificate accepted), the DNS provider is a DNS server on loopback (DNS_SERVERS)
 * that serves the records step 2 answers, and the README's http://127.0.0.1:3000 is the port the
 * test's server took.
 */

/**
 * The fields an example's `# {…}` answer shows with a whole value (a number, `[]`, a string), as
 * [name, value]; a string cut short with `…` stands for any string that starts so.
 */
function shownFields(block: string): Array<[string, unknown]> {
  const answers = block.split('\n').filter((line) => line.startsWith('# {'));
  return answers.flatMap((line) => [...line.matchAll(/"(\w+)":("[^"]*"|-?\d+|\[\])/g)].map(([, name, raw]): [string, unknown] => {
    const value = JSON.parse(raw!);
    return [name!, typeof value === 'string' && value.endsWith('…') ? expect.stringMatching(new RegExp(`^${value.slice(0, -1).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`)) : value];
  }));
}

/** Expects the answer printed by a block to be JSON with every field the README shows for it. */
function answerAsShown(block: string, output: string) {
  const answer = JSON.parse(output);
  const shown = shownFields(block);
  expect(shown.length, `the README shows an answer for:\n${block}`).toBeGreaterThan(0);
  for (const [name, value] of shown) expect(answer[name], `"${name}" as the README shows it`).toEqual(value);
  return answer;
}

/** Step 1's block: `NAME=value \` lines, then `npm start`; answers the settings. */
function startSettings(block: string): Record<string, string> {
  const lines = block.trim().split('\n').map((line) => line.replace(/\s*\\$/, '').trim());
  expect(lines.at(-1), 'step 1 ends with npm start').toBe('npm start');
  return Object.fromEntries(lines.slice(0, -1).map((line) => {
    const setting = /^([A-Z_]+)=(\S+)$/.exec(line);
    expect(setting, `a setting: ${line}`).not.toBeNull();
    return [setting![1]!, setting![2]!];
  }));
}

describe("the README's own-domain example", () => {
  const cleanups = cleanUpAfterEach();

  it('sends a verified email: started with its settings (no warning left), the domain added, its records published and checked, then its mail goes out DKIM-signed through the relay', async () => {
    const [, ...quickStart] = await sectionBlocks('README.md', '## Quick start', 'sh');
    const steps = await sectionBlocks('README.md', '## Send from your own domain', 'sh');
    expect(steps, 'step 1 starts, step 2 adds the domain, step 3 verifies and sends').toHaveLength(4);
    const [start, add, verify, send] = steps as [string, string, string, string];

    const dataDir = await tempDir();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const port = String(await closedPort());

    // The quick start first, as the README goes: it makes the team, its key ($KEY) and its sandbox.
    const firstEnv = childEnv({ DATA_DIR: dataDir, DATABASE_URL: null, SMTP_URL: null, PUBLIC_URL: null, PORT: port });
    const first = await startServerProcess(firstEnv, NPM_START);
    const { after: key } = await runShellBlocks(quickStart, firstEnv, first.url, 'printf "%s" "$KEY"');
    expect(key).toMatch(/^\S{16,}$/);
    // Stopped as Ctrl-C in its terminal stops it: the signal goes to npm and to the server alike.
    process.kill(-first.child.pid!, 'SIGINT');
    await within(first.exit, 60_000, 'the quick start server stop');

    // Step 1: started again with its settings; only where the relay is, and the DNS servers, differ.
    const settings = startSettings(start);
    const relay = new URL(settings.SMTP_URL!);
    expect(relay.protocol).toBe('smtps:');
    expect(relay.pathname + relay.search).toBe('');
    const sink = await startSmtpSink({ secure: true, auth: { user: decodeURIComponent(relay.username), pass: decodeURIComponent(relay.password) } });
    cleanups.push(() => sink.close());
    const dns = await startDnsServer();
    cleanups.push(() => dns.close());
    const env = childEnv({
      DATA_DIR: dataDir,
      DATABASE_URL: null,
      PORT: port,
      ...settings,
      SMTP_URL: `${settings.SMTP_URL!.replace(`@${relay.host}`, `@127.0.0.1:${sink.port}`)}/?tls.rejectUnauthorized=false`,
      DNS_SERVERS: dns.address,
      KEY: key,
    });
    const server = await startServerProcess(env, NPM_START);
    cleanups.push(async () => void (await server.stop()));
    const api = apiAt(server.url);
    const run = async (block: string) => (await runShellBlocks([block], env, server.url)).outputs[0]!.trim();

    // Step 2: the domain, with its four records and, set up as step 1 says, no warning.
    const domain = answerAsShown(add, await run(add));
    expect(domain).toMatchObject({ name: 'example.com', status: 'NOT_STARTED', warnings: [] });
    expect(domain.dnsRecords.map((record: { type: string; name: string }) => `${record.type} ${record.name}`)).toEqual([
      `TXT ${domain.dnsRecords[0].name}`, 'TXT mail', 'MX mail', 'TXT _dmarc',
    ]);
    expect(domain.dnsRecords[0].name).toMatch(/^[\w-]+\._domainkey$/);
    // The MX record on INBOUND_MX_HOST, which defaults to PUBLIC_URL's host.
    expect(domain.dnsRecords.find((record: { type: string }) => record.type === 'MX').value).toBe(settings.INBOUND_MX_HOST ?? new URL(settings.PUBLIC_URL!).hostname);

    // The records published at the DNS provider; step 3: checked, then the domain verified.
    dns.serve(domain);
    answerAsShown(verify, await run(verify));
    await waitForDomain(api, key, domain.id, (d) => d.status === 'SUCCESS', 30_000);

    // Then mail from it: through the relay, over TLS, with the relay's credentials, signed for the domain.
    const { emailId } = answerAsShown(send, await run(send));
    const email = await waitForEmail(api, key, emailId, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    const [message] = sink.forEmail(emailId);
    expect(message).toMatchObject({ secure: true, user: decodeURIComponent(relay.username), rcptTo: [email.to].flat() });
    expect(message!.mailFrom).toMatch(/@mail\.example\.com$/);
    expect(message!.raw.toString()).toMatch(/^From: hello@example\.com\r$/m);
    const [dkim] = await verifyDkim(dns, message!.raw);
    expect(dkim).toMatchObject({ signingDomain: 'example.com', status: { result: 'pass' } });
  });
});
