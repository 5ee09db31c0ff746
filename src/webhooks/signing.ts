import { createHmac, randomBytes } from 'node:crypto';

/**
 * Webhook signatures, two at once, so a receiver verifies with whichever it has: the useSend
 * clients (usesend-js, the Python client) read the X-UseSend-* headers, and any Standard Webhooks
 * library (standardwebhooks.com) reads the webhook-* ones. Both sign the exact body bytes sent.
 */
const SECRET_PREFIX = 'whsec_';

export const newWebhookSecret = () => `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;

export type SigningInput = {
  secret: string;
  /** The call's id: the same on every attempt, so receivers can drop a repeat. */
  callId: string;
  type: string;
  body: string;
  retry: boolean;
  now: Date;
};

/** Every header a webhook call carries. Each attempt is signed afresh, with its own timestamp. */
export function signedHeaders(input: SigningInput): Record<string, string> {
  const ms = input.now.getTime();
  const seconds = Math.floor(ms / 1000);
  // usesend-js keys its HMAC with the secret string as written, prefix and all, over "<ms>.<body>".
  const useSend = createHmac('sha256', input.secret).update(`${ms}.${input.body}`).digest('hex');
  // Standard Webhooks keys it with the bytes the base64 after the prefix stands for.
  const key = Buffer.from(input.secret.startsWith(SECRET_PREFIX) ? input.secret.slice(SECRET_PREFIX.length) : input.secret, 'base64');
  const standard = createHmac('sha256', key).update(`${input.callId}.${seconds}.${input.body}`).digest('base64');
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'Mailroom-Webhooks/1',
    'X-UseSend-Signature': `v1=${useSend}`,
    'X-UseSend-Timestamp': String(ms),
    'X-UseSend-Event': input.type,
    'X-UseSend-Call': input.callId,
    'X-UseSend-Retry': String(input.retry),
    'webhook-id': input.callId,
    'webhook-timestamp': String(seconds),
    'webhook-signature': `v1,${standard}`,
  };
}
