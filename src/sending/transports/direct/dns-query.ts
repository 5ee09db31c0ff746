import { getServers } from 'node:dns';
import { Packet, UDPClient } from 'dns2';

/** One record of an answer, with its time to live in seconds. */
export type DnsRecord =
  | { type: 'MX'; exchange: string; priority: number; ttl: number }
  | { type: 'A' | 'AAAA'; address: string; ttl: number };

/**
 * What a name server answered: records (possibly none: the name exists without records of that
 * type), or that the name does not exist. Server faults (SERVFAIL, REFUSED, timeouts) are thrown as
 * DnsTransientError, since another try may answer.
 */
export type DnsAnswer = { exists: true; records: DnsRecord[] } | { exists: false };

export class DnsTransientError extends Error {}

type Server = { address: string; port: number };

const RCODE_NXDOMAIN = 3;
const RCODE_NAMES: Record<number, string> = { 1: 'FORMERR', 2: 'SERVFAIL', 4: 'NOTIMP', 5: 'REFUSED' };

/** `ip`, `ip:port`, `[ipv6]` or `[ipv6]:port`, as DNS_SERVERS and node's getServers() write them. */
function parseServer(entry: string): Server {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { address: bracketed[1]!, port: Number(bracketed[2] ?? 53) };
  const colons = entry.split(':').length - 1;
  if (colons === 1) {
    const [address, port] = entry.split(':');
    return { address: address!, port: Number(port) };
  }
  return { address: entry, port: 53 };
}

/**
 * Asks the resolvers of DNS_SERVERS (unset: the system's) for records of a type, one server after
 * another until one answers. Unlike node's resolver, it gives each record's TTL, which the MX
 * routes are cached for.
 */
export function dnsQuerier(servers: string[], timeoutMs: number) {
  const targets = (servers.length > 0 ? servers : getServers()).map(parseServer);
  return async function query(name: string, type: 'MX' | 'A' | 'AAAA'): Promise<DnsAnswer> {
    const faults: string[] = [];
    for (const server of targets) {
      let response: Awaited<ReturnType<ReturnType<typeof UDPClient>>>;
      try {
        response = await UDPClient({ dns: server.address, port: server.port, timeout: timeoutMs, socketType: server.address.includes(':') ? 'udp6' : 'udp4' })(name, type);
      } catch (error) {
        faults.push(`${server.address}: ${(error as Error).message}`);
        continue;
      }
      const rcode = response.header.rcode;
      if (rcode === RCODE_NXDOMAIN) return { exists: false };
      if (rcode !== 0) {
        faults.push(`${server.address}: ${RCODE_NAMES[rcode] ?? `rcode ${rcode}`}`);
        continue;
      }
      return { exists: true, records: response.answers.flatMap((answer) => recordOf(answer as unknown as Record<string, unknown>, type)) };
    }
    throw new DnsTransientError(`DNS lookup of ${type} ${name} failed (${faults.join('; ')})`);
  };
}

export type DnsQuery = ReturnType<typeof dnsQuerier>;

/** The answers of the type asked for (a CNAME on the way is followed by the resolver and skipped here). */
function recordOf(answer: Record<string, unknown>, type: 'MX' | 'A' | 'AAAA'): DnsRecord[] {
  const ttl = Number(answer.ttl ?? 0);
  if (type === 'MX' && answer.type === Packet.TYPE.MX) {
    return [{ type, exchange: String(answer.exchange ?? '').replace(/\.$/, '').toLowerCase(), priority: Number(answer.priority), ttl }];
  }
  if ((type === 'A' && answer.type === Packet.TYPE.A) || (type === 'AAAA' && answer.type === Packet.TYPE.AAAA)) {
    return [{ type, address: String(answer.address), ttl }];
  }
  return [];
}
