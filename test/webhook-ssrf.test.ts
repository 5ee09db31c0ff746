import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError } from './helpers/api-error.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';

// The SSRF guard end to end, with loopback alone: 127.0.0.0/8 is all loopback on Linux, so one
// loopback address can stand for a destination the operator allowed (127.0.0.2) and another for
// one the guard must refuse (127.0.0.3), with a real receiver listening on each. Nothing here
// names or connects to any other address.
const ALLOWED = '127.0.0.2';
const FORBIDDEN = '127.0.0.3';

let dns: TestDnsServer;
/** WEBHOOK_ALLOWED_HOSTS empty: every loopback destination is refused. */
let strict: TestServer;
let strictKey: string;
/** WEBHOOK_ALLOWED_HOSTS=127.0.0.2 alone. */
let server: TestServer;
let key: string;
/** Receivers on the allowed and the forbidden address, on the same port: a URL's port points at either. */
let allowed: WebhookReceiver;
let forbidden: WebhookReceiver;
let port: number;

const WEBHOOK_ENV = { WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_POLL_MS: '50', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_MAX_ATTEMPTS: '2' };

beforeAll(async () => {
  dns = await startDnsServer();
  strict = await startTestServer({ ...WEBHOOK_ENV, DNS_SERVERS: dns.address, WEBHOOK_ALLOWED_HOSTS: '' });
  strictKey = (await strict.team()).apiKey;
  server = await startTestServer({ ...WEBHOOK_ENV, DNS_SERVERS: dns.address, WEBHOOK_ALLOWED_HOSTS: ALLOWED });
  key = (await server.team()).apiKey;
  for (let attempt = 1; ; attempt++) {
    allowed = await startWebhookReceiver({ host: ALLOWED });
    try {
      forbidden = await startWebhookReceiver({ host: FORBIDDEN, port: allowed.port });
      break;
    } catch (error) {
      await allowed.close();
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt === 10) throw error;
    }
  }
  port = allowed.port;
}, 30_000);
afterAll(async () => {
  await allowed?.close();
  await forbidden?.close();
  await strict?.stop();
  await server?.stop();
  await dns?.close();
});

/** The reason given for a loopback or private address: the refusal, then how the operator allows `host`. */
const allowable = (reason: string, host: string) => `${reason}; the server's operator can allow it by adding ${host} to WEBHOOK_ALLOWED_HOSTS`;

/** A 400 naming the url field and `reason`. */
function expectRefused(res: CallResult, reason: string) {
  expectApiError(res, 400, 'VALIDATION_ERROR');
  expect(res.body.error.details).toEqual([expect.objectContaining({ path: 'url', message: reason })]);
}

const nothingReached = (receiver: WebhookReceiver) => ({ requests: receiver.received.length, connections: receiver.connections() });

describe('creating or changing a webhook', () => {
  it('with no allowed hosts, a URL to 127.0.0.1, [::1] or an IPv4-mapped loopback address is a 400 naming loopback and the WEBHOOK_ALLOWED_HOSTS entry that would allow it', async () => {
    const create = (url: string) => strict.call('POST', '/v1/webhooks', { key: strictKey, body: { url } });
    expectRefused(await create(`http://127.0.0.1:${port}/hook`), allowable('127.0.0.1 is a loopback address', '127.0.0.1'));
    expectRefused(await create(`http://[::1]:${port}/hook`), allowable('::1 is a loopback address', '::1'));
    expectRefused(await create(`https://[::ffff:127.0.0.1]:${port}/hook`), allowable('::ffff:7f00:1 is an IPv4-mapped form of 127.0.0.1, a loopback address', '::ffff:7f00:1'));
    expectRefused(await create(`http://${ALLOWED}:${port}/hook`), allowable(`${ALLOWED} is a loopback address`, ALLOWED));
    expect((await strict.call('GET', '/v1/webhooks', { key: strictKey })).body.count).toBe(0);
  });

  it('a host name that resolves to loopback (A or AAAA) is a 400 naming the name and the address', async () => {
    dns.set('loop4.hook.test', [{ type: 'A', address: '127.0.0.1' }]);
    dns.set('loop6.hook.test', [{ type: 'AAAA', address: '::1' }]);
    const create = (url: string) => strict.call('POST', '/v1/webhooks', { key: strictKey, body: { url } });
    expectRefused(await create(`http://loop4.hook.test:${port}/hook`), allowable('loop4.hook.test resolves to 127.0.0.1, a loopback address', 'loop4.hook.test'));
    expectRefused(await create(`http://loop6.hook.test:${port}/hook`), allowable('loop6.hook.test resolves to ::1, a loopback address', 'loop6.hook.test'));
    expectRefused(await create(`http://missing.hook.test:${port}/hook`), 'the host missing.hook.test could not be resolved (ENOTFOUND)');
    expect((await strict.call('GET', '/v1/webhooks', { key: strictKey })).body.count).toBe(0);
  });

  it('with 127.0.0.2 allowed, a name resolving to it and to 127.0.0.3 is refused (every address must pass), and PATCH to a refused URL is a 400 that changes nothing', async () => {
    dns.set('mixed.hook.test', [{ type: 'A', address: ALLOWED }, { type: 'A', address: FORBIDDEN }]);
    expectRefused(
      await server.call('POST', '/v1/webhooks', { key, body: { url: `http://mixed.hook.test:${port}/hook` } }),
      allowable(`mixed.hook.test resolves to ${FORBIDDEN}, a loopback address`, 'mixed.hook.test'),
    );
    const created = await server.call('POST', '/v1/webhooks', { key, body: { url: allowed.url, events: ['webhook.test'] } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    for (const [url, reason] of [
      [forbidden.url, allowable(`${FORBIDDEN} is a loopback address`, FORBIDDEN)],
      [`http://127.0.0.1:${port}/hook`, allowable('127.0.0.1 is a loopback address', '127.0.0.1')],
      [`http://[::1]:${port}/hook`, allowable('::1 is a loopback address', '::1')],
      [`http://mixed.hook.test:${port}/hook`, allowable(`mixed.hook.test resolves to ${FORBIDDEN}, a loopback address`, 'mixed.hook.test')],
    ]) {
      expectRefused(await server.call('PATCH', `/v1/webhooks/${created.body.id}`, { key, body: { url } }), reason!);
    }
    expect((await server.call('GET', `/v1/webhooks/${created.body.id}`, { key })).body.url).toBe(allowed.url);
    await server.call('DELETE', `/v1/webhooks/${created.body.id}`, { key });
  });
});

describe('at delivery', () => {
  it('a host whose DNS answer changed to a loopback address that is not allowed is never connected to, and the call log says why', async () => {
    dns.set('rebind.hook.test', [{ type: 'A', address: ALLOWED }]);
    const created = await server.call('POST', '/v1/webhooks', { key, body: { url: `http://rebind.hook.test:${port}/hook`, events: ['webhook.test'] } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.id;
    const before = { allowed: allowed.received.length, forbidden: nothingReached(forbidden) };

    // The name now leads somewhere the guard refuses.
    dns.set('rebind.hook.test', [{ type: 'A', address: FORBIDDEN }]);
    const callId = (await server.call('POST', `/v1/webhooks/${id}/test`, { key })).body.id;
    const failed = await waitFor(
      'the call FAILED',
      async () => (await server.call('GET', `/v1/webhooks/${id}/calls/${callId}`, { key })).body,
      (call) => call.status !== 'PENDING',
    );
    expect(failed).toMatchObject({
      status: 'FAILED', attempt: 2, responseStatus: null, lastError: `rebind.hook.test resolves to ${FORBIDDEN}, a loopback address`,
    });
    expect(nothingReached(forbidden), 'the forbidden receiver was connected to').toEqual(before.forbidden);
    expect(allowed.received.length).toBe(before.allowed);

    // Back on the allowed address, the same call retried goes through: the resolution alone stopped it.
    dns.set('rebind.hook.test', [{ type: 'A', address: ALLOWED }]);
    expect((await server.call('POST', `/v1/webhooks/${id}/calls/${callId}/retry`, { key })).status).toBe(200);
    await allowed.waitFor('the retried call', (received) => received.some((r) => r.headers['webhook-id'] === callId));
    expect(nothingReached(forbidden)).toEqual(before.forbidden);
  });

  it('a name resolving to an allowed and a forbidden address at delivery is not called at all', async () => {
    dns.set('split.hook.test', [{ type: 'A', address: ALLOWED }]);
    const created = await server.call('POST', '/v1/webhooks', { key, body: { url: `http://split.hook.test:${port}/hook`, events: ['webhook.test'] } });
    expect(created.status).toBe(200);
    const before = { allowed: allowed.received.length, forbidden: nothingReached(forbidden) };
    dns.set('split.hook.test', [{ type: 'A', address: ALLOWED }, { type: 'A', address: FORBIDDEN }]);
    const callId = (await server.call('POST', `/v1/webhooks/${created.body.id}/test`, { key })).body.id;
    const failed = await waitFor(
      'the call FAILED',
      async () => (await server.call('GET', `/v1/webhooks/${created.body.id}/calls/${callId}`, { key })).body,
      (call) => call.status !== 'PENDING',
    );
    expect(failed).toMatchObject({ status: 'FAILED', lastError: `split.hook.test resolves to ${FORBIDDEN}, a loopback address` });
    expect(allowed.received.length).toBe(before.allowed);
    expect(nothingReached(forbidden)).toEqual(before.forbidden);
  });

  it('a redirect from an allowed receiver to a forbidden loopback address is not followed', async () => {
    const redirecting = await startWebhookReceiver({ host: ALLOWED, answer: () => ({ status: 307, headers: { Location: forbidden.url } }) });
    try {
      const created = await server.call('POST', '/v1/webhooks', { key, body: { url: redirecting.url, events: ['webhook.test'] } });
      expect(created.status).toBe(200);
      const before = nothingReached(forbidden);
      const callId = (await server.call('POST', `/v1/webhooks/${created.body.id}/test`, { key })).body.id;
      const failed = await waitFor(
        'the call FAILED',
        async () => (await server.call('GET', `/v1/webhooks/${created.body.id}/calls/${callId}`, { key })).body,
        (call) => call.status !== 'PENDING',
      );
      expect(failed).toMatchObject({ status: 'FAILED', attempt: 2, responseStatus: 307, lastError: `redirect to ${forbidden.url} not followed` });
      expect(redirecting.received).toHaveLength(2);
      expect(nothingReached(forbidden)).toEqual(before);
    } finally {
      await redirecting.close();
    }
  });
});
