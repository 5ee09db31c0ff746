import type { Config } from '../config.js';
import type { Db } from '../db/connection.js';
import { claimDueCampaign, finishCampaigns, releaseBatch, startCampaign } from '../data/campaign-release.js';
import { domainOf } from '../email-address.js';
import type { Logger } from '../log.js';
import { addressOf } from '../sending/message.js';
import { wakeDispatcher } from '../sending/dispatcher.js';

export type ReleaserDeps = { db: Db; config: Pick<Config, 'campaignPollMs'>; log: Logger };
export type Releaser = {
  /** Releases every batch due now, then marks finished campaigns SENT; what the timer runs. */
  tick(): Promise<void>;
  stop(): Promise<void>;
};

// The releaser of this process, per database, so scheduling a campaign for now starts it at once.
const localReleasers = new WeakMap<Db, () => void>();

/** Has this process's releaser look for due batches now; other processes find them on their next poll. */
export function wakeReleaser(db: Db): void {
  localReleasers.get(db)?.();
}

/**
 * Releases due campaign batches. Each batch is one transaction: claim the campaign (SKIP LOCKED,
 * so any number of releasers can run), start it if it has not started, insert the batch's email
 * rows and move the cursor. A crash loses nothing: an uncommitted batch is released again, and the
 * unique (campaign, contact) index keeps a committed one from being released twice.
 *
 * `now` is injectable so tests can move the clock across batch windows.
 */
export function startReleaser(deps: ReleaserDeps, options: { now?: () => Date; autostart?: boolean } = {}): Releaser {
  const { db, config, log } = deps;
  const now = options.now ?? (() => new Date());
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;

  const releaseOne = async (): Promise<boolean> =>
    db.transaction().execute(async (tx) => {
      const at = now();
      const campaign = await claimDueCampaign(tx, at);
      if (!campaign) return false;
      const last = campaign.started_at ? campaign : await startCampaign(tx, campaign, at);
      const { scanned, released } = await releaseBatch(tx, {
        campaign,
        cursorAt: campaign.cursor_at,
        last,
        domainName: domainOf(addressOf(campaign.from_address)),
        now: at,
        nextAt: new Date(at.getTime() + campaign.batch_window_minutes * 60_000),
      });
      log.debug('campaign batch released', { campaignId: campaign.id, scanned, released });
      return true;
    });

  const tick = () =>
    (running ??= (async () => {
      try {
        // The dispatcher starts on each batch as it is committed, not after the last one.
        while (!stopped && (await releaseOne())) wakeDispatcher(db);
        await finishCampaigns(db, now());
      } catch (error) {
        log.error('releasing campaign batches failed', { error });
      } finally {
        running = null;
      }
    })());

  const loop = async () => {
    await tick();
    if (!stopped) timer = setTimeout(loop, config.campaignPollMs);
  };
  if (options.autostart !== false) {
    localReleasers.set(db, () => void tick());
    void loop();
  }

  return {
    tick,
    async stop() {
      stopped = true;
      if (options.autostart !== false) localReleasers.delete(db);
      clearTimeout(timer);
      await running;
    },
  };
}
