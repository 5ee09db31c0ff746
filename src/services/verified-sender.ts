import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import { findDomainSummary } from '../data/domains.js';
import { asciiHostname, domainOf, parseMailbox } from '../mail/address.js';
import { invalid } from '../errors.js';
import { recentReads } from './recent-reads.js';

type DomainSummary = Awaited<ReturnType<typeof findDomainSummary>>;

// Each email names its sender domain: a verified one is read once a second, not once an email. A
// domain deleted or failing its re-check elsewhere stops sending here within that second (and the
// dispatcher fails mail whose domain is gone); one not verified yet is read every time. A domain
// deleted here is forgotten at once (`recentSenders.clear()`).
export const newRecentSenders = (): Deps['recentSenders'] => recentReads((domain) => domain?.status === 'SUCCESS');

/**
 * The rule every sender of mail obeys: the `from` address must be on a domain of the team that has
 * passed DNS verification. The error names the domain and where it stands. Reads the domain in
 * `db`, so a transaction sees the domain as it does.
 */
export function assertVerifiedSender(db: Db, teamId: number, from: string, field = 'from') {
  return checkSender(from, field, (domainName) => findDomainSummary(db, teamId, { name: domainName }));
}

/** The same rule for the mail of every request: the domain as this process read it moments ago. */
export function assertRecentVerifiedSender({ db, recentSenders }: Pick<Deps, 'db' | 'recentSenders'>, teamId: number, from: string, field = 'from') {
  return checkSender(from, field, (domainName) =>
    recentSenders.get(`${teamId}:${domainName}`, () => findDomainSummary(db, teamId, { name: domainName })),
  );
}

async function checkSender(from: string, field: string, find: (domainName: string) => Promise<DomainSummary>) {
  const mailbox = parseMailbox(from);
  if (!mailbox) throw invalid(field, `"${from}" is not a valid email address`);
  const domainName = asciiHostname(domainOf(mailbox.address)) ?? domainOf(mailbox.address);
  const domain = await find(domainName);
  if (!domain) {
    throw invalid(field, `domain ${domainName} is not registered for this team; add it with POST /v1/domains and verify it`);
  }
  if (domain.status !== 'SUCCESS') {
    throw invalid(field, `domain ${domainName} is not verified (status ${domain.status})`);
  }
  return { mailbox, domain };
}
