import { getDomain } from 'tldts';
import { AnswerCache } from '../../../reuse-for.js';
import { DnsTransientError, type DnsQuery } from './dns-query.js';

/** A mail server of a domain: its name, its MX preference, and its addresses, A first then AAAA. */
export type MxHost = { name: string; preference: number; addresses: string[] };

/**
 * Where a recipient domain's mail goes: its mail servers, in MX order, and the destination they
 * belong to (the registrable domain of the most preferred one: every domain a provider hosts shares
 * the provider's limits); or why it can never go anywhere.
 */
export type Route =
  | { kind: 'hosts'; destination: string; hosts: MxHost[]; ttlMs: number }
  | { kind: 'none'; reason: string; ttlMs: number };

// How long an answer that carries no TTL of its own (a name that does not exist) is believed.
const NEGATIVE_TTL_MS = 300_000;
const MAX_TTL_MS = 86_400_000;
const MAX_ROUTES = 50_000;
const HOST_NAME = /^(?=.{1,253}$)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)*$/;

/** The destination of an MX host: its registrable domain (`aspmx.l.google.com` → `google.com`), or the host itself. */
export const destinationOf = (host: string) => getDomain(host) ?? host;

/**
 * Looks up how to reach recipient domains (RFC 5321 §5.1): MX records by preference; no MX, the
 * domain itself (implicit MX); a null MX (RFC 7505) or a domain that does not exist, nowhere. Each
 * route is kept as long as the shortest TTL of the records it was read from. A resolver that fails
 * throws DnsTransientError, which is not kept.
 */
export function mxRoutes(query: DnsQuery) {
  const cache = new AnswerCache<string, Promise<Route>>({ maxEntries: MAX_ROUTES, ttlOf: (route) => route.ttlMs });

  async function addressesOf(host: string): Promise<{ addresses: string[]; ttlMs: number; transient: string | null }> {
    const addresses: string[] = [];
    let ttlMs = MAX_TTL_MS;
    let transient: string | null = null;
    for (const type of ['A', 'AAAA'] as const) {
      try {
        const answer = await query(host, type);
        if (!answer.exists) return { addresses: [], ttlMs: NEGATIVE_TTL_MS, transient };
        for (const record of answer.records) {
          if (record.type === 'MX') continue;
          addresses.push(record.address);
          ttlMs = Math.min(ttlMs, record.ttl * 1000);
        }
      } catch (error) {
        if (!(error instanceof DnsTransientError)) throw error;
        transient = error.message;
      }
    }
    return { addresses, ttlMs, transient };
  }

  async function lookUp(domain: string): Promise<Route> {
    const mx = await query(domain, 'MX');
    if (!mx.exists) return { kind: 'none', reason: `the domain ${domain} does not exist (NXDOMAIN)`, ttlMs: NEGATIVE_TTL_MS };
    const answered = mx.records.flatMap((record) => (record.type === 'MX' ? [record] : []));
    if (answered.some((record) => record.exchange === '')) {
      return { kind: 'none', reason: `${domain} accepts no mail (null MX, RFC 7505)`, ttlMs: Math.min(...answered.map((r) => r.ttl * 1000)) };
    }
    // A name that is no host name (a remote server's mistake, or markup) is skipped, never dialled or shown.
    const records = answered.filter((record) => HOST_NAME.test(record.exchange));
    if (answered.length > 0 && records.length === 0) {
      return { kind: 'none', reason: `no MX record of ${domain} names a valid host`, ttlMs: NEGATIVE_TTL_MS };
    }
    // No MX: the domain's own address is its mail server.
    const named = records.length > 0 ? records.map((r) => ({ name: r.exchange, preference: r.priority, ttl: r.ttl })) : [{ name: domain, preference: 0, ttl: MAX_TTL_MS / 1000 }];
    named.sort((a, b) => a.preference - b.preference);
    let ttlMs = Math.min(MAX_TTL_MS, ...named.map((host) => host.ttl * 1000));
    const hosts: MxHost[] = [];
    const faults: string[] = [];
    for (const host of named) {
      const found = await addressesOf(host.name);
      if (found.transient) faults.push(found.transient);
      if (found.addresses.length === 0) continue;
      hosts.push({ name: host.name, preference: host.preference, addresses: found.addresses });
      ttlMs = Math.min(ttlMs, found.ttlMs);
    }
    if (hosts.length === 0) {
      if (faults.length > 0) throw new DnsTransientError(faults.join('; '));
      return { kind: 'none', reason: `no mail server of ${domain} has an address (${named.map((h) => h.name).join(', ')})`, ttlMs: NEGATIVE_TTL_MS };
    }
    return { kind: 'hosts', destination: destinationOf(named[0]!.name), hosts, ttlMs };
  }

  return {
    route: (domain: string) => cache.get(domain.toLowerCase(), () => lookUp(domain.toLowerCase())),
  };
}

export type MxRoutes = ReturnType<typeof mxRoutes>;

/** The hosts in the order to try them: by preference, and at random among equals (RFC 5321 §5.1). */
export function tryOrder(hosts: MxHost[], random: () => number = Math.random): MxHost[] {
  const keyed = hosts.map((host) => ({ host, tieBreak: random() }));
  keyed.sort((a, b) => a.host.preference - b.host.preference || a.tieBreak - b.tieBreak);
  return keyed.map(({ host }) => host);
}
