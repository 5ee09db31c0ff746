import { parse } from 'tldts';
import type { Config } from '../config.js';
import type { RecordStatuses } from '../data/domains.js';
import { dkimRecordValue } from './dkim.js';

export type RecordKind = keyof RecordStatuses;

/** A record the domain owner creates: where it is looked up, and how a DNS provider names it. */
export type RequiredRecord = {
  kind: RecordKind;
  type: 'TXT' | 'MX';
  /** Fully qualified, for lookups. */
  host: string;
  /** Relative to the registrable domain, the zone DNS providers edit. */
  name: string;
  value: string;
  priority: number | null;
  /** Not needed for verification, but receivers trust mail more with it. */
  recommended: boolean;
};

export type DomainDnsIdentity = { name: string; subdomain: string | null; dkimSelector: string; dkimPublicKey: string };

export const DMARC_RECORD_VALUE = 'v=DMARC1; p=none;';
export const MX_PRIORITY = 10;

/**
 * Splits a host name at its registrable domain (public suffix list, private suffixes included, as
 * their owners run those zones): `news.example.co.uk` → `example.co.uk` + `news`. Null when the name
 * is itself a public suffix, which nobody can add records to.
 */
export function registrableParts(name: string): { registrable: string; subdomain: string | null } | null {
  const parsed = parse(name, { allowPrivateDomains: true });
  if (!parsed.domain) return null;
  return { registrable: parsed.domain, subdomain: parsed.subdomain || null };
}

export function spfRecordValue(config: Pick<Config, 'spfInclude'>) {
  return `v=spf1 include:${config.spfInclude} ~all`;
}

export function requiredRecords(
  domain: DomainDnsIdentity,
  config: Pick<Config, 'returnPathSubdomain' | 'inboundMxHost' | 'spfInclude'>,
): RequiredRecord[] {
  const at = (prefix: string) => ({
    host: `${prefix}.${domain.name}`,
    name: domain.subdomain ? `${prefix}.${domain.subdomain}` : prefix,
  });
  const returnPath = at(config.returnPathSubdomain);
  return [
    {
      kind: 'dkim', type: 'TXT', ...at(`${domain.dkimSelector}._domainkey`),
      value: dkimRecordValue(domain.dkimPublicKey), priority: null, recommended: false,
    },
    { kind: 'spf', type: 'TXT', ...returnPath, value: spfRecordValue(config), priority: null, recommended: false },
    { kind: 'mx', type: 'MX', ...returnPath, value: config.inboundMxHost, priority: MX_PRIORITY, recommended: false },
    { kind: 'dmarc', type: 'TXT', ...at('_dmarc'), value: DMARC_RECORD_VALUE, priority: null, recommended: true },
  ];
}

