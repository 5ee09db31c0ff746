import { findSendingDomain } from '../data/domains.js';
import type { Deps } from '../deps.js';
import { DkimSigner } from '../domains/dkim.js';
import { AnswerCache } from '../reuse-for.js';

/**
 * What sending needs of a domain: its signer, whether its mail is tracked, the IP pool it leaves
 * from (direct delivery), and its warm-up (null: none).
 */
export type DomainSettings = {
  signer: DkimSigner;
  openTracking: boolean;
  clickTracking: boolean;
  ipPool: string;
  warmup: { startedOn: string; dailyLimits: number[] | null } | null;
};

export type DomainSettingsDeps = Pick<Deps, 'db' | 'keyVault'>;

/**
 * A team's domain as sending needs it, or null when the team has no such domain. Throws the key
 * vault's KeyVaultError when this SECRET cannot decrypt the domain's key.
 */
export async function loadDomainSettings(deps: DomainSettingsDeps, teamId: number, domainId: number): Promise<DomainSettings | null> {
  const row = await findSendingDomain(deps.db, teamId, domainId);
  if (!row) return null;
  const key = deps.keyVault.open(row.dkim_private_key, row.name);
  return {
    signer: new DkimSigner(row.name, row.dkim_selector, key),
    openTracking: row.open_tracking,
    clickTracking: row.click_tracking,
    ipPool: row.ip_pool,
    warmup: row.warmup_started_on === null ? null : { startedOn: row.warmup_started_on, dailyLimits: row.warmup_daily_limits },
  };
}

// A domain's key and tracking settings are read once per this long: a change made through another
// process (this one's arrive as a domainChanged signal and apply at once) reaches the mail within it.
const TTL_MS = 60_000;
// Far more domains than one process sends from at a time.
const MAX_DOMAINS = 10_000;

/** Each domain's settings, read once per TTL_MS; decrypting a key costs more than a signature. */
export class DomainSettingsCache {
  private readonly settings = new AnswerCache<number, Promise<DomainSettings | null>>({ ttlMs: TTL_MS, maxEntries: MAX_DOMAINS });

  constructor(private readonly deps: DomainSettingsDeps) {}

  get(teamId: number, domainId: number): Promise<DomainSettings | null> {
    return this.settings.get(domainId, () => loadDomainSettings(this.deps, teamId, domainId));
  }

  forget(domainId: number): void {
    this.settings.forget(domainId);
  }
}
