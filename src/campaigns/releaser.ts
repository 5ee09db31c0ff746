import { claimDueCampaign, finishCampaigns, releaseBatch, startCampaign } from '../data/campaign-release.js';
import { findCampaign } from '../data/campaigns.js';
import { findSegment } from '../data/segments.js';
import type { Deps } from '../deps.js';
import { reportCampaignStatuses } from '../events/campaigns.js';
import { reportEmailEvents } from '../events/email-changes.js';
import { listening } from '../events/outbox.js';
import { addressOf, domainOf } from '../mail/address.js';
import { startWorkerLoop } from '../workers/loop.js';

export type ReleaserDeps = Pick<Deps, 'db' | 'dbKind' | 'config' | 'log' | 'signals' | 'metrics'>;
export type Releaser = {
  /** Releases every batch due now, then marks finished campaigns SENT; what the timer runs. */
  tick(): Promise<void>;
  stop(): Promise<void>;
};

/**
 * Releases due campaign batches. Each batch is one transaction: claim the campaign (SKIP LOCKED,
 * so any number of releasers can run), start it if it has not started, insert the batch's email
 * rows and move the cursor. A crash loses nothing: an uncommitted batch is released again, and a
 * committed one is behind the cursor it moved (the unique (campaign, contact) index would refuse
 * it a second time).
 *
 * `now` is injectable so tests can move the clock across batch windows; without `autostart` the
 * releaser neither polls nor listens for signals, and only runs when its `tick` is called.
 */
export function startReleaser(deps: ReleaserDeps, options: { now?: () => Date; autostart?: boolean } = {}): Releaser {
  const { db, config, log } = deps;
  const now = options.now ?? (() => new Date());

  const releaseOne = async (): Promise<boolean> => {
    const started = performance.now();
    const released = await db.transaction().execute(async (tx) => {
      const at = now();
      const campaign = await claimDueCampaign(tx, at);
      if (!campaign) return null;
      // A segment deleted under the campaign (it cannot be, while the campaign is unsent) matches no one.
      const segment = campaign.segment_id
        ? ((await findSegment(tx, campaign.team_id, campaign.contact_book_id ?? '', campaign.segment_id))?.filter ?? { any: [] })
        : null;
      const last = campaign.started_at ? campaign : await startCampaign(tx, campaign, at, segment);
      const heard = (await listening(tx, [campaign.team_id]))(campaign.team_id, 'email.queued', campaign.domain_id);
      const { scanned, released, emails } = await releaseBatch(tx, {
        campaign,
        cursorAt: campaign.cursor_at,
        last,
        domainName: domainOf(addressOf(campaign.from_address)),
        now: at,
        nextAt: new Date(at.getTime() + campaign.batch_window_minutes * 60_000),
        withRows: heard,
        segment,
        mailAnalysed: deps.dbKind === 'postgres',
      });
      await reportEmailEvents(tx, emails.map((email) => ({ teamId: campaign.team_id, email, status: 'QUEUED' as const, data: null })), at);
      // Starting, or the first batch after a new schedule, makes it RUNNING.
      if (campaign.status !== 'RUNNING') await reportCampaignStatuses(tx, [{ row: (await findCampaign(tx, campaign.team_id, campaign.id))!, previous: campaign.status }]);
      log.debug('campaign batch released', { campaignId: campaign.id, scanned, released });
      return released;
    });
    if (released === null) return false;
    deps.metrics.releaseBatch((performance.now() - started) / 1000);
    deps.metrics.emailsReached('QUEUED', released);
    return true;
  };

  const loop = startWorkerLoop({
    pass: async (stopping) => {
      // The dispatcher starts on each batch as it is committed, not after the last one.
      while (!stopping.aborted && (await releaseOne())) deps.signals.emit('emailsDue');
      await db.transaction().execute(async (tx) => reportCampaignStatuses(tx, await finishCampaigns(tx, now())));
    },
    pollMs: config.campaignPollMs,
    onError: (error) => log.error('releasing campaign batches failed', { error }),
    wakeOn: { signals: deps.signals, names: ['campaignsDue'] },
    start: options.autostart !== false,
  });

  return { tick: () => loop.runNow(), stop: () => loop.stop() };
}
