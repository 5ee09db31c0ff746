import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorFields, expectApiError } from './helpers/api-error.js';
import { verifyDkim } from './helpers/dkim.js';
import { startDnsServer } from './helpers/dns-server.js';
import { verifiedDomain } from './helpers/domains.js';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { childEnv, cleanUpAfterEach, cli, seededDataDir, startServerProcess } from './helpers/processes.js';
import { apiAt, expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { plainMessage, SubmissionClient } from './helpers/submission-client.js';
import { waitFor } from './helpers/wait.js';

/**
 * The sandbox domain: every team can send from `sandbox.mailroom.localhost` at once, with no DNS,
 * while mail goes to the capture transport; its mail is never relayed.
 */

const SANDBOX = 'sandbox.mailroom.localhost';
const FROM = `hello@${SANDBOX}`;
const REFUSAL =
  'sandbox.mailroom.localhost is the sandbox domain: it only works with the capture transport (no SMTP_URL), as its mail is never relayed; add and verify your own domain to send for real';

const hello = (to: string, from = FROM) => ({ from, to, subject: 'Hello from the sandbox', text: 'It works.' });

/** The team's domains by name, as GET /v1/domains lists them. */
async function domainsOf(api: Pick<TestServer, 'call'>, key: string): Promise<Map<string, any>> {
  const listed: any[] = await expectOk(api, key, 'GET', '/v1/domains');
  return new Map(listed.map((domain) => [domain.name, domain]));
}

describe('the quick start, with real processes', () => {
  const cleanups = cleanUpAfterEach();

  it('on a fresh install, npm start, team create and one POST send from the sandbox: the email is DELIVERED and its DKIM-signed .eml is in the outbox', async () => {
    const dataDir = await seededDataDir();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    // As `npm start` runs with nothing set: the embedded database, the capture transport.
    const env = childEnv({ DATA_DIR: dataDir, DATABASE_URL: null, SMTP_URL: null, DISPATCH_POLL_MS: '50' });
    const server = await startServerProcess(env);
    const { apiKey: key } = await cli(['team', 'create', '--name', 'Acme'], env);
    const api = apiAt(server.url);

    const { emailId } = await expectOk(api, key, 'POST', '/v1/emails', hello('ada@example.com'));
    const email = await waitForEmail(api, key, emailId, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);

    const eml = await readFile(path.join(dataDir, 'outbox', `${emailId}.eml`));
    expect(eml.toString()).toMatch(/^From: hello@sandbox\.mailroom\.localhost\r$/m);
    // Signed with the sandbox domain's own key, which GET /v1/domains shows as for any domain.
    const sandbox = (await domainsOf(api, key)).get(SANDBOX);
    expect(sandbox).toMatchObject({ sandbox: true, status: 'SUCCESS', dnsRecords: [], id: email.domainId });
    const selector = /\bs=([^;\s]+)/.exec(eml.toString())![1]!;
    const dns = await startDnsServer();
    cleanups.push(() => dns.close());
    dns.set(`${selector}._domainkey.${SANDBOX}`, [{ type: 'TXT', value: `v=DKIM1; k=rsa; p=${sandbox.publicKey}` }]);
    expect((await verifyDkim(dns, eml))[0]).toMatchObject({ signingDomain: SANDBOX, status: { result: 'pass' } });
    expect((await server.stop()).code).toBe(0);
  });

  it('mail accepted from the sandbox while mail was captured is FAILED, never relayed, once the service restarts with a relay', async () => {
    const dataDir = await seededDataDir();
    const sink = await startSmtpSink();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }), () => sink.close());
    // An API-only process accepts mail and sends none: the email waits in the database.
    const accepting = await startServerProcess(childEnv({ DATA_DIR: dataDir, SMTP_URL: null, ROLE: 'api' }));
    const { apiKey: key } = await cli(['team', 'create', '--name', 'Acme'], childEnv({ DATA_DIR: dataDir }));
    const { emailId } = await expectOk(apiAt(accepting.url), key, 'POST', '/v1/emails', hello('ada@example.com'));
    expect((await accepting.stop()).code).toBe(0);

    const relaying = await startServerProcess(childEnv({ DATA_DIR: dataDir, SMTP_URL: sink.url, DISPATCH_POLL_MS: '50' }));
    const email = await waitForEmail(apiAt(relaying.url), key, emailId, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', 'FAILED']);
    expect(email.emailEvents.at(-1).data).toEqual({ reason: REFUSAL });
    expect((await relaying.stop()).code).toBe(0);
    expect(sink.received).toEqual([]);
  });
});

describe('with the capture transport', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ DISPATCH_POLL_MS: '20', CAMPAIGN_POLL_MS: '20' });
  });
  afterAll(() => server?.stop());

  const outbox = (emailId: string) => readFile(path.join(server.deps.config.dataDir, 'outbox', `${emailId}.eml`), 'utf8');

  it('templates, campaigns, double opt-in confirmations and the simulator recipients work from the sandbox as from any domain, all captured', async () => {
    const { apiKey: key } = await server.team();
    const ok = (method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);

    const template = await ok('POST', '/v1/templates', { name: 'Welcome', subject: 'Welcome, {{name}}', html: '<p>Hi {{name}}</p>' });
    const templated = await ok('POST', '/v1/emails', { from: FROM, to: 'ada@example.com', templateId: template.id, variables: { name: 'Ada' } });
    await ok('POST', '/v1/emails', hello('bounce@simulator.test'));
    await ok('POST', '/v1/emails', hello('complaint@simulator.test'));

    const book = await ok('POST', '/v1/contactBooks', { name: 'Readers' });
    await ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, [{ email: 'c1@example.org' }, { email: 'c2@example.org' }]);
    const campaign = await ok('POST', '/v1/campaigns', {
      name: 'News', from: FROM, subject: 'News', contactBookId: book.id, html: '<p>News</p>{{unsubscribeUrl}}', sendNow: true,
    });

    const optIn = await ok('POST', '/v1/contactBooks', { name: 'Opt-in', doubleOptInEnabled: true, doubleOptInFrom: `Lists <lists@${SANDBOX}>` });
    await ok('POST', `/v1/contactBooks/${optIn.id}/contacts`, { email: 'new@example.org' });

    const sandboxId = (await domainsOf(server, key)).get(SANDBOX).id;
    const all = await waitForMail(server, key, 6);
    expect(all.every((email: { domainId: number }) => email.domainId === sandboxId)).toBe(true);
    const byRecipient = new Map(all.map((email: { to: string; latestStatus: string; id: string }) => [email.to, email]));
    expect(Object.fromEntries([...byRecipient].map(([to, email]: [string, any]) => [to, email.latestStatus]))).toEqual({
      'ada@example.com': 'DELIVERED', 'bounce@simulator.test': 'BOUNCED', 'complaint@simulator.test': 'COMPLAINED',
      'c1@example.org': 'DELIVERED', 'c2@example.org': 'DELIVERED', 'new@example.org': 'DELIVERED',
    });
    expect(await outbox(templated.emailId)).toContain('Hi Ada');
    expect(await outbox((byRecipient.get('c1@example.org') as { id: string }).id)).toMatch(/^Subject: News\r$/m);
    expect(await outbox((byRecipient.get('new@example.org') as { id: string }).id)).toMatch(/^From: Lists <lists@sandbox\.mailroom\.localhost>\r$/m);
    expect((await ok('GET', `/v1/campaigns/${campaign.id}`)).status).toBe('SENT');
  });

  it("each team has a sandbox of its own: another team's sandbox domain and its mail are never visible", async () => {
    const ours = await server.team('Ours');
    const theirs = await server.team('Theirs');
    const ourSandbox = (await domainsOf(server, ours.apiKey)).get(SANDBOX);
    const theirSandbox = (await domainsOf(server, theirs.apiKey)).get(SANDBOX);
    expect(ourSandbox.id).not.toBe(theirSandbox.id);
    expect([ourSandbox.teamId, theirSandbox.teamId]).toEqual([ours.teamId, theirs.teamId]);

    const { emailId } = await expectOk(server, ours.apiKey, 'POST', '/v1/emails', hello('ada@example.com'));
    expect((await waitForEmail(server, ours.apiKey, emailId, settled)).domainId).toBe(ourSandbox.id);
    const { emailId: theirEmail } = await expectOk(server, theirs.apiKey, 'POST', '/v1/emails', hello('bob@example.com'));
    expect((await waitForEmail(server, theirs.apiKey, theirEmail, settled)).domainId).toBe(theirSandbox.id);

    const as = (method: string, path: string, body?: unknown) => server.call(method, path, { key: theirs.apiKey, body });
    expect((await as('GET', `/v1/emails/${emailId}`)).status).toBe(404);
    expect((await as('GET', '/v1/emails')).body.data.map((email: { id: string }) => email.id)).toEqual([theirEmail]);
    expect((await as('GET', `/v1/emails?domainId=${ourSandbox.id}`)).status).toBe(404);
    for (const [method, path, body] of [
      ['GET', `/v1/domains/${ourSandbox.id}`], ['PATCH', `/v1/domains/${ourSandbox.id}`, { openTracking: true }],
      ['PUT', `/v1/domains/${ourSandbox.id}/verify`], ['DELETE', `/v1/domains/${ourSandbox.id}`],
    ] as const) {
      expectApiError(await as(method, path, body), 404, 'NOT_FOUND', `${method} ${path}`);
    }
    expect((await domainsOf(server, ours.apiKey)).get(SANDBOX)).toEqual(ourSandbox);
  });

  it('the sandbox domain cannot be deleted or added by name, verifying it changes nothing, and a key may be scoped to it', async () => {
    const { teamId, apiKey: key } = await server.team();
    const sandbox = (await domainsOf(server, key)).get(SANDBOX);
    expect(sandbox).toMatchObject({ sandbox: true, status: 'SUCCESS', isVerifying: false, lastCheckedTime: null, dnsRecords: [] });

    const deleted = await server.call('DELETE', `/v1/domains/${sandbox.id}`, { key });
    expectApiError(deleted, 409, 'CONFLICT');
    expect(deleted.body.error.message).toBe(`Domain ${SANDBOX} is the team's sandbox domain and cannot be deleted; its mail is only ever captured, never sent out`);

    expect(await expectOk(server, key, 'PUT', `/v1/domains/${sandbox.id}/verify`)).toEqual({
      message: `Domain ${SANDBOX} is the sandbox domain: verified by construction, it has no DNS records to check`,
    });
    for (const name of [SANDBOX, 'Sandbox.Mailroom.Localhost']) {
      const added = await server.call('POST', '/v1/domains', { key, body: { name } });
      expectApiError(added, 400, 'VALIDATION_ERROR', name);
      expect(added.body.error.details).toEqual([{ path: 'name', message: `${SANDBOX} is the sandbox domain, which every team already has: send from it without adding it` }]);
    }
    expect(await expectOk(server, key, 'GET', `/v1/domains/${sandbox.id}`)).toEqual(sandbox);
    expect([...(await domainsOf(server, key)).keys()]).toEqual([SANDBOX]);

    const scoped = await server.key(teamId, 'full', sandbox.id);
    const own = await verifiedDomain(server, key, 'own.sandbox-scope.test');
    expect((await server.call('POST', '/v1/emails', { key: scoped, body: hello('ada@example.com') })).status).toBe(200);
    expectApiError(await server.call('POST', '/v1/emails', { key: scoped, body: hello('ada@example.com', `news@${own.name}`) }), 403, 'FORBIDDEN');
    expect([...(await domainsOf(server, key)).keys()]).toEqual([own.name, SANDBOX]);
  });
});

/** Polls GET /v1/emails until the team has `count` emails, all settled; answers them. */
async function waitForMail(server: TestServer, key: string, count: number): Promise<any[]> {
  return waitFor(
    `${count} emails settled`,
    async () => (await expectOk(server, key, 'GET', '/v1/emails')).data as any[],
    (emails) => emails.length === count && emails.every(settled),
  );
}

describe('with a relay (SMTP_URL set)', () => {
  let sink: SmtpSink;
  let server: TestServer;

  beforeAll(async () => {
    sink = await startSmtpSink();
    server = await startTestServer({ SMTP_URL: sink.url }, { submission: true });
  });
  afterAll(async () => {
    await server?.stop();
    await sink?.close();
  });

  it('sandbox mail is refused at every entrance with 400 saying why and what to do, and nothing is stored or relayed', async () => {
    const { apiKey: key } = await server.team();
    const refused = async (method: string, path: string, body: unknown, field: string) => {
      const res = await server.call(method, path, { key, body });
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(errorFields(res).details, `${method} ${path}`).toEqual([{ path: field, message: REFUSAL }]);
    };
    await refused('POST', '/v1/emails', hello('ada@example.com'), 'from');
    await refused('POST', '/v1/emails/batch', [hello('ada@example.com')], '[0].from');
    const template = await expectOk(server, key, 'POST', '/v1/templates', { name: 'Welcome', subject: 'Welcome', html: '<p>Hi</p>' });
    await refused('POST', '/v1/emails', { from: FROM, to: 'ada@example.com', templateId: template.id }, 'from');
    const book = await expectOk(server, key, 'POST', '/v1/contactBooks', { name: 'Readers' });
    await expectOk(server, key, 'POST', `/v1/contactBooks/${book.id}/contacts`, { email: 'c1@example.org' });
    await refused('POST', '/v1/campaigns', { name: 'News', from: FROM, subject: 'News', contactBookId: book.id, html: '<p>x</p>{{unsubscribeUrl}}', sendNow: true }, 'from');
    const optIn = { doubleOptInEnabled: true, doubleOptInFrom: FROM };
    await refused('POST', '/v1/contactBooks', { name: 'Opt-in', ...optIn }, 'doubleOptInFrom');
    await refused('PATCH', `/v1/contactBooks/${book.id}`, optIn, 'doubleOptInFrom');

    const client = await SubmissionClient.connect(server.submissionPort!);
    await client.secureHello();
    expect((await client.authPlain(key)).code).toBe(235);
    const reply = await client.send(FROM, ['ada@example.com'], plainMessage({ from: FROM, to: 'ada@example.com' }));
    await client.quit();
    expect(reply.code).toBe(553);
    expect(reply.text).toBe(`5.7.1 from: ${REFUSAL}`);

    expect((await expectOk(server, key, 'GET', '/v1/emails')).count).toBe(0);
    expect((await expectOk(server, key, 'GET', '/v1/campaigns')).campaigns).toEqual([]);
    expect((await expectOk(server, key, 'GET', '/v1/contactBooks')).map((b: { name: string }) => b.name)).toEqual(['Readers']);
    expect((await expectOk(server, key, 'GET', `/v1/contactBooks/${book.id}`)).doubleOptInEnabled).toBe(false);
    expect(sink.received).toEqual([]);
  });
});
