import type { Db } from '../db/connection.js';
import { findSendingDomain } from '../data/domains.js';
import { DkimSigner } from '../domains/dkim.js';

/** What sending needs of a domain: its signer, and whether its mail is tracked. */
export type DomainSettings = { signer: DkimSigner; openTracking: boolean; clickTracking: boolean };

/** A team's domain as sending needs it, or null when the team has no such domain. */
export async function loadDomainSettings(db: Db, teamId: number, domainId: number): Promise<DomainSettings | null> {
  const row = await findSendingDomain(db, teamId, domainId);
  if (!row) return null;
  return { signer: new DkimSigner(row.name, row.dkim_selector, row.dkim_private_key), openTracking: row.open_tracking, clickTracking: row.click_tracking };
}

// A domain's key and tracking settings are read once per this long: a change made through another
// process (this one's arrive as a domainChanged signal and apply at once) reaches the mail within it.
const TTL_MS = 60_000;

/** Each domain's settings, read once per TTL_MS; parsing a key costs more than a signature. */
export class DomainSettingsCache {
  private readonly entries = new Map<number, { settings: Promise<DomainSettings | null>; loadedAt: number }>();

  constructor(private readonly db: Db) {}

  get(teamId: number, domainId: number): Promise<DomainSettings | null> {
    const cached = this.entries.get(domainId);
    if (cached && Date.now() - cached.loadedAt < TTL_MS) return cached.settings;
    const settings = loadDomainSettings(this.db, teamId, domainId);
    this.entries.set(domainId, { settings, loadedAt: Date.now() });
    settings.catch(() => this.entries.delete(domainId));
    return settings;
  }

  forget(domainId: number): void {
    this.entries.delete(domainId);
  }
}
