import { Resolver } from 'node:dns/promises';
import { authenticate } from 'mailauth';
import type { AuthenticationResult } from '../db/schema.js';
import { AnswerCache } from '../reuse-for.js';

export type Authentication = { spf: AuthenticationResult; dkim: AuthenticationResult; dmarc: AuthenticationResult };

type MailauthResult = Awaited<ReturnType<typeof authenticate>>;

/** How long an answer is reused: shorter than the TTLs senders publish, long enough for a burst. */
const ANSWER_MS = 30_000;
/** What says a name has no such records: an answer, kept like one. Anything else is asked again. */
const NO_RECORDS = new Set(['ENOTFOUND', 'ENODATA']);

type Answer = { records: never } | { missing: Error };

/**
 * A resolver for mailauth, asking DNS_SERVERS (unset: the system's), that reuses an answer for
 * up to 30 seconds: mail comes in bursts from few senders, and each message asks for the same
 * SPF record, DKIM key and DMARC policy. Questions already on their way are not asked twice.
 * Node's resolver tells no TTL of TXT records, hence a bound below any TTL in common use.
 */
export function authenticationResolver(servers: string[], timeoutMs: number) {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers);
  const answers = new AnswerCache<string, Promise<Answer>>({ maxEntries: 10_000, ttlMs: ANSWER_MS });
  const ask = (name: string, type: string): Promise<Answer> =>
    (resolver.resolve(name, type) as Promise<never>).then(
      (records) => ({ records }),
      (error: NodeJS.ErrnoException) => {
        if (NO_RECORDS.has(String(error.code))) return { missing: error };
        throw error;
      },
    );
  return async (name: string, type: string): Promise<never> => {
    const answer = await answers.get(`${type} ${name.toLowerCase()}`, () => ask(name, type));
    if ('missing' in answer) throw answer.missing;
    return answer.records;
  };
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
