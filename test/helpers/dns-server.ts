import dgram from 'node:dgram';
import type { AddressInfo, Socket } from 'node:net';
import { Resolver } from 'node:dns/promises';
import { Packet, TCPServer, UDPServer } from 'dns2';

export type ZoneRecord = {
  /** Seconds a resolver may keep the answer: 60 unless set. */
  ttl?: number;
} & (
  | { type: 'TXT'; value: string }
  /** `exchange: ''` (or `'.'`) with priority 0 is a null MX (RFC 7505): dns2 writes both as the root name. */
  | { type: 'MX'; exchange: string; priority: number }
  | { type: 'A'; address: string }
  | { type: 'AAAA'; address: string }
);

/** The parts of a Domain resource that say which records to create. */
export type DomainRecords = {
  name: string;
  subdomain: string | null;
  dnsRecords: { type: string; name: string; value: string; priority: string | null }[];
};

export type TestDnsServer = {
  /** `127.0.0.1:port`, as DNS_SERVERS takes it. */
  address: string;
  /** A resolver that asks this server, e.g. for mailauth. */
  resolver: Resolver;
  /** Every question asked, as `TYPE name`, e.g. `MX mail.example.com`. */
  queries: string[];
  /** Replaces every record of a name. */
  set(name: string, records: ZoneRecord[]): void;
  /** Creates the records the API told the domain owner to create, named as a DNS provider would read them. */
  serve(domain: DomainRecords): void;
  remove(name: string): void;
  /** Answers every query with this response code (e.g. SERVFAIL) instead of the zone; null to stop. */
  failWith(rcode: number | null): void;
  close(): Promise<void>;
};

/** A TXT value as it goes on the wire: character-strings of at most 255 bytes (RFC 1035 §3.3.14). */
function characterStrings(value: string): Buffer[] {
  const bytes = Buffer.from(value);
  const strings: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; offset += 255) strings.push(bytes.subarray(offset, offset + 255));
  return strings.length > 0 ? strings : [Buffer.alloc(0)];
}

/** DNS response codes (RFC 1035 §4.1.1): dns2 3.0.0 has them at run time, its types leave them out. */
export const RCODE = (Packet as unknown as { RCODE: Record<'NOERROR' | 'FORMERR' | 'SERVFAIL' | 'NXDOMAIN' | 'NOTIMP' | 'REFUSED', number> }).RCODE;

const typeNames = new Map<number, string>(Object.entries(Packet.TYPE).map(([name, code]) => [code, name]));
const key = (name: string) => name.toLowerCase().replace(/\.$/, '');

/**
 * Binds UDP and TCP to one port: the OS picks a free UDP port, which TCP may still find taken (by
 * another test's connection), so a clash is retried on a new port.
 */
async function listenOnOnePort(handle: (request: Packet, send: (response: Packet) => Promise<Buffer>) => void, connections: Set<Socket>) {
  for (let attempt = 1; ; attempt++) {
    const udp = new UDPServer({ type: 'udp4' });
    udp.on('request', handle as never);
    await udp.listen(0, '127.0.0.1');
    const { port } = udp.address();
    const tcp = new TCPServer(handle as never);
    tcp.on('connection', (socket: Socket) => {
      connections.add(socket);
      socket.once('close', () => connections.delete(socket));
    });
    try {
      await new Promise<void>((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen(port, '127.0.0.1', () => resolve());
      });
      return { udp, tcp, port };
    } catch (error) {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt === 10) throw error;
    }
  }
}

/**
 * An authoritative DNS server on loopback, over UDP and TCP on one port (long DKIM answers come
 * back truncated over UDP, and resolvers then ask again over TCP).
 */
export async function startDnsServer(): Promise<TestDnsServer> {
  const zone = new Map<string, ZoneRecord[]>();
  const queries: string[] = [];
  let failure: number | null = null;

  const handle = (request: Packet, send: (response: Packet) => Promise<Buffer>) => {
    const response = Packet.createResponseFromRequest(request);
    response.header.aa = 1;
    const question = request.questions[0];
    const records = question ? zone.get(key(question.name)) : undefined;
    if (question) queries.push(`${typeNames.get(question.type) ?? question.type} ${key(question.name)}`);
    if (failure !== null) response.header.rcode = failure;
    else if (!records) response.header.rcode = RCODE.NXDOMAIN;
    else {
      // A name that has records, none of the type asked, answers NOERROR with no answers (NODATA).
      for (const record of records) {
        const base = { name: question!.name, class: Packet.CLASS.IN, ttl: record.ttl ?? 60 };
        if (record.type === 'TXT' && question!.type === Packet.TYPE.TXT) {
          response.answers.push({ ...base, type: Packet.TYPE.TXT, data: characterStrings(record.value) } as never);
        } else if (record.type === 'MX' && question!.type === Packet.TYPE.MX) {
          response.answers.push({ ...base, type: Packet.TYPE.MX, exchange: record.exchange, priority: record.priority } as never);
        } else if (record.type === 'A' && question!.type === Packet.TYPE.A) {
          response.answers.push({ ...base, type: Packet.TYPE.A, address: record.address } as never);
        } else if (record.type === 'AAAA' && question!.type === Packet.TYPE.AAAA) {
          response.answers.push({ ...base, type: Packet.TYPE.AAAA, address: record.address } as never);
        }
      }
    }
    void send(response);
  };

  const connections = new Set<Socket>();
  const { udp, tcp, port } = await listenOnOnePort(handle, connections);

  const address = `127.0.0.1:${port}`;
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([address]);
  const set = (name: string, records: ZoneRecord[]) => zone.set(key(name), records);

  return {
    address,
    resolver,
    queries,
    set,
    serve(domain) {
      const registrable = domain.subdomain ? domain.name.slice(domain.subdomain.length + 1) : domain.name;
      const byName = new Map<string, ZoneRecord[]>();
      for (const record of domain.dnsRecords) {
        const fqdn = `${record.name}.${registrable}`;
        const entry: ZoneRecord = record.type === 'MX'
          ? { type: 'MX', exchange: record.value, priority: Number(record.priority) }
          : { type: 'TXT', value: record.value };
        byName.set(fqdn, [...(byName.get(fqdn) ?? []), entry]);
      }
      for (const [name, records] of byName) set(name, records);
    },
    remove: (name) => zone.delete(key(name)),
    failWith: (rcode) => {
      failure = rcode;
    },
    close: async () => {
      resolver.cancel();
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      // Resolvers keep TCP connections open; close() would wait for them.
      for (const socket of connections) socket.destroy();
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    },
  };
}

/** A UDP port that takes queries and never answers: a DNS server that is down. */
export async function startSilentDnsServer(): Promise<{ address: string; close(): Promise<void> }> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return {
    address: `127.0.0.1:${(socket.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
