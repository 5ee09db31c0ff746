import type { Db } from '../db/connection.js';
import { findDomainSummary } from '../data/domains.js';
import { asciiHostname, domainOf, parseMailbox } from '../mail/address.js';
import { invalid } from '../errors.js';

/**
 * The rule every sender of mail obeys: the `from` address must be on a domain of the team that has
 * passed DNS verification. The error names the domain and where it stands.
 */
export async function assertVerifiedSender(db: Db, teamId: number, from: string, field = 'from') {
  const mailbox = parseMailbox(from);
  if (!mailbox) throw invalid(field, `"${from}" is not a valid email address`);
  const domainName = asciiHostname(domainOf(mailbox.address)) ?? domainOf(mailbox.address);
  const domain = await findDomainSummary(db, teamId, { name: domainName });
  if (!domain) {
    throw invalid(field, `domain ${domainName} is not registered for this team; add it with POST /v1/domains and verify it`);
  }
  if (domain.status !== 'SUCCESS') {
    throw invalid(field, `domain ${domainName} is not verified (status ${domain.status})`);
  }
  return { mailbox, domain };
}
