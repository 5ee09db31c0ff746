import type { Db } from '../db/connection.js';
import type { CampaignRow } from '../data/campaigns.js';
import type { CampaignStatus } from '../db/schema.js';
import { report } from './outbox.js';
import { campaignStatusChanged } from './payloads.js';

/**
 * Reports campaign.status_changed for each campaign a write moved to another status (or created:
 * `previous` null), the campaign as the write left it, in the caller's transaction.
 */
export async function reportCampaignStatuses(tx: Db, changes: Array<{ row: CampaignRow; previous: CampaignStatus | null }>): Promise<void> {
  await report(
    tx,
    changes
      .filter((change) => change.row.status !== change.previous)
      .map((change) => ({ teamId: change.row.team_id, subjectKey: `campaign:${change.row.id}`, domainId: null, at: change.row.updated_at, event: campaignStatusChanged(change.row, change.previous) })),
  );
}
