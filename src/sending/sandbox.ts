import type { Transport } from './transports/index.js';

/**
 * The domain every team may send from at once, with no DNS: its mail only ever goes to the capture
 * transport. `.localhost` is reserved (RFC 6761), so no real domain can ever be named so, and no
 * receiver could take its mail for a real sender's.
 */
export const SANDBOX_DOMAIN = 'sandbox.mailroom.localhost';

export const isSandbox = (domainName: string) => domainName === SANDBOX_DOMAIN;

/**
 * Why mail from `domainName` may not leave through `transport`, or null when it may. Sandbox mail
 * is captured, never relayed: its sender proves nothing, so no server outside may ever see it.
 */
export function sandboxRefusal(domainName: string, transport: Transport['name']): string | null {
  if (!isSandbox(domainName) || transport === 'capture') return null;
  return `${SANDBOX_DOMAIN} is the sandbox domain: it only works with the capture transport (no SMTP_URL), as its mail is never relayed; add and verify your own domain to send for real`;
}
