import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import type { TestDnsServer } from './dns-server.js';

/** mailauth's DKIM verification of a message, reading keys from the loopback DNS server. */
export async function verifyDkim(dns: TestDnsServer, message: Buffer | string) {
  const result = await dkimVerify(message, {
    resolver: (name: string, type: string) => (type === 'TXT' ? dns.resolver.resolveTxt(name) : dns.resolver.resolve(name, type)) as never,
  });
  return result.results;
}
