import { promises as dns } from 'node:dns';
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { domainToASCII } from 'node:url';
import ipaddr from 'ipaddr.js';
import { portRange, type Config } from '../config.js';

/**
 * The SSRF guard of outgoing webhooks: a team names a URL, and Mailroom's own process calls it. A
 * URL that leads to loopback, the private network or a cloud metadata address would let a team
 * reach what only the server can, so every address a host resolves to is classified and refused
 * unless it is public or the operator allowed it (WEBHOOK_ALLOWED_HOSTS).
 */
export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'cgnat' | 'multicast' | 'unspecified' | 'reserved';

/** All addresses of a host name, IPv4 and IPv6. */
export type Lookup = (host: string) => Promise<string[]>;

/** Without `ports`, a URL may name the ports of WEBHOOK_ALLOWED_PORTS's default. */
export type Guard = { allow: AllowList; lookup: Lookup; ports?: PortList };

const MAX_WEBHOOK_URL_LENGTH = 2048;

/** The code of the error a guarded lookup fails with when an address is refused. */
export const ADDRESS_REFUSED = 'EADDRNOTALLOWED';

/**
 * A host the guard will not let a webhook call; the message is the reason, fit to show a user.
 * `allowable`: the address is one the operator's own servers may listen on, so WEBHOOK_ALLOWED_HOSTS
 * is the way to reach it.
 */
export class WebhookAddressError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly allowable = false,
  ) {
    super(message);
    this.name = 'WebhookAddressError';
  }
}

type Address = ipaddr.IPv4 | ipaddr.IPv6;

const unbracket = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);
const withoutZone = (ip: string) => ip.replace(/%.*$/, '');

/**
 * The address, or null when it is not an IP address; brackets and a zone id are ignored. Node's
 * isIP decides what is one: ipaddr.js would also read the octal and hex forms of IPv4 that URL
 * parsing has already normalised away.
 */
function parse(ip: string): Address | null {
  const bare = withoutZone(unbracket(ip.trim()));
  return isIP(bare) ? ipaddr.parse(bare) : null;
}

// IPv4 is compared as its IPv4-mapped IPv6 form (::ffff:a.b.c.d): a socket to either reaches the
// same host, so an allow-list entry for one covers the other.
const asIPv6 = (address: Address) => (address instanceof ipaddr.IPv4 ? address.toIPv4MappedAddress() : address);
const cidr = (text: string) => ipaddr.IPv6.parseCIDR(text);

// ipaddr.js's IPv4 ranges are IANA's special-purpose registry (RFC 6890 and successors). Ranges
// that exist only on paper (documentation, benchmarking, protocol assignments) are 'reserved': no
// receiver lives there, and some networks route them internally. AMT relays and AS112 are anycast
// services on the public internet.
const IPV4_CLASSES: Record<ReturnType<ipaddr.IPv4['range']>, AddressClass> = {
  unicast: 'public',
  unspecified: 'unspecified',
  private: 'private',
  carrierGradeNat: 'cgnat',
  loopback: 'loopback',
  linkLocal: 'link-local',
  multicast: 'multicast',
  reserved: 'reserved',
  benchmarking: 'reserved',
  broadcast: 'reserved',
  amt: 'public',
  as112: 'public',
};

// For IPv6 ipaddr.js lumps together ranges that differ here (NAT64's well-known prefix, which
// embeds an IPv4 address, and its local-use one, which names no host), so the registry is written out.
const IPV6_CLASSES: Record<Exclude<AddressClass, 'public' | 'cgnat'>, [ipaddr.IPv6, number][]> = {
  unspecified: [cidr('::/128')],
  loopback: [cidr('::1/128')],
  multicast: [cidr('ff00::/8')],
  'link-local': [cidr('fe80::/10')],
  // Site-local (fec0::/10): deprecated, but still the inside of some networks.
  private: [cidr('fc00::/7'), cidr('fec0::/10')],
  reserved: [cidr('100::/64'), cidr('64:ff9b:1::/48'), cidr('2001::/23'), cidr('2001:db8::/32'), cidr('3fff::/20'), cidr('5f00::/16')],
};

const embeddedAt = (parts: number[], index: number) =>
  new ipaddr.IPv4([parts[index]! >> 8, parts[index]! & 0xff, parts[index + 1]! >> 8, parts[index + 1]! & 0xff]);

/** IPv6 forms that carry an IPv4 address: a connection to one may end up at the embedded address. */
const EMBEDDING: { range: [ipaddr.IPv6, number]; form: string; ipv4: (address: ipaddr.IPv6) => ipaddr.IPv4 }[] = [
  { range: cidr('::ffff:0:0/96'), form: 'an IPv4-mapped', ipv4: (address) => embeddedAt(address.parts, 6) },
  { range: cidr('::ffff:0:0:0/96'), form: 'an IPv4-translated', ipv4: (address) => embeddedAt(address.parts, 6) },
  { range: cidr('64:ff9b::/96'), form: 'a NAT64', ipv4: (address) => embeddedAt(address.parts, 6) },
  { range: cidr('2002::/16'), form: 'a 6to4', ipv4: (address) => embeddedAt(address.parts, 1) },
  // Holds :: and ::1 too, which are IPv6's own and classified before it.
  { range: cidr('::/96'), form: 'an IPv4-compatible', ipv4: (address) => embeddedAt(address.parts, 6) },
];

const GLOBAL_UNICAST = cidr('2000::/3');

type Reading = { kind: AddressClass; embedded?: { form: string; ipv4: string } };

// A range a later ipaddr.js names that the table does not know is refused until it is classified.
const classifyIPv4 = (address: ipaddr.IPv4): AddressClass => IPV4_CLASSES[address.range()] ?? 'reserved';

function read(address: Address): Reading {
  if (address instanceof ipaddr.IPv4) return { kind: classifyIPv4(address) };
  const special = ipaddr.subnetMatch(address, IPV6_CLASSES, 'unicast') as AddressClass | 'unicast';
  if (special !== 'unicast') return { kind: special };
  const embedding = EMBEDDING.find(({ range }) => address.match(range));
  if (embedding) {
    const ipv4 = embedding.ipv4(address);
    return { kind: classifyIPv4(ipv4), embedded: { form: embedding.form, ipv4: ipv4.toString() } };
  }
  // Outside 2000::/3 nothing is allocated for hosts on the internet.
  return { kind: address.match(GLOBAL_UNICAST) ? 'public' : 'reserved' };
}

/** The class of an IPv4 or IPv6 address; throws when `ip` is not one. */
export function classifyAddress(ip: string): AddressClass {
  const address = parse(ip);
  if (!address) throw new TypeError(`not an IP address: ${JSON.stringify(ip)}`);
  return read(address).kind;
}

export const ADDRESS_CLASS_NAMES: Record<AddressClass, string> = {
  public: 'a public address',
  loopback: 'a loopback address',
  private: 'a private address',
  'link-local': 'a link-local address',
  cgnat: 'a carrier-grade NAT (CGNAT) address',
  multicast: 'a multicast address',
  unspecified: 'an unspecified address',
  reserved: 'a reserved address',
};

// Where the operator's own receivers live, on this machine or its network. Not link-local, the
// cloud metadata service's range: no refusal should suggest opening that.
const ALLOWABLE = new Set<AddressClass>(['loopback', 'private']);

/** What is wrong with calling `ip`, as "<what it is>", or null when it may be called. */
function addressRefusal(ip: string, allow: AllowList): { address: string; what: string; allowable: boolean } | null {
  const parsed = parse(ip);
  if (!parsed) return { address: JSON.stringify(ip), what: 'not an IP address', allowable: false };
  const reading = read(parsed);
  if (reading.kind === 'public' || allow.allowsAddress(ip)) return null;
  const what = reading.embedded
    ? `${reading.embedded.form} form of ${reading.embedded.ipv4}, ${ADDRESS_CLASS_NAMES[reading.kind]}`
    : ADDRESS_CLASS_NAMES[reading.kind];
  return { address: unbracket(ip), what, allowable: ALLOWABLE.has(reading.kind) };
}

// As config.ts reads operator-given host names: labels may be one (`localhost`) and start with `_`.
const HOST_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

function normalHost(host: string): string | null {
  const ascii = domainToASCII(host.trim().replace(/\.$/, ''));
  return ascii && ascii.length <= 253 && ascii.split('.').every((label) => HOST_LABEL.test(label)) ? ascii : null;
}

/** Why `entry` cannot stand in WEBHOOK_ALLOWED_HOSTS, or null when it can. */
export function validateAllowEntry(entry: string): string | null {
  const trimmed = entry.trim();
  if (!trimmed) return 'is empty';
  const [address, length, ...rest] = trimmed.split('/');
  if (rest.length > 0) return 'must be a host name, an IP address or a CIDR range';
  const parsed = parse(address!);
  if (length !== undefined) {
    if (!parsed) return 'must have an IP address before the /';
    const max = parsed instanceof ipaddr.IPv4 ? 32 : 128;
    if (!/^\d{1,3}$/.test(length) || Number(length) > max) return `must have a prefix length of 0 to ${max}`;
    return null;
  }
  return parsed || normalHost(trimmed) ? null : 'must be a host name, an IP address or a CIDR range';
}

/** The destinations the operator exempts from the guard (WEBHOOK_ALLOWED_HOSTS). */
export class AllowList {
  readonly #hosts = new Set<string>();
  readonly #ranges: [ipaddr.IPv6, number][] = [];

  constructor(entries: readonly string[]) {
    for (const entry of entries) {
      const reason = validateAllowEntry(entry);
      if (reason) throw new Error(`the webhook allow-list entry ${JSON.stringify(entry)} ${reason}`);
      const [address, length] = entry.trim().split('/');
      const parsed = parse(address!);
      if (parsed) {
        const bits = length === undefined ? 128 : Number(length) + (parsed instanceof ipaddr.IPv4 ? 96 : 0);
        this.#ranges.push([asIPv6(parsed), bits]);
      } else {
        this.#hosts.add(normalHost(entry)!);
      }
    }
  }

  /** A host name listed as such (any case), or an IP literal inside a listed address or range. */
  allowsHost(host: string): boolean {
    if (parse(host)) return this.allowsAddress(host);
    const name = normalHost(host);
    return name !== null && this.#hosts.has(name);
  }

  allowsAddress(ip: string): boolean {
    const parsed = parse(ip);
    return parsed !== null && this.#ranges.some((range) => asIPv6(parsed).match(range));
  }
}

/**
 * The addresses a webhook to `hostname` may connect to: every address the host has, once each was
 * found public or allowed. Throws a WebhookAddressError whose message says why not.
 */
export async function checkedAddresses(hostname: string, guard: Guard): Promise<string[]> {
  const host = unbracket(hostname);
  if (parse(host)) {
    const refusal = addressRefusal(host, guard.allow);
    if (refusal) throw new WebhookAddressError(`${refusal.address} is ${refusal.what}`, ADDRESS_REFUSED, refusal.allowable);
    return [withoutZone(host)];
  }
  let addresses: string[];
  try {
    addresses = await guard.lookup(host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new WebhookAddressError(`the host ${host} could not be resolved (${code ?? (error as Error).message})`, code ?? 'ENOTFOUND');
  }
  if (addresses.length === 0) throw new WebhookAddressError(`no address found for the host ${host}`, 'ENOTFOUND');
  // An allowed name may resolve anywhere, but still only to addresses a socket can take.
  const allowedHost = guard.allow.allowsHost(host);
  for (const address of addresses) {
    const refusal = allowedHost && parse(address) ? null : addressRefusal(address, guard.allow);
    if (refusal) throw new WebhookAddressError(`${host} resolves to ${refusal.address}, ${refusal.what}`, ADDRESS_REFUSED, refusal.allowable);
  }
  return addresses.map(withoutZone);
}

/**
 * The ports a webhook may call (WEBHOOK_ALLOWED_PORTS). A public host's other services listen on
 * the well-known ports below 1024 (SMTP, SSH, DNS…): a webhook aimed at one would make Mailroom
 * speak HTTP to it on a team's behalf, so only 80, 443 and the unprivileged ports are open by default.
 * A host the operator allowed (WEBHOOK_ALLOWED_HOSTS) may be called on any port.
 */
export class PortList {
  readonly #ranges: [number, number][];

  constructor(readonly entries: readonly string[] = ['80', '443', '1024-65535']) {
    this.#ranges = entries.map((entry) => {
      const range = portRange(entry.trim());
      if (!range) throw new Error(`the webhook port entry ${JSON.stringify(entry)} must be a port or a range such as 1024-65535`);
      return range;
    });
  }

  /** Why a URL's port may not be called, or null when it may. */
  refusal(url: URL): string | null {
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    if (this.#ranges.some(([low, high]) => port >= low && port <= high)) return null;
    return `port ${port} may not be called by webhooks (WEBHOOK_ALLOWED_PORTS is ${this.entries.join(',')})`;
  }
}

export const DEFAULT_PORTS = new PortList();

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Whether a team may point a webhook at `raw`, and if not, why (a short sentence for a 400). */
export async function checkWebhookUrl(raw: string, guard: Guard): Promise<UrlCheck> {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) return { ok: false, reason: `the URL must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'the URL is not valid' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, reason: 'the URL must use http or https' };
  if (url.username || url.password) return { ok: false, reason: 'the URL must not carry a user name or password' };
  if (guard.allow.allowsHost(url.hostname)) return { ok: true, url };
  try {
    await checkedAddresses(url.hostname, guard);
  } catch (error) {
    if (!(error instanceof WebhookAddressError)) throw error;
    const allow = `; the server's operator can allow it by adding ${unbracket(url.hostname)} to WEBHOOK_ALLOWED_HOSTS`;
    return { ok: false, reason: error.allowable ? `${error.message}${allow}` : error.message };
  }
  const badPort = (guard.ports ?? DEFAULT_PORTS).refusal(url);
  return badPort ? { ok: false, reason: badPort } : { ok: true, url };
}

const wantedFamily = (family: unknown): 4 | 6 | 0 => {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
};

/**
 * A `lookup` for node's http(s) Agents and net.connect. The address a socket connects to is one
 * this lookup checked a moment before, so a host that re-points its DNS at loopback between the
 * check and the connection (DNS rebinding) gains nothing. Node does not call it for IP literals:
 * the caller checks those itself.
 */
export function guardedLookup(guard: Guard): LookupFunction {
  return (hostname, options, callback) => {
    checkedAddresses(hostname, guard).then(
      (addresses) => {
        const family = wantedFamily(options.family);
        const usable: LookupAddress[] = addresses
          .map((address) => ({ address, family: isIP(address) }))
          .filter((entry) => family === 0 || entry.family === family);
        const first = usable[0];
        if (!first) {
          callback(new WebhookAddressError(`no IPv${family} address found for the host ${hostname}`, 'ENOTFOUND'), options.all ? [] : '');
        } else if (options.all) {
          callback(null, usable);
        } else {
          callback(null, first.address, first.family);
        }
      },
      (error: Error) => callback(error, options.all ? [] : ''),
    );
  };
}

const isNoAnswer = (error: unknown) => ['ENODATA', 'ENOTFOUND'].includes((error as NodeJS.ErrnoException).code ?? '');

/**
 * How the server finds a webhook host's addresses: the system resolver (which reads /etc/hosts),
 * or the DNS servers the operator named (DNS_SERVERS), asked for A and AAAA at once.
 */
export function systemLookup(config: Pick<Config, 'dnsServers' | 'dnsTimeoutMs'>): Lookup {
  if (config.dnsServers.length === 0) {
    return async (host) => (await dns.lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
  }
  const resolver = new dns.Resolver({ timeout: config.dnsTimeoutMs, tries: 2 });
  resolver.setServers(config.dnsServers);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses = [v4, v6].flatMap((result) => (result.status === 'fulfilled' ? result.value : []));
    if (addresses.length > 0) return addresses;
    // With no answer at all, a failure that is not "no such records" (a timeout, SERVFAIL) says more.
    const failure = [v4, v6].find((result) => result.status === 'rejected' && !isNoAnswer(result.reason));
    if (failure?.status === 'rejected') throw failure.reason;
    throw Object.assign(new Error(`no A or AAAA record for ${host}`), { code: 'ENOTFOUND', hostname: host });
  };
}
