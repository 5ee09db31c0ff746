import { Webhook } from 'standardwebhooks';
import { Webhooks } from 'usesend-js';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signedHeaders } from './signing.js';

const body = JSON.stringify({ type: 'email.delivered', createdAt: '2025-01-01T00:00:00.000Z', data: { to: ['zoë@example.com'], subject: 'Grüße 📬' } });

const sign = (secret: string, overrides: Partial<Parameters<typeof signedHeaders>[0]> = {}) =>
  signedHeaders({ secret, callId: 'call_01hx9abc', type: 'email.delivered', body, retry: false, now: new Date(), ...overrides });

/** Standard Webhooks throws on a bad signature; true when it accepts. */
function standardAccepts(secret: string, payload: string, headers: Record<string, string>): boolean {
  try {
    new Webhook(secret).verify(payload, headers);
    return true;
  } catch {
    return false;
  }
}

describe('webhook signatures', () => {
  it('a secret is whsec_ and the base64 of 32 random bytes, new each time', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(secret);
  });

  it('usesend-js verifies a signed call', () => {
    const secret = newWebhookSecret();
    const headers = sign(secret);
    expect(new Webhooks(secret).verify(body, { headers })).toBe(true);
    expect(new Webhooks(secret).constructEvent(body, { headers })).toStrictEqual(JSON.parse(body));
  });

  it('a Standard Webhooks library verifies the same call', () => {
    const secret = newWebhookSecret();
    expect(standardAccepts(secret, body, sign(secret))).toBe(true);
  });

  it('the headers carry the event, the call id and whether this is a retry', () => {
    const now = new Date('2025-06-01T12:00:00.123Z');
    const headers = sign(newWebhookSecret(), { retry: true, now });
    expect(headers).toMatchObject({
      'Content-Type': 'application/json',
      'User-Agent': 'Mailroom-Webhooks/1',
      'X-UseSend-Timestamp': '1748779200123',
      'X-UseSend-Event': 'email.delivered',
      'X-UseSend-Call': 'call_01hx9abc',
      'X-UseSend-Retry': 'true',
      'webhook-id': 'call_01hx9abc',
      'webhook-timestamp': '1748779200',
    });
    expect(headers['X-UseSend-Signature']).toMatch(/^v1=[0-9a-f]{64}$/);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
  });

  it('a tampered body is refused by both verifiers', () => {
    const secret = newWebhookSecret();
    const headers = sign(secret);
    const tampered = body.replace('delivered', 'bounced');
    expect(new Webhooks(secret).verify(tampered, { headers })).toBe(false);
    expect(standardAccepts(secret, tampered, headers)).toBe(false);
  });

  it('a call signed with another secret is refused by both verifiers', () => {
    const headers = sign(newWebhookSecret());
    const other = newWebhookSecret();
    expect(new Webhooks(other).verify(body, { headers })).toBe(false);
    expect(standardAccepts(other, body, headers)).toBe(false);
  });

  it('each attempt is signed afresh: a later attempt has a new timestamp and signature, the same call id', () => {
    const secret = newWebhookSecret();
    const first = sign(secret, { now: new Date(Date.now() - 5000) });
    const second = sign(secret, { now: new Date(), retry: true });
    expect(second['X-UseSend-Timestamp']).not.toBe(first['X-UseSend-Timestamp']);
    expect(second['X-UseSend-Signature']).not.toBe(first['X-UseSend-Signature']);
    expect(second['webhook-timestamp']).not.toBe(first['webhook-timestamp']);
    expect(second['webhook-signature']).not.toBe(first['webhook-signature']);
    expect(second['webhook-id']).toBe(first['webhook-id']);
    expect(new Webhooks(secret).verify(body, { headers: second })).toBe(true);
    expect(standardAccepts(secret, body, second)).toBe(true);
  });

  it('an old attempt\'s headers are refused as stale by both verifiers (replay)', () => {
    const secret = newWebhookSecret();
    const stale = sign(secret, { now: new Date(Date.now() - 3_600_000) });
    expect(new Webhooks(secret).verify(body, { headers: stale })).toBe(false);
    expect(standardAccepts(secret, body, stale)).toBe(false);
  });
});
