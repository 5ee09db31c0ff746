import { createPublicKey } from 'node:crypto';
import { UseSend } from 'usesend-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError } from './helpers/api-error.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { createDomain } from './helpers/domains.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let dns: TestDnsServer;
let server: TestServer;
let teamId: number;
let key: string;

const MX_HOST = 'inbound.mailroom.test';

beforeAll(async () => {
  // Verify calls look records up here, never on the network.
  dns = await startDnsServer();
  server = await startTestServer({ DNS_SERVERS: dns.address, REGIONS: 'us-east-1, eu-west-1', INBOUND_MX_HOST: MX_HOST });
  ({ teamId, apiKey: key } = await server.team());
});
afterAll(async () => {
  await server.stop();
  await dns.close();
});

const DOMAIN_FIELDS = [
  'id', 'name', 'teamId', 'status', 'sandbox', 'region', 'clickTracking', 'openTracking', 'publicKey', 'dkimStatus', 'spfDetails',
  'dmarcAdded', 'isVerifying', 'errorMessage', 'subdomain', 'verificationError', 'lastCheckedTime', 'createdAt',
  'updatedAt', 'dnsRecords', 'warnings', 'ipPool', 'warmup',
];

const domainCount = async (team: number) =>
  Number((await server.deps.db.selectFrom('domains').select((eb) => eb.fn.countAll().as('n')).where('team_id', '=', team).executeTakeFirstOrThrow()).n);

describe('domains', () => {
  it('a new domain is the whole Domain resource, NOT_STARTED, with the four records to create', async () => {
    const res = await server.call('POST', '/v1/domains', { key, body: { name: 'Acme.Test', region: 'eu-west-1' } });
    expect(res.status).toBe(200);
    const domain = res.body;
    expect(Object.keys(domain).sort()).toEqual([...DOMAIN_FIELDS].sort());
    expect(domain).toMatchObject({
      name: 'acme.test', teamId, status: 'NOT_STARTED', sandbox: false, region: 'eu-west-1', clickTracking: false, openTracking: false,
      dkimStatus: 'NOT_STARTED', spfDetails: 'NOT_STARTED', dmarcAdded: false, isVerifying: false, errorMessage: null,
      subdomain: null, verificationError: null, lastCheckedTime: null, ipPool: 'default',
      warmup: { enabled: false, day: null, limitToday: null, sentToday: null, dailyLimits: null },
    });
    expect(Number.isInteger(domain.id)).toBe(true);
    expect(domain.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const publicKey = createPublicKey({ key: Buffer.from(domain.publicKey, 'base64'), format: 'der', type: 'spki' });
    expect(publicKey.asymmetricKeyType).toBe('rsa');
    expect(publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);

    const selector = domain.dnsRecords[0].name.split('.')[0];
    const record = { ttl: 'Auto', priority: null, status: 'NOT_STARTED', recommended: false };
    expect(domain.dnsRecords).toEqual([
      { ...record, type: 'TXT', name: `${selector}._domainkey`, value: `v=DKIM1; k=rsa; p=${domain.publicKey}` },
      { ...record, type: 'TXT', name: 'mail', value: `v=spf1 include:_spf.${MX_HOST} ~all` },
      { ...record, type: 'MX', name: 'mail', value: MX_HOST, priority: '10' },
      { ...record, type: 'TXT', name: '_dmarc', value: 'v=DMARC1; p=none;', recommended: true },
    ]);

    expect((await server.call('GET', `/v1/domains/${domain.id}`, { key })).body).toEqual(domain);
    expect((await server.call('GET', '/api/v1/domains', { key })).body).toContainEqual(domain);
  });

  it('each domain has its own selector and key pair, and the private key is never answered', async () => {
    const first = await createDomain(server, key, 'keys-one.test');
    const second = await createDomain(server, key, 'keys-two.test');
    expect(first.dnsRecords[0].name).not.toBe(second.dnsRecords[0].name);
    expect(first.publicKey).not.toBe(second.publicKey);

    const { dkim_private_key: stored } = await server.deps.db
      .selectFrom('domains').select('dkim_private_key').where('id', '=', first.id).executeTakeFirstOrThrow();
    const privateKey = server.deps.keyVault.open(stored, first.name).export({ type: 'pkcs8', format: 'pem' }) as string;
    const secret = privateKey.split('\n').slice(1, -2).join('');
    expect(secret.length).toBeGreaterThan(64);
    const answers = [
      await server.call('GET', `/v1/domains/${first.id}`, { key }),
      await server.call('GET', '/v1/domains', { key }),
      await server.call('PATCH', `/v1/domains/${first.id}`, { key, body: { openTracking: true } }),
      await server.call('PUT', `/v1/domains/${first.id}/verify`, { key }),
      await server.call('DELETE', `/v1/domains/${first.id}`, { key }),
    ];
    for (const answer of answers) {
      const text = JSON.stringify(answer.body);
      expect(text).not.toContain('PRIVATE');
      expect(text).not.toContain(secret.slice(0, 64));
    }
  });

  it('international names are stored as lower-case punycode; records of a subdomain are named within the registrable domain', async () => {
    const domain = await createDomain(server, key, 'News.Bücher.co.uk');
    expect(domain.name).toBe('news.xn--bcher-kva.co.uk');
    expect(domain.subdomain).toBe('news');
    const selector = domain.dnsRecords[0].name.split('.')[0];
    expect(domain.dnsRecords.map((r: { name: string }) => r.name)).toEqual([
      `${selector}._domainkey.news`, 'mail.news', 'mail.news', '_dmarc.news',
    ]);
  });

  it('a name is unique within a team, whatever its spelling, but another team may add it too', async () => {
    await createDomain(server, key, 'bücher-unique.test');
    for (const name of ['BÜCHER-UNIQUE.test', 'xn--bcher-unique-dlb.test']) {
      const again = await server.call('POST', '/v1/domains', { key, body: { name, region: 'us-east-1' } });
      expectApiError(again, 409, 'CONFLICT', name);
      expect(again.body.error.message).toContain('xn--bcher-unique-dlb.test');
    }
    const other = await server.team('Other');
    expect((await server.call('POST', '/v1/domains', { key: other.apiKey, body: { name: 'bücher-unique.test', region: 'us-east-1' } })).status).toBe(200);
  });

  it('a region outside the configured ones is 400 listing them; without one, the first is taken', async () => {
    const res = await server.call('POST', '/v1/domains', { key, body: { name: 'region.test', region: 'mars-1' } });
    expectApiError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ path: 'region', message: 'must be one of: us-east-1, eu-west-1' }]);
    const both = await server.call('POST', '/v1/domains', { key, body: { name: 'bad name', region: 'mars-1' } });
    expect(both.body.error.details.map((d: { path: string }) => d.path)).toEqual(['name', 'region']);
    const defaulted = await server.call('POST', '/v1/domains', { key, body: { name: 'region.test' } });
    expect(defaulted.body.region).toBe('us-east-1');
  });

  it('every malformed name is 400 and nothing is stored', async () => {
    const { teamId: team, apiKey } = await server.team('Malformed');
    const bad: unknown[] = [
      '', '   ', '1.2.3.4', '[::1]', '::1', '127.1', 'example.com.', 'exa mple.com', 'ex_ample.com', '-lead.com',
      'trail-.com', 'a..com', `${'a'.repeat(64)}.com`, `${'abcdefghi.'.repeat(26)}com`, `${'abcdefghi.'.repeat(23)}com`, 'localhost', 'co.uk',
      '\uFFFD.com', 'a\u0000b.com', 'xn--garbage.com', 'ex\u202eample.com', 'exa/mple.com', 'user@example.com', 42, null,
    ];
    for (const name of bad) {
      const res = await server.call('POST', '/v1/domains', { key: apiKey, body: { name, region: 'us-east-1' } });
      expectApiError(res, 400, 'VALIDATION_ERROR', JSON.stringify(name));
      expect(res.body.error.details[0].path).toBe('name');
    }
    expect((await server.call('POST', '/v1/domains', { key: apiKey, body: { region: 'us-east-1' } })).status).toBe(400);
    expect((await server.call('POST', '/v1/domains', { key: apiKey, body: { name: '1.2.3.4' } })).body.error.message).toContain('IP address');
    expect(await domainCount(team)).toBe(0);
    expect((await server.call('GET', '/v1/domains', { key: apiKey })).body.map((d: { name: string }) => d.name)).toEqual(['sandbox.mailroom.localhost']);
  });

  it('a missing, foreign or non-integer id is a 404 JSON answer on every domain endpoint, never a 500', async () => {
    const foreign = await createDomain(server, (await server.team('Foreign')).apiKey, 'foreign.test');
    for (const id of ['999999', 'abc', '1.5', '-1', '99999999999', '1e3', '0x1', '%20', String(foreign.id)]) {
      for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['PUT', '/verify']] as const) {
        const res = await server.call(method, `/v1/domains/${id}${path}`, { key, body: method === 'PATCH' ? { openTracking: true } : undefined });
        expectApiError(res, 404, 'NOT_FOUND', `${method} ${id}${path}`);
        expect(res.body.error.message).toBe('Domain not found');
      }
    }
  });

  it('PATCH turns open and click tracking on and off', async () => {
    const domain = await createDomain(server, key, 'tracking.test');
    const opened = await server.call('PATCH', `/v1/domains/${domain.id}`, { key, body: { openTracking: true } });
    expect(opened.body).toMatchObject({ openTracking: true, clickTracking: false });
    const clicked = await server.call('PATCH', `/v1/domains/${domain.id}`, { key, body: { clickTracking: true, openTracking: false } });
    expect(clicked.body).toMatchObject({ openTracking: false, clickTracking: true });
    const bad = await server.call('PATCH', `/v1/domains/${domain.id}`, { key, body: { clickTracking: 'yes' } });
    expect(bad.status).toBe(400);
    expect((await server.call('GET', `/v1/domains/${domain.id}`, { key })).body).toEqual(clicked.body);
  });

  it('DELETE answers {id, success, message}; the domain and the keys scoped to it are gone', async () => {
    const domain = await createDomain(server, key, 'deleted.test');
    const scoped = await server.key(teamId, 'full', domain.id);
    const res = await server.call('DELETE', `/v1/domains/${domain.id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: domain.id, success: true, message: 'Domain deleted.test deleted, with the 1 API key scoped to it' });
    expect((await server.call('GET', `/v1/domains/${domain.id}`, { key })).status).toBe(404);
    expect((await server.call('DELETE', `/v1/domains/${domain.id}`, { key })).status).toBe(404);
    expect((await server.call('GET', '/v1/domains', { key: scoped })).status).toBe(401);
  });

  it('a key scoped to a domain sees only that domain: other ids are 403, and it cannot add domains', async () => {
    const { teamId: team, apiKey } = await server.team('Scoped');
    const mine = await createDomain(server, apiKey, 'mine.test');
    const theirs = await createDomain(server, apiKey, 'theirs.test');
    const scoped = await server.key(team, 'full', mine.id);

    expect((await server.call('GET', '/v1/domains', { key: scoped })).body.map((d: { id: number }) => d.id)).toEqual([mine.id]);
    expect((await server.call('GET', `/v1/domains/${mine.id}`, { key: scoped })).status).toBe(200);
    expect((await server.call('PATCH', `/v1/domains/${mine.id}`, { key: scoped, body: { clickTracking: true } })).status).toBe(200);
    for (const id of [theirs.id, 999999]) {
      for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['PUT', '/verify']] as const) {
        const res = await server.call(method, `/v1/domains/${id}${path}`, { key: scoped, body: method === 'PATCH' ? {} : undefined });
        expectApiError(res, 403, 'FORBIDDEN', `${method} ${id}${path}`);
      }
    }
    const create = await server.call('POST', '/v1/domains', { key: scoped, body: { name: 'more.test', region: 'us-east-1' } });
    expect(create.status).toBe(403);
    expect(await domainCount(team)).toBe(2);
  });

  it('a sending-only key cannot manage domains', async () => {
    const sending = await server.key(teamId, 'sending');
    expect((await server.call('GET', '/v1/domains', { key: sending })).status).toBe(403);
    expect((await server.call('POST', '/v1/domains', { key: sending, body: { name: 'send.test', region: 'us-east-1' } })).status).toBe(403);
  });

  it('usesend-js domains.* methods work against the server unchanged', async () => {
    const client = new UseSend(key, server.url);
    const created = await client.domains.create({ name: 'client.test', region: 'us-east-1' });
    expect(created.error).toBeNull();
    const domain = created.data!;
    expect(domain).toMatchObject({ name: 'client.test', status: 'NOT_STARTED' });
    expect((await client.domains.list()).data!.map((d) => d.id)).toContain(domain.id);
    expect((await client.domains.get(domain.id)).data).toMatchObject({ id: domain.id, dnsRecords: domain.dnsRecords });
    const verified = await client.domains.verify(domain.id);
    expect(verified.error).toBeNull();
    expect(verified.data!.message).toContain('client.test');
    expect((await client.domains.get(domain.id)).data!.status).toBe('PENDING');
    const deleted = await client.domains.delete(domain.id);
    expect(deleted.data).toMatchObject({ id: domain.id, success: true });
    const gone = await client.domains.get(domain.id);
    // The client hands back the whole standard error body.
    expect(gone).toEqual({ data: null, error: { error: { code: 'NOT_FOUND', message: 'Domain not found' } } });
  });
});
