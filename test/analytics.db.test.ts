import { UseSend } from 'usesend-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { expectApiError } from './helpers/api-error.js';
import { verifiedDomain } from './helpers/domains.js';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { yahooArf } from './helpers/reports.js';
import { waitFor } from './helpers/wait.js';

let env: Awaited<ReturnType<typeof startFeedbackServer>>;
let team: FeedbackTeam;
let domainA: number;
let domainB: number;

const DAY_MS = 86_400_000;
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);

/**
 * Counts are kept per UTC day and windows end today, so mail sent before midnight and read after it
 * would be on another day than the test expects. The server runs in this process: its clock (Date
 * only, still moving) is put at midday of today, half a day from either midnight.
 */
function runAtMidday() {
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true, now: Math.floor(Date.now() / DAY_MS) * DAY_MS + DAY_MS / 2 });
}

/**
 * A known mix: domain A delivers 8 (one of them then complained about) and hard-bounces 2; domain B
 * delivers 3 and hard-bounces 1. Ten days ago domain A delivered 100 and hard-bounced 10.
 */
beforeAll(async () => {
  runAtMidday();
  env = await startFeedbackServer();
  team = await feedbackTeam(env.server, env.sink, 'metrics-a.test');
  domainA = team.domain.id;
  domainB = (await verifiedDomain(env.server, team.key, 'metrics-b.test')).id;
  env.sink.rule = { rcpt: (address) => (address.startsWith('hard') ? { code: 550, message: '5.1.1 no such user' } : null) };
  const send = async (domain: string, to: string) => {
    const { emailId } = await team.ok('POST', '/v1/emails', { from: `hello@${domain}`, to, subject: 'Hello', html: '<p>Hello</p>' });
    return waitFor(`mail to ${to}`, () => team.email(emailId), (e) => ['DELIVERED', 'BOUNCED'].includes(e.latestStatus));
  };
  const deliveredA = [];
  for (let i = 0; i < 8; i++) deliveredA.push(await send('metrics-a.test', `reader${i}@receiver.example`));
  for (let i = 0; i < 2; i++) await send('metrics-a.test', `hard-a${i}@receiver.example`);
  for (let i = 0; i < 3; i++) await send('metrics-b.test', `reader${i}@receiver.example`);
  await send('metrics-b.test', 'hard-b@receiver.example');
  env.sink.rule = {};
  const complainedAbout = team.sentMessage(deliveredA[0].id);
  await env.report(`fbl@mail.metrics-a.test`, yahooArf(complainedAbout, { recipient: 'reader0@receiver.example' }));
  await env.server.deps.db
    .insertInto('daily_email_counts')
    .values({ team_id: team.teamId, domain_id: domainA, day: day(10), sent: 100, delivered: 100, bounced: 10, hard_bounced: 10 })
    .execute();
}, 60_000);
afterAll(async () => {
  await env.stop();
  vi.useRealTimers();
});

const metrics = (query = '', key = team.key) => env.server.call('GET', `/v1/analytics/reputation-metrics${query}`, { key });
const series = (query = '', key = team.key) => env.server.call('GET', `/v1/analytics/email-time-series${query}`, { key });

describe('reputation metrics', () => {
  it('are counted once per email and kind and match hand-computed rates, for the team or one domain, all time or the last days', async () => {
    const expected = {
      '': { delivered: 111, hardBounced: 13, complained: 1, bounceRate: 1300 / 111, complaintRate: 100 / 111 },
      '?days=7': { delivered: 11, hardBounced: 3, complained: 1, bounceRate: 300 / 11, complaintRate: 100 / 11 },
      '?days=30': { delivered: 111, hardBounced: 13, complained: 1, bounceRate: 1300 / 111, complaintRate: 100 / 111 },
      [`?domainId=${domainA}`]: { delivered: 108, hardBounced: 12, complained: 1, bounceRate: 1200 / 108, complaintRate: 100 / 108 },
      [`?domainId=${domainA}&days=7`]: { delivered: 8, hardBounced: 2, complained: 1, bounceRate: 25, complaintRate: 12.5 },
      [`?domainId=${domainB}&days=1`]: { delivered: 3, hardBounced: 1, complained: 0, bounceRate: 100 / 3, complaintRate: 0 },
    };
    for (const [query, answer] of Object.entries(expected)) {
      const res = await metrics(query);
      expect(res.status, query).toBe(200);
      expect(res.body, query).toEqual(answer);
    }
  });

  it('usesend-js analytics.* get the metrics and the time series in the shapes they expect', async () => {
    const client = new UseSend(team.key, env.server.url);
    expect(await client.analytics.reputationMetrics({ domainId: String(domainB) })).toEqual({
      data: { delivered: 3, hardBounced: 1, complained: 0, bounceRate: 100 / 3, complaintRate: 0 }, error: null,
    });
    const { data, error } = await client.analytics.emailTimeSeries({ days: '30', domainId: String(domainA) });
    expect(error).toBeNull();
    expect(data!.result).toHaveLength(30);
    expect(data!.result.find((d) => d.date === day(10))).toEqual({ date: day(10), sent: 100, delivered: 100, opened: 0, clicked: 0, bounced: 10, complained: 0 });
    expect(data!.result.at(-1)).toEqual({ date: day(0), sent: 8, delivered: 8, opened: 0, clicked: 0, bounced: 2, complained: 1 });
    expect(data!.totalCounts).toEqual({ sent: 108, delivered: 108, opened: 0, clicked: 0, bounced: 12, complained: 1 });
  });

  it('the time series has every day of the window, oldest first, zero where nothing happened', async () => {
    const { status, body } = await series();
    expect(status).toBe(200);
    expect(body.result.map((d: { date: string }) => d.date)).toEqual([6, 5, 4, 3, 2, 1, 0].map(day));
    expect(body.result.slice(0, 6).every((d: Record<string, unknown>) => Object.values(d).slice(1).every((n) => n === 0))).toBe(true);
    expect(body.result[6]).toEqual({ date: day(0), sent: 11, delivered: 11, opened: 0, clicked: 0, bounced: 3, complained: 1 });
    expect(body.totalCounts).toEqual({ sent: 11, delivered: 11, opened: 0, clicked: 0, bounced: 3, complained: 1 });
  });

  it('bad parameters are a 400 naming them; another team sees only its own (zero) counts and none of this team\'s domains', async () => {
    const named = (res: Awaited<ReturnType<typeof metrics>>, field: string) => {
      expectApiError(res, 400, 'VALIDATION_ERROR', field);
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toEqual([field]);
    };
    for (const query of ['?days=0', '?days=366', '?days=x', '?domainId=abc', '?domainId=-1']) named(await metrics(query), query.slice(1, query.indexOf('=')));
    named(await series('?days=14'), 'days');
    const other = await env.server.team('Other');
    expect((await metrics('', other.apiKey)).body).toEqual({ delivered: 0, hardBounced: 0, complained: 0, bounceRate: 0, complaintRate: 0 });
    expect((await series('?days=30', other.apiKey)).body.totalCounts).toEqual({ sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0 });
    for (const res of [await metrics(`?domainId=${domainA}`, other.apiKey), await series(`?domainId=${domainA}`, other.apiKey), await metrics('?domainId=2147480000')]) {
      expectApiError(res, 404, 'NOT_FOUND');
      expect(res.body.error.message).toBe('Domain not found');
    }
  });

  it('a key scoped to a domain sees that domain only; a sending-only key is refused', async () => {
    const scoped = await env.server.key(team.teamId, 'full', domainB);
    expect((await metrics('', scoped)).body).toMatchObject({ delivered: 3, hardBounced: 1 });
    expect((await metrics(`?domainId=${domainB}`, scoped)).body).toMatchObject({ delivered: 3 });
    expectApiError(await metrics(`?domainId=${domainA}`, scoped), 403, 'FORBIDDEN');
    expectApiError(await series(`?domainId=${domainA}`, scoped), 403, 'FORBIDDEN');
    const sending = await env.server.key(team.teamId, 'sending');
    expectApiError(await metrics('', sending), 403, 'FORBIDDEN');
  });
});
