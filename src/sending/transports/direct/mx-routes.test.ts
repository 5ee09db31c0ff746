import { afterEach, describe, expect, it, vi } from 'vitest';
import { DnsTransientError, type DnsAnswer, type DnsRecord } from './dns-query.js';
import { destinationOf, mxRoutes, tryOrder } from './mx-routes.js';

/** A resolver answering from a table of `TYPE name` → records (a missing name: NXDOMAIN), counting questions. */
function fakeDns(zone: Record<string, DnsRecord[] | 'NXDOMAIN' | 'SERVFAIL'>) {
  const asked: string[] = [];
  const query = async (name: string, type: 'MX' | 'A' | 'AAAA'): Promise<DnsAnswer> => {
    asked.push(`${type} ${name}`);
    const names = Object.keys(zone).map((key) => key.split(' ')[1]);
    const answer = zone[`${type} ${name}`];
    if (answer === 'SERVFAIL') throw new DnsTransientError(`SERVFAIL for ${name}`);
    if (answer === 'NXDOMAIN' || (!answer && !names.includes(name))) return { exists: false };
    return { exists: true, records: answer ?? [] };
  };
  return { query, asked };
}

const mx = (exchange: string, priority: number, ttl = 300): DnsRecord => ({ type: 'MX', exchange, priority, ttl });
const a = (address: string, ttl = 300): DnsRecord => ({ type: 'A', address, ttl });

afterEach(() => {
  vi.useRealTimers();
});

describe('MX routes', () => {
  it('lists the mail servers by preference with their A then AAAA addresses; the destination is the registrable domain of the most preferred', async () => {
    const { query } = fakeDns({
      'MX example.org': [mx('alt1.gmail-smtp-in.l.google.com', 20), mx('aspmx.l.google.com', 10)],
      'A aspmx.l.google.com': [a('192.0.2.1')],
      'AAAA aspmx.l.google.com': [{ type: 'AAAA', address: '2001:db8::1', ttl: 300 }],
      'A alt1.gmail-smtp-in.l.google.com': [a('192.0.2.2')],
    });
    const route = await mxRoutes(query).route('Example.ORG');
    expect(route).toEqual({
      kind: 'hosts',
      destination: 'google.com',
      hosts: [
        { name: 'aspmx.l.google.com', preference: 10, addresses: ['192.0.2.1', '2001:db8::1'] },
        { name: 'alt1.gmail-smtp-in.l.google.com', preference: 20, addresses: ['192.0.2.2'] },
      ],
      ttlMs: 300_000,
    });
  });

  it('with no MX record, the domain itself is its mail server (implicit MX)', async () => {
    const { query } = fakeDns({ 'MX solo.example': [], 'A solo.example': [a('192.0.2.9')] });
    expect(await mxRoutes(query).route('solo.example')).toMatchObject({ kind: 'hosts', destination: 'solo.example', hosts: [{ name: 'solo.example', preference: 0, addresses: ['192.0.2.9'] }] });
  });

  it('a null MX or a domain that does not exist routes nowhere; a resolver fault is thrown as transient and not kept', async () => {
    const { query, asked } = fakeDns({ 'MX none.example': [mx('', 0)], 'MX flaky.example': 'SERVFAIL' });
    const routes = mxRoutes(query);
    expect(await routes.route('none.example')).toMatchObject({ kind: 'none', reason: expect.stringMatching(/null MX/) });
    expect(await routes.route('gone.example')).toMatchObject({ kind: 'none', reason: expect.stringMatching(/does not exist/) });
    await expect(routes.route('flaky.example')).rejects.toBeInstanceOf(DnsTransientError);
    await expect(routes.route('flaky.example')).rejects.toBeInstanceOf(DnsTransientError);
    expect(asked.filter((q) => q === 'MX flaky.example')).toHaveLength(2);
  });

  it('an MX name that is no host name is skipped, never dialled', async () => {
    const { query, asked } = fakeDns({ 'MX odd.example': [mx('mx.<b>x</b>.example', 10), mx('mx.odd.example', 20)], 'A mx.odd.example': [a('192.0.2.5')] });
    expect(await mxRoutes(query).route('odd.example')).toMatchObject({ kind: 'hosts', destination: 'odd.example', hosts: [{ name: 'mx.odd.example' }] });
    expect(asked.some((q) => q.includes('<b>'))).toBe(false);
  });

  it('mail servers whose names have no address are skipped; none left is a route nowhere, or transient if a lookup failed', async () => {
    const { query } = fakeDns({
      'MX half.example': [mx('dead.half.example', 10), mx('live.half.example', 20)],
      'A live.half.example': [a('192.0.2.3')],
      'MX broken.example': [mx('mx.broken.example', 10)],
      'A mx.broken.example': 'SERVFAIL',
      'MX empty.example': [mx('nowhere.empty.example', 10)],
    });
    const routes = mxRoutes(query);
    expect(await routes.route('half.example')).toMatchObject({ kind: 'hosts', hosts: [{ name: 'live.half.example' }] });
    await expect(routes.route('broken.example')).rejects.toBeInstanceOf(DnsTransientError);
    expect(await routes.route('empty.example')).toMatchObject({ kind: 'none', reason: expect.stringMatching(/no mail server/) });
  });

  it('a route is kept for the shortest TTL of the records it was read from, then looked up again', async () => {
    vi.useFakeTimers();
    const { query, asked } = fakeDns({ 'MX ttl.example': [mx('mx.ttl.example', 10, 3600)], 'A mx.ttl.example': [a('192.0.2.4', 30)] });
    const routes = mxRoutes(query);
    await routes.route('ttl.example');
    vi.advanceTimersByTime(29_000);
    await routes.route('ttl.example');
    expect(asked.filter((q) => q === 'MX ttl.example')).toHaveLength(1);
    vi.advanceTimersByTime(1_000);
    await routes.route('ttl.example');
    expect(asked.filter((q) => q === 'MX ttl.example')).toHaveLength(2);
  });

  it('tries servers of equal preference in random order, never a less preferred one first', () => {
    const hosts = [10, 10, 10, 20].map((preference, i) => ({ name: `mx${i}.example`, preference, addresses: [] }));
    const firsts = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const order = tryOrder(hosts);
      firsts.add(order[0]!.name);
      expect(order.at(-1)!.name).toBe('mx3.example');
    }
    expect(firsts).toEqual(new Set(['mx0.example', 'mx1.example', 'mx2.example']));
  });

  it('names the destination of a host by its registrable domain', () => {
    expect(destinationOf('mx1.mail.protection.outlook.com')).toBe('outlook.com');
    expect(destinationOf('mx.example.co.uk')).toBe('example.co.uk');
    expect(destinationOf('localhost')).toBe('localhost');
  });
});
