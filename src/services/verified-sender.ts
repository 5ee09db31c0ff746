import type { Db } from '../db/connection.js';
import { findDomainSummary } from '../data/domains.js';
import { asciiHostname, domainOf, parseMailbox } from '../mail/address.js';
import { invalid } from '../errors.js';
import { perDatabase, RECENT_READ_TTL_MS, RecentReads } from './recent-reads.js';

type DomainSummary = Awaited<ReturnType<typeof findDomainSummary>>;

// Each email names its sender domain: a verified one is read once a second, not once an email. A
// domain deleted or failing its re-check elsewhere stops sending here within that second (and the
// dispatcher fails mail whose domain is gone); one not verified yet is read every time.
const recentSenders = perDatabase(() => new RecentReads<string, DomainSummary>(RECENT_READ_TTL_MS, (domain) => domain?.status === 'SUCCESS'));

/** Forgets the sender domains this process read lately: after a domain is deleted here. */
export function forgetRecentSenders(db: Db): void {
  recentSenders(db).clear();
}

/**
 * The rule every sender of mail obeys: the `from` address must be on a domain of the team that has
 * passed DNS verification. The error names the domain and where it stands.
 */
export async function assertVerifiedSender(db: Db, teamId: number, from: string, field = 'from') {
  const mailbox = parseMailbox(from);
  if (!mailbox) throw invalid(field, `"${from}" is not a valid email address`);
  const domainName = asciiHostname(domainOf(mailbox.address)) ?? domainOf(mailbox.address);
  const domain = await recentSenders(db).get(`${teamId}:${domainName}`, () => findDomainSummary(db, teamId, { name: domainName }));
  if (!domain) {
    throw invalid(field, `domain ${domainName} is not registered for this team; add it with POST /v1/domains and verify it`);
  }
  if (domain.status !== 'SUCCESS') {
    throw invalid(field, `domain ${domainName} is not verified (status ${domain.status})`);
  }
  return { mailbox, domain };
}
