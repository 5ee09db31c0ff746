import ipaddr from 'ipaddr.js';

/** What a listener counts a client address against: the client itself, and its network. */
export type ClientKeys = { client: string; network: string };

/**
 * An IPv4 client is its address, in its /24. An IPv6 client is its /64, for both: one host can take
 * any address of its /64 at will. An IPv4-mapped IPv6 address (::ffff:a.b.c.d, how a dual-stack
 * socket shows an IPv4 peer) is the IPv4 address it carries.
 */
export function clientKeys(address: string): ClientKeys {
  if (!ipaddr.isValid(address)) return { client: address, network: address };
  const ip = ipaddr.process(address);
  if (ip instanceof ipaddr.IPv4) {
    return { client: ip.toString(), network: `${new ipaddr.IPv4([...ip.octets.slice(0, 3), 0]).toString()}/24` };
  }
  const network = `${new ipaddr.IPv6([...ip.parts.slice(0, 4), 0, 0, 0, 0]).toRFC5952String()}/64`;
  return { client: network, network };
}
