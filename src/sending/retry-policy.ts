import type { Config } from '../config.js';

const MAX_DELAY_MS = 3_600_000;

/**
 * When to try a temporarily failed email again: exponential backoff from SEND_RETRY_BASE_MS
 * (doubling per attempt, at most an hour), with ±50 % jitter so mail deferred together does not
 * come back together. Null once that would fall past the retry window, counted from when the
 * email was first due: it has then FAILED.
 */
export function nextAttempt(
  email: { scheduled_at: Date | null; created_at: Date },
  attempts: number,
  now: Date,
  config: Pick<Config, 'sendRetryBaseMs' | 'sendRetryWindowMs'>,
  random: () => number = Math.random,
): Date | null {
  const backoff = Math.min(config.sendRetryBaseMs * 2 ** Math.min(attempts - 1, 30), MAX_DELAY_MS);
  const at = new Date(now.getTime() + backoff * (0.5 + random()));
  const dueSince = (email.scheduled_at ?? email.created_at).getTime();
  return at.getTime() > dueSince + config.sendRetryWindowMs ? null : at;
}
