/**
 * The addresses on a domain's return-path host (`mail.example.com`, whose MX points at the inbound
 * listener): each names the email it is about, so whatever comes back to it is attributed without
 * guessing. `bounces+ID` is the envelope sender (DSNs come back there), `unsubscribe+ID` the mailto:
 * of List-Unsubscribe, and `fbl` the one address to register with mailbox providers' feedback loops.
 */
export type VerpAddress =
  | { kind: 'bounces' | 'unsubscribe'; emailId: string; host: string }
  | { kind: 'fbl'; host: string };

export const returnPathHost = (domainName: string, returnPathSubdomain: string) => `${returnPathSubdomain}.${domainName}`;

export const bounceAddress = (emailId: string, domainName: string, returnPathSubdomain: string) =>
  `bounces+${emailId}@${returnPathHost(domainName, returnPathSubdomain)}`;

export const unsubscribeAddress = (emailId: string, domainName: string, returnPathSubdomain: string) =>
  `unsubscribe+${emailId}@${returnPathHost(domainName, returnPathSubdomain)}`;

const LOCAL = /^(?:(bounces|unsubscribe)\+([A-Za-z0-9_-]{3,64})|(fbl))$/i;

/** What an address on a return-path host stands for, or null when it is none of Mailroom's. */
export function parseVerp(address: string): VerpAddress | null {
  const at = address.lastIndexOf('@');
  if (at <= 0) return null;
  const match = LOCAL.exec(address.slice(0, at));
  const host = address.slice(at + 1).toLowerCase();
  if (!match || !host) return null;
  if (match[3]) return { kind: 'fbl', host };
  return { kind: match[1]!.toLowerCase() as 'bounces' | 'unsubscribe', emailId: match[2]!, host };
}
