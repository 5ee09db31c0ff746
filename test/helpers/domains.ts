import { expect } from 'vitest';
import { startDnsServer, type TestDnsServer } from './dns-server.js';
import { expectOk, startTestServer, type TestServer } from './server.js';
import { waitFor } from './wait.js';

/** A loopback DNS server, a test server resolving through it, and a team to act as. */
export async function startServerWithDns(
  env: Record<string, string> = {},
  options: Parameters<typeof startTestServer>[1] = {},
): Promise<{ dns: TestDnsServer; server: TestServer; teamId: number; key: string; stop(): Promise<void> }> {
  const dns = await startDnsServer();
  const server = await startTestServer({ DNS_SERVERS: dns.address, ...env }, options);
  const { teamId, apiKey: key } = await server.team();
  return {
    dns,
    server,
    teamId,
    key,
    stop: async () => {
      await server.stop();
      await dns.close();
    },
  };
}

/** Hours, as the DOMAIN_*_HOURS variables take them, for a span given in milliseconds. */
export const hoursEnv = (ms: number) => String(ms / 3_600_000);

/** Polls GET /v1/domains/{id} until the domain satisfies the predicate; fails after the timeout. */
export function waitForDomain(server: Pick<TestServer, 'call'>, key: string, id: number, predicate: (domain: any) => boolean, timeoutMs?: number): Promise<any> {
  return waitFor(`domain ${id} in the expected state`, () => expectOk(server, key, 'GET', `/v1/domains/${id}`), predicate, timeoutMs);
}

export async function createDomain(server: Pick<TestServer, 'call'>, key: string, name: string) {
  const res = await server.call('POST', '/v1/domains', { key, body: { name, region: 'us-east-1' } });
  expect(res.status).toBe(200);
  return res.body;
}

/**
 * A domain of the team marked verified in the database, for tests about sending rather than DNS
 * (test/domain-verification.db.test.ts proves the real way there).
 */
export async function verifiedDomain(server: Pick<TestServer, 'call' | 'deps'>, key: string, name: string) {
  const domain = await createDomain(server, key, name);
  await server.deps.db
    .updateTable('domains')
    .set({ status: 'SUCCESS', dkim_status: 'SUCCESS', spf_status: 'SUCCESS', mx_status: 'SUCCESS', dmarc_status: 'SUCCESS' })
    .where('id', '=', domain.id)
    .execute();
  return { ...domain, status: 'SUCCESS' };
}

/** A domain verified the real way: its records served by the loopback DNS server, then checked. */
export async function dnsVerifiedDomain(server: Pick<TestServer, 'call'>, key: string, dns: { serve(domain: any): void }, name: string) {
  const domain = await createDomain(server, key, name);
  dns.serve(domain);
  expect((await server.call('PUT', `/v1/domains/${domain.id}/verify`, { key })).status).toBe(200);
  return waitForDomain(server, key, domain.id, (d) => d.status === 'SUCCESS');
}
