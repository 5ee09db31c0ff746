import { claimDueCampaign, finishCampaigns, releaseBatch, startCampaign } from '../data/campaign-release.js';
import type { Deps } from '../deps.js';
import { addressOf, domainOf } from '../mail/address.js';

export type ReleaserDeps = Pick<Deps, 'db' | 'config' | 'log' | 'signals' | 'metrics'>;
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
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;

  const releaseOne = async (): Promise<boolean> => {
    const started = performance.now();
    const released = await db.transaction().execute(async (tx) => {
      const at = now();
      const campaign = await claimDueCampaign(tx, at);
      if (!campaign) return null;
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
      return released;
    });
    if (released === null) return false;
    deps.metrics.releaseBatch((performance.now() - started) / 1000);
    deps.metrics.emailsReached('QUEUED', released);
    return true;
  };

  const tick = () =>
    (running ??= (async () => {
      try {
        // The dispatcher starts on each batch as it is committed, not after the last one.
        while (!stopped && (await releaseOne())) deps.signals.emit('emailsDue');
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
  const autostart = options.autostart !== false;
  const unsubscribe = autostart ? deps.signals.on('campaignsDue', () => void tick()) : null;
  if (autostart) void loop();

  return {
    tick,
    async stop() {
      stopped = true;
      unsubscribe?.();
      clearTimeout(timer);
      await running;
    },
  };
}
