import type { Config } from '../config.js';

const MAX_DELAY_MS = 3_600_000;

/**
 * When to try a temporarily failed email again: exponential backoff from SEND_RETRY_BASE_MS
 * (doubling per attempt, at most an hour), with ±50 % jitter so mail deferred together does not
 * come back together. The retry window runs SEND_RETRY_WINDOW_HOURS from when the email was first
 * due: a retry that would fall past its end is moved to the end, so the email is tried until the
 * window has passed. Null once it has (an attempt that failed at or after the end): the email has
 * then FAILED.
 */
export function nextAttempt(
  email: { scheduled_at: Date | null; created_at: Date },
  attempts: number,
  now: Date,
  config: Pick<Config, 'sendRetryBaseMs' | 'sendRetryWindowMs'>,
  random: () => number = Math.random,
): Date | null {
  const windowEnd = (email.scheduled_at ?? email.created_at).getTime() + config.sendRetryWindowMs;
  if (now.getTime() >= windowEnd) return null;
  const backoff = Math.min(config.sendRetryBaseMs * 2 ** Math.min(attempts - 1, 30), MAX_DELAY_MS);
  return new Date(Math.min(now.getTime() + backoff * (0.5 + random()), windowEnd));
}
