import { sleep } from './wait.js';

/**
 * Waits, when less than `needMs` is left of the clock's current minute, for the next one: limits
 * counted per minute of the clock (AUTH_FAILURES_PER_MINUTE) start over at its turn, so a test
 * that counts up to one must run inside a single minute.
 */
export async function roomInThisMinute(needMs: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await sleep(left + 100);
}
