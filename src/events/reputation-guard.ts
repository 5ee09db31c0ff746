import type { Config } from '../config.js';
import type { Db } from '../db/connection.js';
import { pauseCampaignsOfDomain } from '../data/campaigns.js';
import type { Counted } from '../data/email-events.js';
import { recentWindow } from '../data/email-stats.js';
import type { Logger } from '../log.js';
import { reportCampaignStatuses } from './campaigns.js';

export type GuardDeps = {
  db: Db;
  config: Pick<Config, 'reputationMaxBounceRate' | 'reputationMaxComplaintRate' | 'reputationMinDelivered'>;
  log: Logger;
};

/** `part` as a percentage of `whole`; 0 of nothing. */
export const percentOf = (part: number, whole: number) => (whole === 0 ? 0 : (part * 100) / whole);

const shown = (rate: number) => `${Number(rate.toFixed(2))}%`;

/** Why the domain's campaigns should stop, or null while its recent mail is within the limits. */
export async function reputationBreach(deps: GuardDeps, teamId: number, domainId: number): Promise<string | null> {
  const { config } = deps;
  const window = await recentWindow(deps.db, teamId, domainId, config.reputationMinDelivered);
  if (!window) return null;
  const bounceRate = percentOf(window.hardBounced, window.delivered);
  const complaintRate = percentOf(window.complained, window.delivered);
  const over = [
    ...(bounceRate > config.reputationMaxBounceRate ? [`hard-bounce rate ${shown(bounceRate)} (limit ${config.reputationMaxBounceRate}%)`] : []),
    ...(complaintRate > config.reputationMaxComplaintRate ? [`complaint rate ${shown(complaintRate)} (limit ${config.reputationMaxComplaintRate}%)`] : []),
  ];
  if (over.length === 0) return null;
  return `Paused by the reputation guard: ${over.join(' and ')} over the last ${window.delivered.toLocaleString('en')} delivered emails. Resume it once the list is cleaned.`;
}

/**
 * After hard bounces or complaints were counted: for each domain they hit, when its recent rates
 * break a limit, its scheduled and running campaigns are paused with the reason, so a bad list
 * stops before it harms the domain's reputation. Resuming is left to a person.
 */
export async function guardReputation(deps: GuardDeps, counted: Counted[]): Promise<void> {
  const hit = new Map<string, { teamId: number; domainId: number }>();
  for (const c of counted) {
    if ((c.kind === 'hard_bounced' || c.kind === 'complained') && c.domainId !== 0) hit.set(`${c.teamId}:${c.domainId}`, c);
  }
  for (const { teamId, domainId } of hit.values()) {
    const reason = await reputationBreach(deps, teamId, domainId);
    if (!reason) continue;
    const paused = await deps.db.transaction().execute(async (tx) => {
      const changes = await pauseCampaignsOfDomain(tx, teamId, domainId, reason, new Date());
      await reportCampaignStatuses(tx, changes);
      return changes.map((change) => change.row.id);
    });
    if (paused.length > 0) deps.log.warn('campaigns paused by the reputation guard', { teamId, domainId, campaigns: paused, reason });
  }
}
