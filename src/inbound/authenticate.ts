import { Resolver } from 'node:dns/promises';
import { authenticate } from 'mailauth';
import type { AuthenticationResult } from '../db/schema.js';

export type Authentication = { spf: AuthenticationResult; dkim: AuthenticationResult; dmarc: AuthenticationResult };

type MailauthResult = Awaited<ReturnType<typeof authenticate>>;

/** A resolver for mailauth, asking DNS_SERVERS (unset: the system's). */
export function authenticationResolver(servers: string[], timeoutMs: number) {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers);
  return (name: string, type: string) => resolver.resolve(name, type) as Promise<never>;
}

/**
 * SPF for the client's address and the envelope sender, DKIM for every signature, and DMARC for
 * the From domain (RFC 7208, 6376, 7489), by mailauth: each as its result and what it was about.
 * Checked, never enforced: the team decides what to do with mail that fails.
 */
export async function authenticateMessage(
  raw: Buffer,
  envelope: { from: string; clientAddress: string | null; helo: string | null },
  options: { resolver: ReturnType<typeof authenticationResolver>; mta: string },
): Promise<Authentication> {
  const result: MailauthResult = await authenticate(raw, {
    ip: envelope.clientAddress ?? undefined,
    helo: envelope.helo ?? undefined,
    sender: envelope.from,
    mta: options.mta,
    resolver: options.resolver,
    disableArc: true,
    disableBimi: true,
  });
  // An unsigned message has one result that names no domain ("message not signed"): no signature.
  const signatures = (result.dkim?.results ?? []).filter((signature: Record<string, any>) => signature.signingDomain).map((signature: Record<string, any>) => ({
    result: String(signature.status?.result ?? 'none'),
    domain: signature.signingDomain ?? null,
    selector: signature.selector ?? null,
    aligned: signature.status?.aligned ?? null,
  }));
  // The message's DKIM result is its best signature's: one valid signature makes it pass.
  const dkimResult = signatures.some((s) => s.result === 'pass') ? 'pass' : (signatures[0]?.result ?? 'none');
  const spf = result.spf as Record<string, any> | false;
  const dmarc = result.dmarc as Record<string, any> | false;
  return {
    spf: { result: String(spf ? spf.status?.result : 'none'), domain: spf ? (spf.domain ?? null) : null, clientAddress: envelope.clientAddress },
    dkim: { result: dkimResult, signatures },
    dmarc: { result: String(dmarc ? dmarc.status?.result : 'none'), domain: dmarc ? (dmarc.domain ?? null) : null, policy: dmarc ? (dmarc.policy ?? null) : null },
  };
}
