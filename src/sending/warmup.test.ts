import { describe, expect, it } from 'vitest';
import { dailyLimit, nextUtcDay, warmupDay, warmupState } from './warmup.js';

describe('warm-up', () => {
  it('ramps 50, 100, 200… and ends once the cap would pass 100,000', () => {
    expect([1, 2, 3, 4].map((day) => dailyLimit(day, null))).toEqual([50, 100, 200, 400]);
    expect(dailyLimit(12, null)).toBeNull();
    expect(dailyLimit(11, null)).toBe(51_200);
  });

  it('takes the caps given day by day, and ends with them', () => {
    expect([1, 2, 3].map((day) => dailyLimit(day, [10, 0]))).toEqual([10, 0, null]);
  });

  it('counts UTC days from the day it began, that day being 1', () => {
    expect(warmupDay('2030-01-01', '2030-01-01')).toBe(1);
    expect(warmupDay('2030-01-31', '2030-02-02')).toBe(3);
    expect(nextUtcDay(new Date('2030-01-01T23:59:59.999Z')).toISOString()).toBe('2030-01-02T00:00:00.000Z');
  });

  it('shows nothing for a domain without warm-up, and the day, cap and count for one with it', () => {
    expect(warmupState({ startedOn: null, dailyLimits: null }, '2030-01-05', 0)).toEqual({ enabled: false, day: null, limitToday: null, sentToday: null, dailyLimits: null });
    expect(warmupState({ startedOn: '2030-01-04', dailyLimits: null }, '2030-01-05', 7)).toEqual({ enabled: true, day: 2, limitToday: 100, sentToday: 7, dailyLimits: null });
  });
});
