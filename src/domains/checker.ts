import { Resolver } from 'node:dns/promises';
import type { Config } from '../config.js';
import type { CheckOutcome, RecordStatuses } from '../data/domains.js';
import type { DomainStatus } from '../db/schema.js';
import { tagList } from './dkim.js';
import { requiredRecords, type DomainDnsIdentity, type RecordKind, type RequiredRecord } from './dns-records.js';

type CheckConfig = Pick<
  Config,
  'returnPathSubdomain' | 'inboundMxHost' | 'spfInclude' | 'domainVerificationWindowMs' | 'domainRecheckMs'
>;

// c-ares retries each server this often, waiting DNS_TIMEOUT_MS (doubling) for each try.
const DNS_TRIES = 2;
// Checks that did not succeed are repeated after 1, 2, 4, … minutes, at most hourly.
const FIRST_RETRY_MS = 60_000;
const MAX_RETRY_MS = 3_600_000;

export function createDnsResolver(config: Pick<Config, 'dnsServers' | 'dnsTimeoutMs'>): Resolver {
  const resolver = new Resolver({ timeout: config.dnsTimeoutMs, tries: DNS_TRIES });
  if (config.dnsServers.length > 0) resolver.setServers(config.dnsServers);
  return resolver;
}

/** What one lookup showed: the record as required, none at all, a wrong one, or no answer from DNS. */
export type Finding = { kind: RecordKind; recommended: boolean } & (
  | { result: 'found' }
  | { result: 'missing' | 'wrong' | 'unreachable'; problem: string }
);

type Lookup<T> = { records: T[] } | { error: string };

const DNS_ERRORS: Record<string, string> = {
  ETIMEOUT: 'the DNS server did not answer in time',
  ESERVFAIL: 'the DNS server answered SERVFAIL',
  EREFUSED: 'the DNS server refused the query',
  ECONNREFUSED: 'the DNS server is unreachable',
};

async function lookUp<T>(query: () => Promise<T[]>): Promise<Lookup<T>> {
  try {
    return { records: await query() };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'UNKNOWN';
    // NXDOMAIN and NODATA are answers: the record does not exist. Anything else says nothing about it.
    if (code === 'ENOTFOUND' || code === 'ENODATA') return { records: [] };
    return { error: `${DNS_ERRORS[code] ?? 'the DNS lookup failed'} (${code})` };
  }
}

/** Every TXT record at the host, its character-strings joined as RFC 6376 §3.6.2.2 and RFC 7208 §3.3 require. */
const txtRecords = (resolver: Resolver, host: string) =>
  lookUp(async () => (await resolver.resolveTxt(host)).map((strings) => strings.join('')));

const bareHost = (host: string) => host.toLowerCase().replace(/\.$/, '');
const abbreviated = (key: string) => (key.length > 24 ? `${key.slice(0, 12)}…${key.slice(-8)}` : key);

type Check = (resolver: Resolver, record: RequiredRecord, domain: DomainDnsIdentity, config: CheckConfig) => Promise<Omit<Finding, 'kind' | 'recommended'>>;

const checks: Record<RecordKind, Check> = {
  async dkim(resolver, record, domain) {
    const txt = await txtRecords(resolver, record.host);
    if ('error' in txt) return { result: 'unreachable', problem: `TXT lookup of ${record.host} failed: ${txt.error}` };
    const keys = txt.records.map(tagList).filter((t) => t.has('p') && (t.get('v') ?? 'DKIM1').toUpperCase() === 'DKIM1');
    if (keys.length === 0) return { result: 'missing', problem: `no DKIM record (TXT "v=DKIM1; …") at ${record.host}` };
    if (keys.some((t) => t.get('p') === domain.dkimPublicKey && (t.get('k') ?? 'rsa').toLowerCase() === 'rsa')) {
      return { result: 'found' };
    }
    const published = keys.map((t) => `p=${abbreviated(t.get('p')!)}`).join(', ');
    return {
      result: 'wrong',
      problem: `the DKIM record at ${record.host} has another public key (${published}) than this domain's (p=${abbreviated(domain.dkimPublicKey)})`,
    };
  },

  async spf(resolver, record, _domain, config) {
    const txt = await txtRecords(resolver, record.host);
    if ('error' in txt) return { result: 'unreachable', problem: `TXT lookup of ${record.host} failed: ${txt.error}` };
    const spf = txt.records.map((value) => value.trim()).filter((value) => /^v=spf1(\s|$)/i.test(value));
    if (spf.length === 0) return { result: 'missing', problem: `no SPF record (TXT "v=spf1 …") at ${record.host}` };
    if (spf.length > 1) {
      return {
        result: 'wrong',
        problem: `${record.host} has ${spf.length} SPF records; SPF allows one (RFC 7208), so merge them into one that includes ${config.spfInclude}`,
      };
    }
    const includes = spf[0]!.split(/\s+/).some((term) => /^\+?include:/i.test(term) && bareHost(term.slice(term.indexOf(':') + 1)) === config.spfInclude);
    if (includes) return { result: 'found' };
    return { result: 'wrong', problem: `the SPF record at ${record.host} ("${spf[0]}") does not contain include:${config.spfInclude}` };
  },

  async mx(resolver, record, _domain, config) {
    const mx = await lookUp(() => resolver.resolveMx(record.host));
    if ('error' in mx) return { result: 'unreachable', problem: `MX lookup of ${record.host} failed: ${mx.error}` };
    if (mx.records.length === 0) return { result: 'missing', problem: `no MX record at ${record.host}` };
    if (mx.records.some((r) => bareHost(r.exchange) === config.inboundMxHost)) return { result: 'found' };
    const targets = mx.records.map((r) => bareHost(r.exchange)).join(', ');
    return { result: 'wrong', problem: `the MX record of ${record.host} points at ${targets}, not ${config.inboundMxHost}` };
  },

  async dmarc(resolver, record, domain) {
    const policiesAt = async (host: string) => {
      const txt = await txtRecords(resolver, host);
      return 'error' in txt ? txt : { records: txt.records.filter((value) => /^v=DMARC1\s*(;|$)/i.test(value.trim())) };
    };
    let policies = await policiesAt(record.host);
    // Receivers fall back to the organisational domain's policy for a subdomain (RFC 7489 §6.6.3).
    if (!('error' in policies) && policies.records.length === 0 && domain.subdomain) {
      policies = await policiesAt(`_dmarc.${domain.name.slice(domain.subdomain.length + 1)}`);
    }
    if ('error' in policies) return { result: 'unreachable', problem: `TXT lookup of ${record.host} failed: ${policies.error}` };
    if (policies.records.length === 1) return { result: 'found' };
    if (policies.records.length > 1) {
      return { result: 'wrong', problem: `${record.host} has ${policies.records.length} DMARC records; receivers ignore all of them unless there is one` };
    }
    return { result: 'missing', problem: `no DMARC record at ${record.host}` };
  },
};

/** Looks every record of the domain up in DNS; never throws for what DNS answers. */
export async function lookUpRecords(resolver: Resolver, domain: DomainDnsIdentity, config: CheckConfig): Promise<Finding[]> {
  return Promise.all(
    requiredRecords(domain, config).map(async (record) => ({
      kind: record.kind,
      recommended: record.recommended,
      ...(await checks[record.kind](resolver, record, domain, config)),
    }) as Finding),
  );
}

export type CheckState = { status: DomainStatus; verificationStartedAt: Date | null; checkAttempts: number };

const LABELS: Record<RecordKind, string> = { dkim: 'DKIM', spf: 'SPF', mx: 'MX', dmarc: 'DMARC' };

/**
 * The domain's new state from what DNS showed. A verified domain stays verified through DNS
 * outages (its mail keeps flowing) but not through a record that is gone or wrong; a domain being
 * verified fails only on records found missing or wrong once its window has passed, never on
 * lookups that got no answer.
 */
export function evaluateCheck(state: CheckState, findings: Finding[], now: Date, config: CheckConfig): CheckOutcome {
  const required = findings.filter((f) => !f.recommended);
  const conclusive = required.some((f) => f.result === 'missing' || f.result === 'wrong');
  const unreachable = required.some((f) => f.result === 'unreachable');
  const problems = findings
    .filter((f) => f.result !== 'found' && !(f.recommended && f.result === 'missing'))
    .map((f) => `${LABELS[f.kind]}: ${'problem' in f ? f.problem : ''}`);
  const verificationError = problems.length > 0 ? problems.join('; ') : null;
  const wasVerified = state.status === 'SUCCESS';
  const attempts = state.checkAttempts + 1;
  const retryAt = new Date(now.getTime() + Math.min(FIRST_RETRY_MS * 2 ** (attempts - 1), MAX_RETRY_MS));

  const outcome = (status: DomainStatus, fields: Pick<CheckOutcome, 'errorMessage' | 'verificationStartedAt' | 'nextCheckAt' | 'checkAttempts'>): CheckOutcome => ({
    status,
    records: recordStatuses(findings, status),
    isVerifying: status === 'PENDING' || status === 'TEMPORARY_FAILURE',
    verificationError,
    lastCheckedAt: now,
    ...fields,
  });

  if (required.every((f) => f.result === 'found')) {
    return outcome('SUCCESS', {
      errorMessage: null,
      verificationStartedAt: null,
      nextCheckAt: new Date(now.getTime() + config.domainRecheckMs),
      checkAttempts: 0,
    });
  }
  if (wasVerified && !conclusive) {
    const nextCheckAt = new Date(Math.min(retryAt.getTime(), now.getTime() + config.domainRecheckMs));
    return outcome('SUCCESS', {
      errorMessage: `The last re-check got no answer from DNS; the domain stays verified and is checked again at ${nextCheckAt.toISOString()}`,
      verificationStartedAt: null,
      nextCheckAt,
      checkAttempts: attempts,
    });
  }

  // A verified domain whose record went away starts a new window from now.
  const windowStart = wasVerified ? now : (state.verificationStartedAt ?? now);
  const windowEnd = new Date(windowStart.getTime() + config.domainVerificationWindowMs);
  // A check is always made right when the window ends, so FAILED is reported on time.
  const nextCheckAt = windowEnd > now && windowEnd < retryAt ? windowEnd : retryAt;
  const retrying = { verificationStartedAt: windowStart, nextCheckAt, checkAttempts: attempts };

  if (wasVerified) {
    return outcome('PENDING', {
      ...retrying,
      errorMessage: `A required record that had verified is now missing or wrong: sending from this domain is stopped until it is back (checked again at ${nextCheckAt.toISOString()})`,
    });
  }
  if (conclusive && now >= windowEnd) {
    return outcome('FAILED', {
      errorMessage: `Required records were still missing or wrong when the verification window ended at ${windowEnd.toISOString()}; fix them and verify again`,
      verificationStartedAt: windowStart,
      nextCheckAt: null,
      checkAttempts: attempts,
    });
  }
  if (unreachable) {
    return outcome('TEMPORARY_FAILURE', {
      ...retrying,
      errorMessage: `DNS gave no answer for some records, so they could not be checked; retrying at ${nextCheckAt.toISOString()}`,
    });
  }
  return outcome('PENDING', { ...retrying, errorMessage: null });
}

function recordStatuses(findings: Finding[], domainStatus: DomainStatus): RecordStatuses {
  const statuses = {} as RecordStatuses;
  for (const f of findings) {
    statuses[f.kind] =
      f.result === 'found' ? 'SUCCESS'
      : f.result === 'wrong' ? 'FAILED'
      : f.result === 'unreachable' ? 'TEMPORARY_FAILURE'
      : f.recommended ? 'NOT_STARTED'
      : domainStatus === 'FAILED' ? 'FAILED'
      : 'PENDING';
  }
  return statuses;
}
