/**
 * Warm-up: a new domain or address earns receivers' trust by sending little at first. A domain
 * with warm-up on may send, on its Nth UTC day, the Nth of its daily limits, or by default 50
 * doubling each day; once that passes 100,000 (or the limits given run out) warm-up is over and
 * nothing is capped. Mail past today's cap waits for the next UTC day: never dropped.
 */

export const RAMP_START = 50;
export const RAMP_END = 100_000;
const DAY_MS = 86_400_000;

/** The UTC day of an instant, as YYYY-MM-DD. */
export const utcDay = (at: Date) => at.toISOString().slice(0, 10);

/** The day of warm-up `today` is, counting the day it began as 1. */
export const warmupDay = (startedOn: string, today: string) => Math.round((Date.parse(today) - Date.parse(startedOn)) / DAY_MS) + 1;

/** The cap of a day of warm-up; null once warm-up is over. */
export function dailyLimit(day: number, dailyLimits: number[] | null): number | null {
  if (dailyLimits) return dailyLimits[day - 1] ?? null;
  const limit = RAMP_START * 2 ** (day - 1);
  return limit > RAMP_END ? null : limit;
}

/** The first moment of the next UTC day. */
export const nextUtcDay = (at: Date) => new Date(Date.parse(utcDay(at)) + DAY_MS);

/** A domain's warm-up as GET /v1/domains/{id} shows it. */
export type WarmupState = { enabled: boolean; day: number | null; limitToday: number | null; sentToday: number | null; dailyLimits: number[] | null };

export function warmupState(settings: { startedOn: string | null; dailyLimits: number[] | null }, today: string, sentToday: number): WarmupState {
  if (settings.startedOn === null) return { enabled: false, day: null, limitToday: null, sentToday: null, dailyLimits: null };
  const day = warmupDay(settings.startedOn, today);
  const limitToday = dailyLimit(day, settings.dailyLimits);
  return { enabled: true, day, limitToday, sentToday, dailyLimits: settings.dailyLimits };
}
