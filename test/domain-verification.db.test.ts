import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scheduleCheckNow } from '../src/data/domains.js';
import { startDomainWorker } from '../src/domains/worker.js';
import { assertVerifiedSender } from '../src/services/verified-sender.js';
import { expectLegacyApiError } from './helpers/api-error.js';
import { RCODE, startDnsServer, startSilentDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { createDomain, hoursEnv, startServerWithDns, waitForDomain } from './helpers/domains.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const MX_HOST = 'inbound.mailroom.test';
const WINDOW_MS = 3000;

const checked = (domain: { lastCheckedTime: string | null }) => domain.lastCheckedTime !== null;
const statuses = (domain: { dnsRecords: { status: string }[] }) => domain.dnsRecords.map((r) => r.status);

describe('verification against real DNS', () => {
  let dns: TestDnsServer;
  let server: TestServer;
  let teamId: number;
  let key: string;

  let stop: () => Promise<void>;

  beforeAll(async () => {
    ({ dns, server, teamId, key, stop } = await startServerWithDns({
      DNS_TIMEOUT_MS: '200',
      INBOUND_MX_HOST: MX_HOST,
      DOMAIN_WORKER_POLL_MS: '50',
      DOMAIN_VERIFICATION_WINDOW_HOURS: hoursEnv(WINDOW_MS),
      DOMAIN_RECHECK_HOURS: hoursEnv(1000),
    }));
  });
  afterAll(() => stop());

  const verify = async (id: number) => {
    const res = await server.call('PUT', `/v1/domains/${id}/verify`, { key });
    expect(res.status).toBe(200);
    return res.body;
  };

  it('records created as the API lists them verify the domain, at the apex, on a subdomain and under an IDN', async () => {
    const senders = { 'apex.test': 'News <news@apex.test>', 'shop.example.co.uk': 'shop@shop.example.co.uk', 'bücher.test': 'Verlag <info@BÜCHER.test>' };
    for (const [name, from] of Object.entries(senders)) {
      const domain = await createDomain(server, key, name);
      dns.serve(domain);
      const startedAt = Date.now();
      await verify(domain.id);
      const verified = await waitForDomain(server, key, domain.id, (d) => d.status === 'SUCCESS');
      expect(verified).toMatchObject({
        dkimStatus: 'SUCCESS', spfDetails: 'SUCCESS', dmarcAdded: true, isVerifying: false, verificationError: null, errorMessage: null,
      });
      expect(statuses(verified)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
      expect(Date.parse(verified.lastCheckedTime)).toBeGreaterThanOrEqual(startedAt - 1000);
      await expect(assertVerifiedSender(server.deps, teamId, from)).resolves.toBeTruthy();
      // The DKIM value is longer than a TXT character-string: DNS served it split, the check joined it.
      const [served] = await dns.resolver.resolveTxt(`${domain.dnsRecords[0].name}.${domain.name.replace(/^shop\./, '')}`);
      expect(served!.length).toBeGreaterThan(1);
    }
  });

  it('verify answers PENDING at once; with nothing in DNS the domain stays PENDING, then FAILED when the window passes', async () => {
    const domain = await createDomain(server, key, 'nothing.test');
    const started = Date.now();
    await verify(domain.id);
    const pending = (await server.call('GET', `/v1/domains/${domain.id}`, { key })).body;
    expect(pending).toMatchObject({ status: 'PENDING', isVerifying: true });

    const first = await waitForDomain(server, key, domain.id, checked);
    expect(first).toMatchObject({ status: 'PENDING', isVerifying: true, dmarcAdded: false });
    expect(statuses(first)).toEqual(['PENDING', 'PENDING', 'PENDING', 'NOT_STARTED']);
    expect(first.verificationError).toContain('DKIM: no DKIM record');
    expect(first.verificationError).toContain('SPF: no SPF record');
    expect(first.verificationError).toContain(`MX: no MX record at mail.nothing.test`);

    const failed = await waitForDomain(server, key, domain.id, (d) => d.status !== 'PENDING', WINDOW_MS + 5000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(WINDOW_MS);
    expect(failed).toMatchObject({ status: 'FAILED', isVerifying: false, dkimStatus: 'FAILED', spfDetails: 'FAILED' });
    expect(failed.errorMessage).toContain('verification window ended');
    await expect(assertVerifiedSender(server.deps, teamId, 'a@nothing.test')).rejects.toThrow(/not verified \(status FAILED\)/);
  });

  it('a DKIM record with another key, an SPF without the include and an MX elsewhere are each reported', async () => {
    const domain = await createDomain(server, key, 'wrong.test');
    dns.serve(domain);
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    dns.set(domain.dnsRecords[0].name + '.wrong.test', [{ type: 'TXT', value: `v=DKIM1; k=rsa; p=${otherKey}` }]);
    await verify(domain.id);
    const dkimOnly = await waitForDomain(server, key, domain.id, checked);
    expect(dkimOnly).toMatchObject({ status: 'PENDING', dkimStatus: 'FAILED', spfDetails: 'SUCCESS' });
    expect(statuses(dkimOnly)).toEqual(['FAILED', 'SUCCESS', 'SUCCESS', 'SUCCESS']);
    expect(dkimOnly.verificationError).toMatch(/^DKIM: the DKIM record at mr\w+\._domainkey\.wrong\.test has another public key/);

    dns.set('mail.wrong.test', [
      { type: 'TXT', value: 'v=spf1 include:_spf.elsewhere.example -all' },
      { type: 'MX', exchange: 'mx.elsewhere.example', priority: 10 },
    ]);
    await verify(domain.id);
    const all = await waitForDomain(server, key, domain.id, (d) => d.lastCheckedTime !== dkimOnly.lastCheckedTime);
    expect(statuses(all)).toEqual(['FAILED', 'FAILED', 'FAILED', 'SUCCESS']);
    expect(all.verificationError).toContain(`does not contain include:_spf.${MX_HOST}`);
    expect(all.verificationError).toContain(`points at mx.elsewhere.example, not ${MX_HOST}`);
  });

  it('SERVFAIL and REFUSED are TEMPORARY_FAILURE, retried, and never FAILED however long they last', async () => {
    const domain = await createDomain(server, key, 'servfail.test');
    dns.serve(domain);
    try {
      for (const rcode of [RCODE.SERVFAIL, RCODE.REFUSED]) {
        dns.failWith(rcode);
        const before = (await server.call('GET', `/v1/domains/${domain.id}`, { key })).body.lastCheckedTime;
        await verify(domain.id);
        const failing = await waitForDomain(server, key, domain.id, (d) => d.lastCheckedTime !== before);
        expect(failing).toMatchObject({ status: 'TEMPORARY_FAILURE', isVerifying: true, dkimStatus: 'TEMPORARY_FAILURE' });
        expect(failing.verificationError).toContain(rcode === RCODE.SERVFAIL ? 'ESERVFAIL' : 'EREFUSED');
        expect(failing.errorMessage).toContain('retrying at');
      }
      // Past the window, the worker checks again (at the window's end) and still does not fail it.
      const retried = await waitForDomain(server, key, domain.id, (d) => Date.parse(d.lastCheckedTime) > Date.parse(d.createdAt) + WINDOW_MS, WINDOW_MS + 5000);
      expect(retried.status).toBe('TEMPORARY_FAILURE');
    } finally {
      dns.failWith(null);
    }
    await verify(domain.id);
    await waitForDomain(server, key, domain.id, (d) => d.status === 'SUCCESS');
  });
});

describe('re-checks of verified domains', () => {
  let dns: TestDnsServer;
  let server: TestServer;
  let teamId: number;
  let key: string;

  let stop: () => Promise<void>;

  beforeAll(async () => {
    ({ dns, server, teamId, key, stop } = await startServerWithDns({
      DNS_TIMEOUT_MS: '200',
      INBOUND_MX_HOST: MX_HOST,
      DOMAIN_WORKER_POLL_MS: '50',
      DOMAIN_RECHECK_HOURS: hoursEnv(500),
    }));
  });
  afterAll(() => stop());

  it('a record removed after success is reported and stops sending until it is back', async () => {
    const domain = await createDomain(server, key, 'removed.test');
    dns.serve(domain);
    await server.call('PUT', `/v1/domains/${domain.id}/verify`, { key });
    await waitForDomain(server, key, domain.id, (d) => d.status === 'SUCCESS');
    const { body: book } = await server.call('POST', '/v1/contactBooks', { key, body: { name: 'News' } });
    const optIn = { doubleOptInEnabled: true, doubleOptInFrom: 'news@removed.test' };
    expect((await server.call('PATCH', `/v1/contactBooks/${book.id}`, { key, body: optIn })).status).toBe(200);

    const dkimHost = `${domain.dnsRecords[0].name}.removed.test`;
    dns.remove(dkimHost);
    const reported = await waitForDomain(server, key, domain.id, (d) => d.status !== 'SUCCESS');
    expect(reported).toMatchObject({ status: 'PENDING', isVerifying: true, dkimStatus: 'PENDING', spfDetails: 'SUCCESS' });
    expect(reported.verificationError).toBe(`DKIM: no DKIM record (TXT "v=DKIM1; …") at ${dkimHost}`);
    expect(reported.errorMessage).toContain('sending from this domain is stopped until it is back');
    await expect(assertVerifiedSender(server.deps, teamId, 'news@removed.test')).rejects.toThrow(/status PENDING/);
    const refused = await server.call('PATCH', `/v1/contactBooks/${book.id}`, { key, body: { ...optIn, doubleOptInFrom: 'hello@removed.test' } });
    // Contact-book PATCH keeps the interface description's older error shape: `error` is the message.
    expectLegacyApiError(refused, 400, 'VALIDATION_ERROR', 'an opt-in sender on an unverified domain');
    expect(refused.body.error).toContain('removed.test is not verified (status PENDING)');

    dns.serve(domain);
    await server.call('PUT', `/v1/domains/${domain.id}/verify`, { key });
    const back = await waitForDomain(server, key, domain.id, (d) => d.status === 'SUCCESS');
    expect(back).toMatchObject({ verificationError: null, errorMessage: null, isVerifying: false });
    await expect(assertVerifiedSender(server.deps, teamId, 'news@removed.test')).resolves.toBeTruthy();
  });

  it('a verified domain stays verified while DNS does not answer, and says so', async () => {
    const domain = await createDomain(server, key, 'outage.test');
    dns.serve(domain);
    await server.call('PUT', `/v1/domains/${domain.id}/verify`, { key });
    const verified = await waitForDomain(server, key, domain.id, (d) => d.status === 'SUCCESS');
    dns.failWith(RCODE.SERVFAIL);
    try {
      const during = await waitForDomain(server, key, domain.id, (d) => d.lastCheckedTime !== verified.lastCheckedTime);
      expect(during).toMatchObject({ status: 'SUCCESS', dkimStatus: 'TEMPORARY_FAILURE' });
      expect(during.errorMessage).toContain('stays verified');
    } finally {
      dns.failWith(null);
    }
  });
});

describe('an unreachable DNS server', () => {
  it('times out into TEMPORARY_FAILURE, never FAILED', async () => {
    const silent = await startSilentDnsServer();
    const server = await startTestServer({
      DNS_SERVERS: silent.address,
      DNS_TIMEOUT_MS: '100',
      DOMAIN_WORKER_POLL_MS: '50',
      DOMAIN_VERIFICATION_WINDOW_HOURS: hoursEnv(1000),
    });
    try {
      const { apiKey: key } = await server.team();
      const domain = await createDomain(server, key, 'down.test');
      await server.call('PUT', `/v1/domains/${domain.id}/verify`, { key });
      const down = await waitForDomain(server, key, domain.id, checked);
      expect(down).toMatchObject({ status: 'TEMPORARY_FAILURE', isVerifying: true });
      expect(statuses(down)).toEqual(['TEMPORARY_FAILURE', 'TEMPORARY_FAILURE', 'TEMPORARY_FAILURE', 'TEMPORARY_FAILURE']);
      expect(down.verificationError).toContain('did not answer in time (ETIMEOUT)');
      const later = await waitForDomain(server, key, domain.id, (d) => d.lastCheckedTime !== down.lastCheckedTime);
      expect(later.status).toBe('TEMPORARY_FAILURE');
    } finally {
      await server.stop();
      await silent.close();
    }
  });
});

describe('workers', () => {
  let dns: TestDnsServer;
  let server: TestServer;
  let key: string;

  beforeAll(async () => {
    dns = await startDnsServer();
    server = await startTestServer({
      DNS_SERVERS: dns.address,
      INBOUND_MX_HOST: MX_HOST,
      DOMAIN_WORKER_POLL_MS: '20',
      AUTO_VERIFY: 'true',
    });
    ({ apiKey: key } = await server.team());
  });
  afterAll(async () => {
    await server.stop();
    await dns.close();
  });

  it('with AUTO_VERIFY a new domain answers NOT_STARTED and is checked without a verify call', async () => {
    const domain = await createDomain(server, key, 'auto.test');
    expect(domain.status).toBe('NOT_STARTED');
    const first = await waitForDomain(server, key, domain.id, checked);
    expect(first.status).toBe('PENDING');
  });

  it('a due domain is checked by exactly one of several workers', async () => {
    const extra = [startDomainWorker(server.deps), startDomainWorker(server.deps)];
    try {
      const { teamId, apiKey } = await server.team('Many');
      const created = [];
      for (let i = 0; i < 8; i++) created.push(await createDomain(server, apiKey, `many-${i}.test`));
      for (const domain of created) dns.serve(domain);
      await Promise.all(created.map((d) => waitForDomain(server, apiKey, d.id, checked)));
      dns.queries.length = 0;
      const now = new Date();
      for (const domain of created) await scheduleCheckNow(server.deps.db, teamId, domain.id, now, true);
      await Promise.all(created.map((d) => waitForDomain(server, apiKey, d.id, (x) => x.status === 'SUCCESS')));
      for (const domain of created) {
        expect(dns.queries.filter((q) => q === `MX mail.${domain.name}`), domain.name).toHaveLength(1);
      }
    } finally {
      await Promise.all(extra.map((worker) => worker.stop()));
    }
  });
});
