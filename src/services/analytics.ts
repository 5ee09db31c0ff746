import { findDomainSummary } from '../data/domains.js';
import { countsByDay, type DayCounts, type StatsScope } from '../data/email-stats.js';
import type { Deps } from '../deps.js';
import { notFound } from '../errors.js';
import { percentOf } from '../events/reputation-guard.js';
import { assertDomainInScope, type Caller } from './caller.js';

export type AnalyticsDeps = Pick<Deps, 'db'>;

const DAY_MS = 86_400_000;

/** The team's mail, or one domain's: a key scoped to a domain sees that one only. */
async function scopeOf({ db }: AnalyticsDeps, caller: Caller, domainId: number | undefined): Promise<StatsScope> {
  if (domainId === undefined) return { teamId: caller.teamId, domainId: caller.domainId };
  assertDomainInScope(caller, domainId, `see metrics of domain ${domainId}`);
  if (!(await findDomainSummary(db, caller.teamId, { id: domainId }))) throw notFound('Domain');
  return { teamId: caller.teamId, domainId };
}

/** The UTC date `days - 1` days before today: a window of `days` days that ends today. */
const windowStart = (days: number, now: Date) => new Date(now.getTime() - (days - 1) * DAY_MS).toISOString().slice(0, 10);

/** Delivered, hard-bounced and complained, and the two rates in percent of delivered, over `days` days or all time. */
export async function reputationMetrics(deps: AnalyticsDeps, caller: Caller, query: { domainId?: number; days?: number }) {
  const scope = await scopeOf(deps, caller, query.domainId);
  const rows = await countsByDay(deps.db, scope, query.days === undefined ? null : windowStart(query.days, new Date()));
  const delivered = rows.reduce((sum, row) => sum + row.delivered, 0);
  const hardBounced = rows.reduce((sum, row) => sum + row.hardBounced, 0);
  const complained = rows.reduce((sum, row) => sum + row.complained, 0);
  return { delivered, hardBounced, complained, bounceRate: percentOf(hardBounced, delivered), complaintRate: percentOf(complained, delivered) };
}

const SERIES_KINDS = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained'] as const;
type SeriesCounts = Record<(typeof SERIES_KINDS)[number], number>;

const pick = (row: DayCounts | undefined): SeriesCounts =>
  Object.fromEntries(SERIES_KINDS.map((kind) => [kind, row?.[kind] ?? 0])) as SeriesCounts;

/** Counts per UTC day for the last `days` days, oldest first, every day present (zero when nothing happened). */
export async function emailTimeSeries(deps: AnalyticsDeps, caller: Caller, query: { days: number; domainId?: number }) {
  const scope = await scopeOf(deps, caller, query.domainId);
  const now = new Date();
  const since = windowStart(query.days, now);
  const byDay = new Map((await countsByDay(deps.db, scope, since)).map((row) => [row.day, row]));
  const result = Array.from({ length: query.days }, (_, i) => {
    const date = new Date(Date.parse(since) + i * DAY_MS).toISOString().slice(0, 10);
    return { date, ...pick(byDay.get(date)) };
  });
  const totalCounts = Object.fromEntries(SERIES_KINDS.map((kind) => [kind, result.reduce((sum, day) => sum + day[kind], 0)])) as SeriesCounts;
  return { result, totalCounts };
}
