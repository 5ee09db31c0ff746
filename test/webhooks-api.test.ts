import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookRoutes } from '../src/api/webhooks.js';
import { EVENT_TYPES, PAYLOAD_VERSION } from '../src/events/contract.js';
import { expectApiError } from './helpers/api-error.js';
import { fillPath, routeName } from './helpers/fixtures.js';
import { recordingLogger } from './helpers/log.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';

// ROLE=api: no sender runs, so every call stays as these tests make it (delivery is tested elsewhere).
// Receivers are on port 1 of loopback, which the test servers allow and which refuses connections.
let server: TestServer;
let key: string;
let teamId: number;
const recorded = recordingLogger();
const secretsSeen = new Set<string>();

beforeAll(async () => {
  server = await startTestServer({ ROLE: 'api', LOG_LEVEL: 'debug' }, { log: recorded.log });
  ({ teamId, apiKey: key } = await server.team('Webhooks'));
});
afterAll(async () => {
  await server.stop();
});

async function ok(method: string, path: string, body?: unknown, as = key) {
  const answer = await expectOk(server, as, method, path, body);
  if (typeof answer?.secret === 'string') secretsSeen.add(answer.secret);
  return answer;
}

const RECEIVER = 'http://127.0.0.1:1/hooks';
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

async function storedWebhook(id: string) {
  return server.deps.db.selectFrom('webhooks').selectAll().where('team_id', '=', teamId).where('id', '=', id).executeTakeFirstOrThrow();
}

async function callRows(webhookId: string) {
  return server.deps.db.selectFrom('webhook_calls').selectAll().where('webhook_id', '=', webhookId).execute();
}

describe('webhooks', () => {
  it('are created, read, listed, changed and deleted; the secret is shown on create, get and rotate, never in the list', async () => {
    const created = await ok('POST', '/v1/webhooks', { url: `${RECEIVER}/orders`, description: 'Orders' });
    expect(created).toEqual({
      id: expect.any(String),
      url: `${RECEIVER}/orders`,
      description: 'Orders',
      events: [...EVENT_TYPES],
      domainIds: [],
      status: 'ACTIVE',
      disabledReason: null,
      secret: expect.stringMatching(SECRET),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(await ok('GET', `/v1/webhooks/${created.id}`)).toEqual(created);

    const list = await ok('GET', '/v1/webhooks');
    const listed = list.data.find((w: { id: string }) => w.id === created.id);
    const { secret, ...withoutSecret } = created;
    expect(listed).toEqual(withoutSecret);
    expect(JSON.stringify(list)).not.toContain(secret);

    const changed = await ok('PATCH', `/v1/webhooks/${created.id}`, { url: `${RECEIVER}/v2`, events: ['email.bounced', 'email.complained', 'email.bounced'], description: null });
    expect(changed).toMatchObject({ url: `${RECEIVER}/v2`, events: ['email.bounced', 'email.complained'], description: null, status: 'ACTIVE' });
    expect(changed).not.toHaveProperty('secret');
    // null is every type again, including types added later (stored as none named).
    expect((await ok('PATCH', `/v1/webhooks/${created.id}`, { events: null })).events).toEqual([...EVENT_TYPES]);
    expect((await storedWebhook(created.id)).events).toEqual([]);

    const rotated = await ok('POST', `/v1/webhooks/${created.id}/rotate-secret`);
    expect(rotated.secret).toMatch(SECRET);
    expect(rotated.secret).not.toBe(secret);
    expect((await ok('GET', `/v1/webhooks/${created.id}`)).secret).toBe(rotated.secret);

    await ok('POST', `/v1/webhooks/${created.id}/test`);
    expect(await callRows(created.id)).toHaveLength(1);
    expect(await ok('DELETE', `/v1/webhooks/${created.id}`)).toEqual({ id: created.id, success: true });
    expectApiError(await server.call('GET', `/v1/webhooks/${created.id}`, { key }), 404, 'NOT_FOUND');
    expectApiError(await server.call('GET', `/v1/webhooks/${created.id}/calls`, { key }), 404, 'NOT_FOUND');
    expect(await callRows(created.id), 'its calls go with it').toEqual([]);
    expectApiError(await server.call('DELETE', `/v1/webhooks/${created.id}`, { key }), 404, 'NOT_FOUND');
  });

  it('the secret is stored sealed: the database holds no clear secret, and the key vault opens it to the one answered', async () => {
    const created = await ok('POST', '/v1/webhooks', { url: RECEIVER });
    const stored = (await storedWebhook(created.id)).secret;
    expect(stored).not.toContain(created.secret);
    expect(stored).not.toContain(created.secret.slice('whsec_'.length));
    expect(server.deps.keyVault.openText(stored, 'test')).toBe(created.secret);
    const rotated = await ok('POST', `/v1/webhooks/${created.id}/rotate-secret`);
    const restored = (await storedWebhook(created.id)).secret;
    expect(restored).not.toContain(rotated.secret.slice('whsec_'.length));
    expect(server.deps.keyVault.openText(restored, 'test')).toBe(rotated.secret);
  });

  it('the list is paged, newest first, with the count of all', async () => {
    const other = await server.team('Paging');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await ok('POST', '/v1/webhooks', { url: `${RECEIVER}/${i}` }, other.apiKey)).id);
    const first = await ok('GET', '/v1/webhooks?limit=2', undefined, other.apiKey);
    const second = await ok('GET', '/v1/webhooks?limit=2&page=2', undefined, other.apiKey);
    expect(first.count).toBe(3);
    expect([...first.data, ...second.data].map((w: { id: string }) => w.id)).toEqual([...ids].reverse());
  });

  it('events: omitted means every type, a list is kept without repeats, and an unknown type is a 400 naming it', async () => {
    const some = await ok('POST', '/v1/webhooks', { url: RECEIVER, events: ['email.delivered', 'contact.created', 'email.delivered'] });
    expect(some.events).toEqual(['email.delivered', 'contact.created']);
    const unknown = await server.call('POST', '/v1/webhooks', { key, body: { url: RECEIVER, events: ['email.delivered', 'email.exploded'] } });
    expectApiError(unknown, 400, 'VALIDATION_ERROR');
    expect(unknown.body.error.details).toEqual([{ path: 'events[1]', message: expect.stringContaining('"email.exploded"') }]);
    const empty = await server.call('POST', '/v1/webhooks', { key, body: { url: RECEIVER, events: [] } });
    expectApiError(empty, 400, 'VALIDATION_ERROR');
    expect(empty.body.error.details[0].path).toBe('events');
    const patched = await server.call('PATCH', `/v1/webhooks/${some.id}`, { key, body: { events: ['nope'] } });
    expectApiError(patched, 400, 'VALIDATION_ERROR');
    expect((await ok('GET', `/v1/webhooks/${some.id}`)).events).toEqual(['email.delivered', 'contact.created']);
  });

  it("domainIds must be the team's own domains: another team's is refused exactly like a missing one, revealing nothing of it", async () => {
    const own = await ok('POST', '/v1/domains', { name: 'own-hooks.example.com' });
    const scoped = await ok('POST', '/v1/webhooks', { url: RECEIVER, domainIds: [own.id, own.id] });
    expect(scoped.domainIds).toEqual([own.id]);

    const other = await server.team('Other domains');
    const theirs = await ok('POST', '/v1/domains', { name: 'their-secret-hooks.example.com' }, other.apiKey);
    const count = async () => (await ok('GET', '/v1/webhooks?limit=100')).count;
    const before = await count();
    const answers = [];
    for (const id of [theirs.id, 2_147_480_000]) {
      const res = await server.call('POST', '/v1/webhooks', { key, body: { url: RECEIVER, domainIds: [own.id, id] } });
      expectApiError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.error.details).toEqual([{ path: 'domainIds[1]', message: expect.any(String) }]);
      expect(JSON.stringify(res.body)).not.toContain('their-secret-hooks');
      answers.push(JSON.stringify(res.body).replaceAll(String(id), '<id>'));
      const patched = await server.call('PATCH', `/v1/webhooks/${scoped.id}`, { key, body: { domainIds: [id] } });
      expectApiError(patched, 400, 'VALIDATION_ERROR');
      expect(patched.body.error.details[0].path).toBe('domainIds[0]');
    }
    expect(answers[0]).toBe(answers[1]);
    expect(await count()).toBe(before);
    expect((await ok('GET', `/v1/webhooks/${scoped.id}`)).domainIds).toEqual([own.id]);
  });

  it('a team may have 50 webhooks: the 51st is a 409, even when all are asked for at once', async () => {
    const busy = await server.team('Busy');
    const answers = await Promise.all(
      Array.from({ length: 51 }, (_, i) => server.call('POST', '/v1/webhooks', { key: busy.apiKey, body: { url: `${RECEIVER}/${i}` } })),
    );
    expect(answers.filter((res) => res.status === 200)).toHaveLength(50);
    const refused = answers.filter((res) => res.status !== 200);
    expect(refused).toHaveLength(1);
    expectApiError(refused[0]!, 409, 'CONFLICT');
    expect(refused[0]!.body.error.message).toContain('50');
    expect((await ok('GET', '/v1/webhooks', undefined, busy.apiKey)).count).toBe(50);
  });

  it('PATCH pauses and re-activates; AUTO_DISABLED cannot be set, and re-activating an auto-disabled webhook starts its failure count again', async () => {
    const created = await ok('POST', '/v1/webhooks', { url: RECEIVER });
    expect((await ok('PATCH', `/v1/webhooks/${created.id}`, { status: 'PAUSED' })).status).toBe('PAUSED');
    expect((await ok('PATCH', `/v1/webhooks/${created.id}`, { status: 'ACTIVE' })).status).toBe('ACTIVE');

    const refused = await server.call('PATCH', `/v1/webhooks/${created.id}`, { key, body: { status: 'AUTO_DISABLED' } });
    expectApiError(refused, 400, 'VALIDATION_ERROR');
    expect(refused.body.error.details[0].path).toBe('status');

    const reason = '30 calls in a row failed every attempt';
    await server.deps.db
      .updateTable('webhooks')
      .set({ status: 'AUTO_DISABLED', failed_in_a_row: 30, disabled_reason: reason })
      .where('team_id', '=', teamId)
      .where('id', '=', created.id)
      .execute();
    expect(await ok('GET', `/v1/webhooks/${created.id}`)).toMatchObject({ status: 'AUTO_DISABLED', disabledReason: reason });
    // A change that is not of the status leaves it disabled.
    expect(await ok('PATCH', `/v1/webhooks/${created.id}`, { description: 'still off' })).toMatchObject({ status: 'AUTO_DISABLED', disabledReason: reason });
    expect(await ok('PATCH', `/v1/webhooks/${created.id}`, { status: 'ACTIVE' })).toMatchObject({ status: 'ACTIVE', disabledReason: null });
    expect(await storedWebhook(created.id)).toMatchObject({ status: 'ACTIVE', failed_in_a_row: 0, disabled_reason: null });
  });

  it('a change of URL is checked like a new one, and a refused one leaves the webhook as it was', async () => {
    const created = await ok('POST', '/v1/webhooks', { url: RECEIVER });
    const res = await server.call('PATCH', `/v1/webhooks/${created.id}`, { key, body: { url: 'http://192.168.1.1/x', description: 'moved' } });
    expectApiError(res, 400, 'VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ path: 'url', message: "192.168.1.1 is a private address; the server's operator can allow it by adding 192.168.1.1 to WEBHOOK_ALLOWED_HOSTS" }]);
    expect(await ok('GET', `/v1/webhooks/${created.id}`)).toEqual(created);
  });

  it('the test endpoint makes a PENDING webhook.test call, due now, that the call log shows; a webhook not ACTIVE gets 409', async () => {
    const created = await ok('POST', '/v1/webhooks', { url: RECEIVER, events: ['email.delivered'] });
    let signalled = 0;
    const off = server.deps.signals.on('webhookCallsDue', () => signalled++);
    const before = Date.now();
    const call = await ok('POST', `/v1/webhooks/${created.id}/test`);
    off();
    expect(signalled).toBe(1);
    expect(call).toEqual({
      id: expect.any(String),
      webhookId: created.id,
      type: 'webhook.test',
      status: 'PENDING',
      attempt: 0,
      responseStatus: null,
      responseTimeMs: null,
      lastError: null,
      nextAttemptAt: call.createdAt,
      createdAt: expect.any(String),
      updatedAt: call.createdAt,
      payload: {
        id: call.id,
        type: 'webhook.test',
        version: PAYLOAD_VERSION,
        createdAt: call.createdAt,
        teamId,
        data: { webhookId: created.id, message: 'This is a test call from Mailroom' },
        attempt: 1,
      },
    });
    expect(Date.parse(call.createdAt)).toBeGreaterThanOrEqual(before - 5);
    const second = await ok('POST', `/v1/webhooks/${created.id}/test`);

    const log = await ok('GET', `/v1/webhooks/${created.id}/calls`);
    expect(log).toEqual({ data: [second, call], count: 2 });
    expect(await ok('GET', `/v1/webhooks/${created.id}/calls/${call.id}`)).toEqual(call);
    expect(await ok('GET', `/v1/webhooks/${created.id}/calls?limit=1&page=2`)).toEqual({ data: [call], count: 2 });
    expect(await ok('GET', `/v1/webhooks/${created.id}/calls?status=DELIVERED`)).toEqual({ data: [], count: 0 });
    expect((await ok('GET', `/v1/webhooks/${created.id}/calls?status=PENDING`)).count).toBe(2);

    await ok('PATCH', `/v1/webhooks/${created.id}`, { status: 'PAUSED' });
    const paused = await server.call('POST', `/v1/webhooks/${created.id}/test`, { key });
    expectApiError(paused, 409, 'CONFLICT');
    expect(paused.body.error.message).toContain('PAUSED');
    expect((await ok('GET', `/v1/webhooks/${created.id}/calls`)).count).toBe(2);
  });

  it('retry makes a finished call PENDING and due now, its attempts and last error kept and its claim cleared; a PENDING call is answered as it is', async () => {
    const created = await ok('POST', '/v1/webhooks', { url: RECEIVER });
    const call = await ok('POST', `/v1/webhooks/${created.id}/test`);
    const pending = await ok('POST', `/v1/webhooks/${created.id}/calls/${call.id}/retry`);
    expect(pending).toEqual(call);

    const failedAt = new Date(Date.now() - 60_000);
    await server.deps.db
      .updateTable('webhook_calls')
      .set({
        status: 'FAILED', attempt: 8, response_status: 503, response_time_ms: 12, last_error: 'the receiver answered 503',
        claimed_by: 'gone-sender', lease_until: failedAt, next_attempt_at: failedAt, updated_at: failedAt,
      })
      .where('team_id', '=', teamId)
      .where('id', '=', call.id)
      .execute();
    expect((await ok('GET', `/v1/webhooks/${created.id}/calls/${call.id}`))).toMatchObject({ status: 'FAILED', nextAttemptAt: null });

    let signalled = 0;
    const off = server.deps.signals.on('webhookCallsDue', () => signalled++);
    const before = Date.now();
    const retried = await ok('POST', `/v1/webhooks/${created.id}/calls/${call.id}/retry`);
    off();
    expect(signalled).toBe(1);
    expect(retried).toMatchObject({ id: call.id, status: 'PENDING', attempt: 8, responseStatus: 503, lastError: 'the receiver answered 503', payload: { attempt: 8 } });
    expect(Date.parse(retried.nextAttemptAt)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(retried.nextAttemptAt)).toBeLessThanOrEqual(Date.now());
    const [row] = await callRows(created.id);
    expect(row).toMatchObject({ status: 'PENDING', claimed_by: null, lease_until: null });
    expect((await ok('GET', `/v1/webhooks/${created.id}/calls?status=PENDING`)).data.map((c: { id: string }) => c.id)).toEqual([call.id]);
    expectApiError(await server.call('POST', `/v1/webhooks/${created.id}/calls/absent-call/retry`, { key }), 404, 'NOT_FOUND');
  });
});

describe('the SSRF guard', () => {
  let guarded: TestServer;
  let guardedKey: string;
  beforeAll(async () => {
    guarded = await startTestServer({ ROLE: 'api', WEBHOOK_ALLOWED_HOSTS: '' });
    guardedKey = (await guarded.team('Guarded')).apiKey;
  });
  afterAll(() => guarded.stop());

  it('a URL to loopback, a private range or a scheme other than http(s) is a 400 naming the reason, and nothing is stored', async () => {
    const refusals: [string, RegExp][] = [
      ['http://127.0.0.1:1/x', /127\.0\.0\.1 is a loopback address/],
      ['http://localhost/x', /localhost resolves to .*loopback/],
      ['http://[::1]:1/x', /::1 is a loopback address/],
      ['http://[::ffff:127.0.0.1]/x', /IPv4-mapped form of 127\.0\.0\.1/],
      ['http://10.1.2.3/x', /private address/],
      ['http://169.254.169.254/latest/meta-data', /link-local address/],
      ['http://100.64.0.1/x', /CGNAT/],
      ['http://0.0.0.0/x', /unspecified address/],
      ['ftp://files.example.com/x', /must use http or https/],
      ['https://user:pass@hooks.example.com/x', /user name or password/],
      ['not a url', /not valid/],
      ['http://93.184.216.34:25/x', /port 25 may not be called by webhooks \(WEBHOOK_ALLOWED_PORTS is 80,443,1024-65535\)/],
      ['https://93.184.216.34:22/x', /port 22 may not be called/],
    ];
    for (const [url, reason] of refusals) {
      const res = await guarded.call('POST', '/v1/webhooks', { key: guardedKey, body: { url } });
      expectApiError(res, 400, 'VALIDATION_ERROR', url);
      expect(res.body.error.details, url).toEqual([{ path: 'url', message: expect.stringMatching(reason) }]);
    }
    expect((await guarded.call('GET', '/v1/webhooks', { key: guardedKey })).body.count).toBe(0);
  });
});

describe('webhooks belong to one team, as a whole', () => {
  it("another team's webhook and its calls are 404 on every endpoint, and stay as they were", async () => {
    const owner = await server.team('Owner');
    const theirs = await ok('POST', '/v1/webhooks', { url: `${RECEIVER}/theirs`, description: 'Their webhook' }, owner.apiKey);
    const call = await ok('POST', `/v1/webhooks/${theirs.id}/test`, undefined, owner.apiKey);
    const mine = await ok('POST', '/v1/webhooks', { url: RECEIVER });
    const myCall = await ok('POST', `/v1/webhooks/${mine.id}/test`);
    const view = async () => ({
      webhook: await ok('GET', `/v1/webhooks/${theirs.id}`, undefined, owner.apiKey),
      calls: await ok('GET', `/v1/webhooks/${theirs.id}/calls`, undefined, owner.apiKey),
    });
    const before = await view();

    const bodies: Record<string, unknown> = { 'PATCH /webhooks/{webhookId}': { description: 'Mine now', status: 'PAUSED' } };
    for (const route of webhookRoutes.filter((r) => r.path.includes('{webhookId}'))) {
      // Their webhook (with their call), and their call under my webhook.
      for (const values of [{ webhookId: theirs.id, callId: call.id }, { webhookId: mine.id, callId: call.id }, { webhookId: theirs.id, callId: myCall.id }]) {
        if (!route.path.includes('{callId}') && values.webhookId === mine.id) continue;
        const path = fillPath(route, values);
        const res = await server.call(route.method.toUpperCase(), path, { key, body: bodies[routeName(route)] });
        expectApiError(res, 404, 'NOT_FOUND', `${routeName(route)} ${path}`);
        expect(JSON.stringify(res.body)).not.toContain('Their webhook');
      }
    }
    expect((await ok('GET', '/v1/webhooks?limit=100')).data.map((w: { id: string }) => w.id)).not.toContain(theirs.id);
    expect(await view()).toEqual(before);
  });

  it('a key scoped to a domain gets 403 on every webhook endpoint, and changes nothing', async () => {
    const domain = await ok('POST', '/v1/domains', { name: 'scoped-hooks.example.com' });
    const scoped = await server.key(teamId, 'full', domain.id);
    const webhook = await ok('POST', '/v1/webhooks', { url: RECEIVER, domainIds: [domain.id] });
    const call = await ok('POST', `/v1/webhooks/${webhook.id}/test`);
    const bodies: Record<string, unknown> = {
      'POST /webhooks': { url: RECEIVER, domainIds: [domain.id] },
      'PATCH /webhooks/{webhookId}': { status: 'PAUSED' },
    };
    for (const route of webhookRoutes) {
      const path = fillPath(route, { webhookId: webhook.id, callId: call.id });
      const res = await server.call(route.method.toUpperCase(), path, { key: scoped, body: bodies[routeName(route)] });
      expectApiError(res, 403, 'FORBIDDEN', routeName(route));
    }
    expect(await ok('GET', `/v1/webhooks/${webhook.id}`)).toEqual(webhook);
    expect(await ok('GET', `/v1/webhooks/${webhook.id}/calls`)).toEqual({ data: [call], count: 1 });
  });

  it('no log line carries a signing secret', () => {
    expect(secretsSeen.size).toBeGreaterThan(0);
    const logged = JSON.stringify(recorded.entries);
    for (const secret of secretsSeen) {
      expect(logged).not.toContain(secret);
      expect(logged).not.toContain(secret.slice('whsec_'.length));
    }
  });
});
