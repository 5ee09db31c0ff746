import { describe, expect, it } from 'vitest';
import type { LookupAddress } from 'node:dns';
import {
  ADDRESS_REFUSED,
  AllowList,
  checkWebhookUrl,
  classifyAddress,
  guardedLookup,
  PortList,
  validateAllowEntry,
  type AddressClass,
  type Lookup,
} from './address-guard.js';

/** A resolver that knows only these names; anything else is NXDOMAIN. */
function fakeDns(zone: Record<string, string[]>): Lookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (host: string) => {
    calls.push(host);
    const addresses = zone[host];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return addresses;
  };
  return Object.assign(lookup, { calls });
}

const noAllow = new AllowList([]);

/** A refusal of an address the operator's own receivers may have (loopback, private): it says how to allow `host`. */
const allowable = (reason: string, host: string) => ({
  ok: false,
  reason: `${reason}; the server's operator can allow it by adding ${host} to WEBHOOK_ALLOWED_HOSTS`,
});

describe('classifyAddress', () => {
  it.each<[string, AddressClass]>([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
  ])('%s is %s', (ip, kind) => {
    expect(classifyAddress(ip)).toBe(kind);
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '100.128.0.1', '169.255.0.1', '2606:4700::1111', '2a00:1450:4001::200e'])(
    '%s is public',
    (ip) => {
      expect(classifyAddress(ip)).toBe('public');
    },
  );

  it.each<[string, AddressClass]>([
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:0001', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a00:1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['::ffff:8.8.8.8', 'public'],
    ['2002:808:808::1', 'public'],
  ])('an IPv6 form of an IPv4 address takes its class: %s is %s', (ip, kind) => {
    expect(classifyAddress(ip)).toBe(kind);
  });

  it('a zone id and brackets do not hide the address', () => {
    expect(classifyAddress('fe80::1%eth0')).toBe('link-local');
    expect(classifyAddress('[::1]')).toBe('loopback');
    expect(classifyAddress('[::ffff:7f00:1]')).toBe('loopback');
  });

  it('something that is not an IP address is not classified', () => {
    expect(() => classifyAddress('localhost')).toThrow(/not an IP address/);
    expect(() => classifyAddress('0x7f.0.0.1')).toThrow(/not an IP address/);
  });
});

describe('the allow list', () => {
  it('names hosts case-insensitively, and only those hosts', () => {
    const allow = new AllowList(['Hooks.Internal.Example', 'localhost']);
    expect(allow.allowsHost('hooks.internal.example')).toBe(true);
    expect(allow.allowsHost('HOOKS.INTERNAL.EXAMPLE.')).toBe(true);
    expect(allow.allowsHost('localhost')).toBe(true);
    expect(allow.allowsHost('evil.hooks.internal.example')).toBe(false);
    expect(allow.allowsAddress('127.0.0.1')).toBe(false);
  });

  it('an IP or CIDR entry covers the addresses inside it, in any of their written forms', () => {
    const allow = new AllowList(['127.0.0.0/8', '10.1.2.3', '::1/128', 'fd00::/8']);
    expect(allow.allowsAddress('127.9.9.9')).toBe(true);
    expect(allow.allowsAddress('::ffff:127.0.0.1')).toBe(true);
    expect(allow.allowsAddress('10.1.2.3')).toBe(true);
    expect(allow.allowsAddress('10.1.2.4')).toBe(false);
    expect(allow.allowsAddress('0:0::1')).toBe(true);
    expect(allow.allowsAddress('fd12::1')).toBe(true);
    expect(allow.allowsAddress('fc00::1')).toBe(false);
    expect(allow.allowsHost('[::1]')).toBe(true);
    expect(allow.allowsHost('127.0.0.1')).toBe(true);
    expect(allow.allowsHost('192.168.0.1')).toBe(false);
  });

  it('an empty list allows nothing', () => {
    expect(noAllow.allowsHost('localhost')).toBe(false);
    expect(noAllow.allowsAddress('127.0.0.1')).toBe(false);
  });

  it('an invalid entry is refused, naming it', () => {
    for (const entry of ['10.0.0.0/33', '::1/129', 'not a host', 'host/8', '1.2.3.4/8/9', '-bad.example', '10.0.0.0/x']) {
      expect(validateAllowEntry(entry), entry).not.toBeNull();
      expect(() => new AllowList([entry])).toThrow(entry);
    }
    for (const entry of ['hooks.example.com', '_svc.example.com', '192.168.0.0/16', '::/0', '2001:db8::1', 'localhost']) {
      expect(validateAllowEntry(entry), entry).toBeNull();
    }
  });
});

describe('checkWebhookUrl', () => {
  const dns = fakeDns({
    'hooks.example.com': ['93.184.216.34', '2606:2800:220:1::1'],
    localhost: ['127.0.0.1', '::1'],
    'mixed.example.com': ['93.184.216.34', '10.0.0.5'],
    'mapped.example.com': ['::ffff:169.254.169.254'],
    'empty.example.com': [],
  });
  const guard = { allow: noAllow, lookup: dns };

  it('a public https URL is accepted', async () => {
    const check = await checkWebhookUrl('https://hooks.example.com/mailroom?x=1', guard);
    expect(check).toStrictEqual({ ok: true, url: new URL('https://hooks.example.com/mailroom?x=1') });
  });

  it.each([
    ['ftp://hooks.example.com/', 'the URL must use http or https'],
    ['file:///etc/passwd', 'the URL must use http or https'],
    ['javascript:alert(1)', 'the URL must use http or https'],
    ['https://user:pass@hooks.example.com/', 'the URL must not carry a user name or password'],
    ['https://user@hooks.example.com/', 'the URL must not carry a user name or password'],
    ['not a url', 'the URL is not valid'],
    [`https://hooks.example.com/${'a'.repeat(2048)}`, 'the URL must be at most 2048 characters'],
  ])('%s is refused: %s', async (url, reason) => {
    expect(await checkWebhookUrl(url, guard)).toStrictEqual({ ok: false, reason });
  });

  it.each([
    ['https://hooks.example.com:25/', 25],
    ['http://hooks.example.com:22/', 22],
    ['https://hooks.example.com:1023/', 1023],
  ])('%s, a well-known port of another service, is refused naming WEBHOOK_ALLOWED_PORTS', async (url, port) => {
    expect(await checkWebhookUrl(url, guard)).toStrictEqual({ ok: false, reason: `port ${port} may not be called by webhooks (WEBHOOK_ALLOWED_PORTS is 80,443,1024-65535)` });
  });

  it('80, 443 and the unprivileged ports are open by default; the operator may open others or close these', async () => {
    for (const url of ['http://hooks.example.com/', 'https://hooks.example.com/', 'https://hooks.example.com:8443/', 'http://hooks.example.com:65535/']) {
      expect((await checkWebhookUrl(url, guard)).ok, url).toBe(true);
    }
    const narrow = { ...guard, ports: new PortList(['443', '8000-8999']) };
    expect((await checkWebhookUrl('https://hooks.example.com:8080/', narrow)).ok).toBe(true);
    expect((await checkWebhookUrl('https://hooks.example.com:25/', { ...guard, ports: new PortList(['25']) })).ok).toBe(true);
    expect(await checkWebhookUrl('http://hooks.example.com/', narrow)).toStrictEqual({ ok: false, reason: 'port 80 may not be called by webhooks (WEBHOOK_ALLOWED_PORTS is 443,8000-8999)' });
  });

  it('a loopback address is refused, naming WEBHOOK_ALLOWED_HOSTS and the entry that would allow it', async () => {
    expect(await checkWebhookUrl('http://127.0.0.1:8080/', guard)).toStrictEqual({
      ok: false,
      reason: "127.0.0.1 is a loopback address; the server's operator can allow it by adding 127.0.0.1 to WEBHOOK_ALLOWED_HOSTS",
    });
    expect(await checkWebhookUrl('http://[::1]/', guard)).toStrictEqual(allowable('::1 is a loopback address', '::1'));
    // The entry named is one that does allow it.
    expect((await checkWebhookUrl('http://[::1]/', { ...guard, allow: new AllowList(['::1']) })).ok).toBe(true);
  });

  it('refusals of addresses no receiver of the operator lives at (link-local, multicast, reserved) do not suggest allowing them', async () => {
    for (const url of ['http://169.254.169.254/', 'http://224.0.0.1/', 'http://192.0.2.1/']) {
      const check = await checkWebhookUrl(url, guard);
      expect(check.ok, url).toBe(false);
      expect(check.ok || check.reason, url).not.toContain('WEBHOOK_ALLOWED_HOSTS');
    }
  });

  it('other spellings of loopback are refused too (URL parsing normalises them)', async () => {
    for (const url of ['http://2130706433/', 'http://0x7f.1/', 'http://0177.0.0.1/', 'http://127.1/']) {
      expect(await checkWebhookUrl(url, guard), url).toStrictEqual(allowable('127.0.0.1 is a loopback address', '127.0.0.1'));
    }
  });

  it('an IPv4-mapped form of a private address is refused, naming the address inside', async () => {
    expect(await checkWebhookUrl('http://[::ffff:127.0.0.1]/', guard)).toStrictEqual(
      allowable('::ffff:7f00:1 is an IPv4-mapped form of 127.0.0.1, a loopback address', '::ffff:7f00:1'),
    );
    expect(await checkWebhookUrl('http://mapped.example.com/', guard)).toStrictEqual({
      ok: false,
      reason: 'mapped.example.com resolves to ::ffff:169.254.169.254, an IPv4-mapped form of 169.254.169.254, a link-local address',
    });
  });

  it('the cloud metadata address is refused', async () => {
    expect(await checkWebhookUrl('http://169.254.169.254/latest/meta-data/', guard)).toStrictEqual({
      ok: false,
      reason: '169.254.169.254 is a link-local address',
    });
  });

  it('a host name that resolves to loopback is refused, naming the address', async () => {
    expect(await checkWebhookUrl('http://localhost:3000/hook', guard)).toStrictEqual(allowable('localhost resolves to 127.0.0.1, a loopback address', 'localhost'));
  });

  it('one private address among public ones is enough to refuse a host', async () => {
    expect(await checkWebhookUrl('https://mixed.example.com/', guard)).toStrictEqual(allowable('mixed.example.com resolves to 10.0.0.5, a private address', 'mixed.example.com'));
  });

  it('a host with no address, or one that does not resolve, is refused', async () => {
    expect(await checkWebhookUrl('https://empty.example.com/', guard)).toStrictEqual({ ok: false, reason: 'no address found for the host empty.example.com' });
    expect(await checkWebhookUrl('https://nosuch.example/', guard)).toStrictEqual({
      ok: false,
      reason: 'the host nosuch.example could not be resolved (ENOTFOUND)',
    });
  });

  it('a destination the operator allowed is accepted, by name or by address', async () => {
    expect((await checkWebhookUrl('http://localhost:3000/', { allow: new AllowList(['LOCALHOST']), lookup: dns })).ok).toBe(true);
    expect((await checkWebhookUrl('http://localhost:3000/', { allow: new AllowList(['127.0.0.0/8', '::1']), lookup: dns })).ok).toBe(true);
    expect((await checkWebhookUrl('http://10.0.0.5/', { allow: new AllowList(['10.0.0.0/24']), lookup: dns })).ok).toBe(true);
    // Allowing 127.0.0.1 says nothing about ::1, which localhost also resolves to.
    expect(await checkWebhookUrl('http://localhost:3000/', { allow: new AllowList(['127.0.0.1']), lookup: dns })).toStrictEqual(
      allowable('localhost resolves to ::1, a loopback address', 'localhost'),
    );
  });
});

describe('guardedLookup', () => {
  const call = (lookup: ReturnType<typeof guardedLookup>, host: string, options: { all?: boolean; family?: number }) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) =>
      lookup(host, options, (error, address, family) => resolve({ error, address, family })),
    );

  const dns = fakeDns({ 'dual.example.com': ['2606:2800:220:1::1', '93.184.216.34'], 'rebind.test': ['127.0.0.1'] });

  it('hands back the addresses it checked, one or all, of the family asked', async () => {
    const lookup = guardedLookup({ allow: noAllow, lookup: dns });
    expect(await call(lookup, 'dual.example.com', { all: true })).toMatchObject({
      error: null,
      address: [{ address: '2606:2800:220:1::1', family: 6 }, { address: '93.184.216.34', family: 4 }],
    });
    expect(await call(lookup, 'dual.example.com', {})).toMatchObject({ error: null, address: '2606:2800:220:1::1', family: 6 });
    expect(await call(lookup, 'dual.example.com', { family: 4 })).toMatchObject({ error: null, address: '93.184.216.34', family: 4 });
  });

  it('a host that resolves to loopback gets no address to connect to', async () => {
    const { error } = await call(guardedLookup({ allow: noAllow, lookup: dns }), 'rebind.test', { all: true });
    expect(error?.code).toBe(ADDRESS_REFUSED);
    expect(error?.message).toBe('rebind.test resolves to 127.0.0.1, a loopback address');
  });

  it('an allowed loopback address is handed back', async () => {
    const lookup = guardedLookup({ allow: new AllowList(['127.0.0.1']), lookup: dns });
    expect(await call(lookup, 'rebind.test', {})).toMatchObject({ error: null, address: '127.0.0.1', family: 4 });
  });

  it('a resolver failure is passed on with its code', async () => {
    const { error } = await call(guardedLookup({ allow: noAllow, lookup: dns }), 'nosuch.example', {});
    expect(error?.code).toBe('ENOTFOUND');
    expect(error?.message).toBe('the host nosuch.example could not be resolved (ENOTFOUND)');
  });
});
