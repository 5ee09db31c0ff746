import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError } from './helpers/api-error.js';
import { verifiedDomain } from './helpers/domains.js';
import { dispatcherDone } from './helpers/emails.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

/**
 * Warm-up: a daily cap on a domain's mail, counted per UTC day, with the clock the dispatcher goes
 * by moved across midnight. Mail past the cap waits for the next day: none dropped, none twice.
 */

const DAY_ONE = Date.UTC(2030, 0, 1, 12, 0, 0);
const at = (iso: string) => new Date(iso);

describe('warm-up', () => {
  let server: TestServer;
  let key: string;
  let domainId: number;
  let now = new Date(DAY_ONE);

  beforeAll(async () => {
    server = await startTestServer({ DISPATCH_POLL_MS: '50' });
    server.deps.clock = () => now;
    ({ apiKey: key } = await server.team('Warm'));
    domainId = (await verifiedDomain(server, key, 'warm.example')).id;
  });
  afterAll(() => server.stop());

  const send = async (n: number) =>
    Promise.all(Array.from({ length: n }, async (_, i) => (await expectOk(server, key, 'POST', '/v1/emails', { from: 'hi@warm.example', to: `r${i}@example.org`, subject: `n${i}`, text: 'x' })).emailId as string));
  const statuses = async (ids: string[]) => Promise.all(ids.map(async (id) => (await expectOk(server, key, 'GET', `/v1/emails/${id}`)).latestStatus as string));
  const delivered = async (ids: string[]) => (await statuses(ids)).filter((s) => s === 'DELIVERED').length;
  const warmup = async () => (await expectOk(server, key, 'GET', `/v1/domains/${domainId}`)).warmup;
  const outbox = async () => (await readdir(path.join(server.deps.config.dataDir, 'outbox'))).length;

  it('refuses a negative limit, and answers the ramp it starts', async () => {
    const refused = await server.call('PATCH', `/v1/domains/${domainId}`, { key, body: { warmup: { enabled: true, dailyLimits: [2, -1] } } });
    expectApiError(refused, 400, 'VALIDATION_ERROR');
    expect((await expectOk(server, key, 'GET', `/v1/domains/${domainId}`)).warmup.enabled).toBe(false);
    const ramp = await expectOk(server, key, 'PATCH', `/v1/domains/${domainId}`, { warmup: { enabled: true } });
    expect(ramp.warmup).toEqual({ enabled: true, day: 1, limitToday: 50, sentToday: 0, dailyLimits: null });
    expect((await expectOk(server, key, 'PATCH', `/v1/domains/${domainId}`, { warmup: { enabled: false } })).warmup.enabled).toBe(false);
  });

  it("caps each UTC day's mail; what is past the cap goes the next day, every email once", async () => {
    expect(await expectOk(server, key, 'PATCH', `/v1/domains/${domainId}`, { warmup: { enabled: true, dailyLimits: [2, 3] } })).toMatchObject({
      warmup: { enabled: true, day: 1, limitToday: 2, sentToday: 0, dailyLimits: [2, 3] },
    });
    const ids = await send(5);
    await waitFor('two delivered', () => delivered(ids), (n) => n === 2);
    await dispatcherDone(server, ids);
    expect(await delivered(ids)).toBe(2);
    expect(await warmup()).toMatchObject({ day: 1, limitToday: 2, sentToday: 2 });
    // Waiting for the first moment of the next UTC day.
    const waiting = await server.deps.db.selectFrom('emails').select(['send_at', 'attempts']).where('id', 'in', ids).where('send_at', 'is not', null).execute();
    expect(waiting.map((row) => [row.send_at!.toISOString(), row.attempts])).toEqual(Array(3).fill(['2030-01-02T00:00:00.000Z', 0]));

    // Campaign mail past the cap waits too, behind the transactional mail of the same day.
    const book = await expectOk(server, key, 'POST', '/v1/contactBooks', { name: 'Warm book' });
    await expectOk(server, key, 'PUT', `/v1/contactBooks/${book.id}/contacts/reader`, { email: 'reader@example.org' });
    const campaign = await expectOk(server, key, 'POST', '/v1/campaigns', {
      name: 'Warm news', from: 'hi@warm.example', subject: 'News', contactBookId: book.id, html: '<p>News</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>', sendNow: true,
    });
    const campaignMail = await waitFor(
      'the campaign email waiting for the next day',
      () => server.deps.db.selectFrom('emails').select(['id', 'send_at', 'claimed_by']).where('campaign_id', '=', campaign.id).execute(),
      (rows) => rows.length === 1 && rows[0]!.claimed_by === null && rows[0]!.send_at?.toISOString() === '2030-01-02T00:01:00.000Z',
    );

    now = at('2030-01-02T00:00:05Z');
    await waitFor('all five delivered', () => delivered(ids), (n) => n === 5);
    expect(await warmup()).toMatchObject({ day: 2, limitToday: 3, sentToday: 3 });
    now = at('2030-01-02T00:02:00Z');
    await dispatcherDone(server, [campaignMail[0]!.id]);
    expect(await statuses([campaignMail[0]!.id])).toEqual(['QUEUED']);

    const late = await send(1);
    await dispatcherDone(server, late);
    expect(await statuses(late)).toEqual(['QUEUED']);

    // Past the limits given, warm-up is over: nothing is capped.
    now = at('2030-01-03T08:00:00Z');
    await waitFor('the late one and the campaign delivered', () => delivered([...late, campaignMail[0]!.id]), (n) => n === 2);
    expect(await warmup()).toMatchObject({ day: 3, limitToday: null });
    expect(await outbox()).toBe(7);
  });
});
