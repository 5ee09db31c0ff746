import * as chrono from 'chrono-node';
import { invalid } from '../errors.js';

// An ISO 8601 instant names its own offset; anything else is read in the schedule time zone. A
// space may stand for the T (Python's str() of a datetime writes one).
const ISO_INSTANT = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d)$/i;
// A date-time without an offset, as Python's isoformat() writes a naive datetime: a wall-clock time.
const WALL_CLOCK = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?$/i;
/** How far in the past a time may be and still mean "now" (clock skew, a slow request). */
export const PAST_TOLERANCE_MS = 60_000;
/** How far ahead mail may be scheduled: beyond this a time is a typo, and past year 9999 no database can hold it. */
export const MAX_SCHEDULE_YEARS = 10;

/** The zone's offset from UTC in minutes at that instant (chrono takes offsets, not IANA names). */
export function timeZoneOffsetMinutes(timeZone: string, at: Date): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    }).formatToParts(at).map((part) => [part.type, part.value]),
  );
  const wallClock = Date.UTC(+parts.year!, +parts.month! - 1, +parts.day!, +parts.hour!, +parts.minute!, +parts.second!);
  return Math.round((wallClock - Math.floor(at.getTime() / 1000) * 1000) / 60_000);
}

/** The instant a wall-clock time names in `timeZone` (the zone's offset at that time, DST included). */
function wallClockInstant(match: RegExpExecArray, timeZone: string): Date {
  const [, year, month, day, hour, minute, second, fraction] = match;
  const wall = Date.UTC(+year!, +month! - 1, +day!, +hour!, +minute!, +(second ?? 0), Math.floor(+`0.${fraction ?? 0}` * 1000));
  // The offset at the wall time read as UTC is off by at most one DST change; reading it again at the instant that gives settles it.
  const first = wall - timeZoneOffsetMinutes(timeZone, new Date(wall)) * 60_000;
  return new Date(wall - timeZoneOffsetMinutes(timeZone, new Date(first)) * 60_000);
}

/**
 * When `scheduledAt` means: an ISO 8601 instant, or natural language ("tomorrow 9am", "next monday
 * 10:30", "in 2 hours") read forward from `now` in `timeZone`. Throws a 400 on `field` saying what
 * was understood when the text is not wholly a time, or names one more than a minute ago.
 */
export function parseSchedule(input: string, options: { now: Date; timeZone: string; field?: string }): Date {
  const field = options.field ?? 'scheduledAt';
  const text = input.trim();
  let at: Date | null = null;
  const wallClock = WALL_CLOCK.exec(text);
  if (ISO_INSTANT.test(text)) {
    at = new Date(text.replace(' ', 'T'));
  } else if (wallClock) {
    at = wallClockInstant(wallClock, options.timeZone);
  } else {
    const reference = { instant: options.now, timezone: timeZoneOffsetMinutes(options.timeZone, options.now) };
    const [result] = chrono.parse(text, reference, { forwardDate: true });
    const understood = result?.text.trim() ?? '';
    if (result && understood.length < text.replace(/[\s.,;!]+$/, '').length) {
      throw invalid(field, `only "${understood}" of "${text}" reads as a time; give an ISO 8601 timestamp or a phrase like "tomorrow 9am"`);
    }
    at = result?.start.date() ?? null;
  }
  if (!at || Number.isNaN(at.getTime())) {
    throw invalid(field, `"${text}" is not a time: give an ISO 8601 timestamp or a phrase like "tomorrow 9am" or "in 2 hours"`);
  }
  if (at.getTime() < options.now.getTime() - PAST_TOLERANCE_MS) {
    throw invalid(field, `"${text}" was understood as ${at.toISOString()}, which is in the past`);
  }
  const latest = new Date(options.now);
  latest.setUTCFullYear(latest.getUTCFullYear() + MAX_SCHEDULE_YEARS);
  if (at > latest) {
    throw invalid(field, `"${text}" is more than ${MAX_SCHEDULE_YEARS} years ahead; schedule mail at most ${MAX_SCHEDULE_YEARS} years from now`);
  }
  return at;
}
