import type { Deps } from '../deps.js';
import { findDomainSummary } from '../data/domains.js';
import { asciiHostname, domainOf, parseMailbox } from '../mail/address.js';
import { invalid } from '../errors.js';
import { isSandbox, sandboxRefusal } from '../sending/sandbox.js';
import { transportOf } from '../sending/transports/index.js';
import { recentReads } from './recent-reads.js';
import { sandboxDomain } from './sandbox-domain.js';

type DomainSummary = Awaited<ReturnType<typeof findDomainSummary>>;

/** What the sender rule reads: the domains, the transport the mail would take, and what makes the sandbox domain. */
export type SenderDeps = Pick<Deps, 'db' | 'config' | 'keyVault'>;

// Each email names its sender domain: a verified one is read once a second, not once an email. A
// domain deleted or failing its re-check elsewhere stops sending here within that second (and the
// dispatcher fails mail whose domain is gone); one not verified yet is read every time. A domain
// deleted here is forgotten at once (`recentSenders.clear()`).
export const newRecentSenders = (): Deps['recentSenders'] => recentReads((domain) => domain?.status === 'SUCCESS');

/**
 * The rule every sender of mail obeys: the `from` address must be on a domain of the team that has
 * passed DNS verification, or on the team's sandbox domain while mail goes to the capture
 * transport. The error names the domain and where it stands. Reads the domain in `deps.db`, so a
 * transaction sees the domain as it does.
 */
export function assertVerifiedSender(deps: SenderDeps, teamId: number, from: string, field = 'from') {
  return checkSender(deps, from, field, (domainName) => findSender(deps, teamId, domainName));
}

/** The same rule for the mail of every request: the domain as this process read it moments ago. */
export function assertRecentVerifiedSender(deps: SenderDeps & Pick<Deps, 'recentSenders'>, teamId: number, from: string, field = 'from') {
  return checkSender(deps, from, field, (domainName) => deps.recentSenders.get(`${teamId}:${domainName}`, () => findSender(deps, teamId, domainName)));
}

/** The team's domain of that name; the sandbox domain is made on its first use. */
async function findSender(deps: SenderDeps, teamId: number, domainName: string): Promise<DomainSummary> {
  if (!isSandbox(domainName)) return findDomainSummary(deps.db, teamId, { name: domainName });
  const { id, name, status } = await sandboxDomain(deps, teamId);
  return { id, name, status };
}

async function checkSender(deps: Pick<Deps, 'config'>, from: string, field: string, find: (domainName: string) => Promise<DomainSummary>) {
  const mailbox = parseMailbox(from);
  if (!mailbox) throw invalid(field, `"${from}" is not a valid email address`);
  const domainName = asciiHostname(domainOf(mailbox.address)) ?? domainOf(mailbox.address);
  const refusal = sandboxRefusal(domainName, transportOf(deps.config));
  if (refusal) throw invalid(field, refusal);
  const domain = await find(domainName);
  if (!domain) {
    throw invalid(field, `domain ${domainName} is not registered for this team; add it with POST /v1/domains and verify it`);
  }
  if (domain.status !== 'SUCCESS') {
    throw invalid(field, `domain ${domainName} is not verified (status ${domain.status})`);
  }
  return { mailbox, domain };
}
