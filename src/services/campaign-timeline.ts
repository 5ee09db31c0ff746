import { campaignCountsByHour, TIMELINE_KINDS, type TimelineKind } from '../data/campaign-timeline.js';
import { findCampaign } from '../data/campaigns.js';
import type { Deps } from '../deps.js';
import type { Caller } from './caller.js';
import { inScope } from './campaigns.js';

export type TimelinePoint = { at: Date } & Record<TimelineKind, number>;
export type CampaignTimeline = { unit: 'hour' | 'day'; points: TimelinePoint[] };

const HOUR_MS = 3_600_000;
// Up to two days of events read best hour by hour; a longer tail (late opens, say) day by day.
const HOURLY_SPAN_HOURS = 48;

const zeros = () => Object.fromEntries(TIMELINE_KINDS.map((kind) => [kind, 0])) as Record<TimelineKind, number>;

/**
 * The campaign's counters over time: per hour (or per day, UTC, when its events span more than
 * two days), how many emails each counter counted then, with the empty buckets in between (and
 * before a lone one), so the sums agree with the counters (unsubscribes aside: they are counted
 * without an event).
 */
export async function campaignTimeline(deps: Pick<Deps, 'db'>, caller: Caller, { campaignId }: { campaignId: string }): Promise<CampaignTimeline> {
  inScope(caller, await findCampaign(deps.db, caller.teamId, campaignId));
  const counts = await campaignCountsByHour(deps.db, caller.teamId, campaignId);
  if (counts.length === 0) return { unit: 'hour', points: [] };

  const hours = counts.map((count) => count.hour);
  const [earliest, latest] = [Math.min(...hours), Math.max(...hours)];
  const unit = latest - earliest < HOURLY_SPAN_HOURS ? 'hour' : 'day';
  const size = unit === 'hour' ? 1 : 24;
  const bucketOf = (hour: number) => Math.floor(hour / size);
  const last = bucketOf(latest);
  // A lone bucket gets the empty one before it, so the chart draws a line up from nothing, not a dot.
  const first = Math.min(bucketOf(earliest), last - 1);
  const points: TimelinePoint[] = [];
  for (let bucket = first; bucket <= last; bucket++) points.push({ at: new Date(bucket * size * HOUR_MS), ...zeros() });
  for (const count of counts) points[bucketOf(count.hour) - first]![count.kind] += count.count;
  return { unit, points };
}
