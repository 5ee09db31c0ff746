import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoutes } from '../src/api/index.js';
import { setTeamRateLimit } from '../src/services/teams.js';
import { expectApiError, expectRouteError, routeHasLegacyErrors } from './helpers/api-error.js';
import { callRoute, routeName, snapshot, teamFixture } from './helpers/fixtures.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';

const DEFAULT_LIMIT = 1000;

let server: TestServer;

/** The limiter's clock, which only the tests move: a burst is within one second because the clock says so. */
let now = Date.now();
/** Moves the clock to the start of the next second: a fresh window for every team. */
const nextSecond = () => {
  now = (Math.floor(now / 1000) + 1) * 1000;
};

beforeAll(async () => {
  server = await startTestServer({ RATE_LIMIT_PER_SECOND: String(DEFAULT_LIMIT) }, { rateLimitClock: () => now });
});
afterAll(() => server.stop());

async function limitedTeam(perSecond: number) {
  const team = await teamFixture(server);
  await setTeamRateLimit(server.deps, { teamId: team.teamId, perSecond });
  return team;
}

function rateHeaders(res: CallResult) {
  return {
    limit: Number(res.headers.get('x-ratelimit-limit')),
    remaining: Number(res.headers.get('x-ratelimit-remaining')),
    reset: Number(res.headers.get('x-ratelimit-reset')),
  };
}

describe('rate limit', () => {
  it('the request over the team limit in one second gets 429 RATE_LIMITED with Retry-After, and does nothing', async () => {
    const limit = 3;
    const team = await limitedTeam(limit);
    nextSecond();
    const responses = await Promise.all(
      Array.from({ length: limit + 2 }, (_, i) => team.call('POST', '/v1/contactBooks', { body: { name: `Burst ${i}` } })),
    );
    const accepted = responses.filter((res) => res.status === 200);
    const refused = responses.filter((res) => res.status !== 200);
    expect(accepted).toHaveLength(limit);
    expect(refused).toHaveLength(2);
    expect(accepted.map((res) => rateHeaders(res).remaining).sort((x, y) => x - y)).toEqual(
      Array.from({ length: limit }, (_, i) => i),
    );
    for (const res of [...accepted, ...refused]) {
      expect(rateHeaders(res)).toEqual({ limit, remaining: expect.any(Number), reset: 1 });
    }
    for (const res of refused) {
      expectApiError(res, 429, 'RATE_LIMITED', 'over the limit');
      expect(rateHeaders(res).remaining).toBe(0);
      expect(Number(res.headers.get('retry-after'))).toBe(1);
    }

    nextSecond();
    const books = await team.call('GET', '/v1/contactBooks');
    expect(books.status).toBe(200);
    expect(books.body.map((book: { name: string }) => book.name).sort()).toEqual(accepted.map((res) => res.body.name).sort());
  });

  it('the 429 of every route, under /v1 and /api/v1, is in its error shape: the standard one, the legacy one for contact-book PATCH and DELETE; and it does nothing', async () => {
    const team = await teamFixture(server);
    await team.ready();
    const before = await snapshot(team);
    await setTeamRateLimit(server.deps, { teamId: team.teamId, perSecond: 1 });
    nextSecond();
    expect((await team.call('GET', '/v1/contactBooks')).status).toBe(200);
    let legacy = 0;
    for (const route of apiRoutes) {
      for (const prefix of ['/v1', '/api/v1']) {
        const res = await callRoute(team, route, { prefix });
        expectRouteError(route, res, 429, 'RATE_LIMITED', `${routeName(route)} under ${prefix}`);
        expect(Number(res.headers.get('retry-after')), routeName(route)).toBe(1);
        if (routeHasLegacyErrors(route)) legacy++;
      }
    }
    expect(legacy, 'contact-book PATCH and DELETE under both prefixes').toBe(4);
    await setTeamRateLimit(server.deps, { teamId: team.teamId, perSecond: null });
    nextSecond();
    expect(await snapshot(team), 'a refused request changed the data').toEqual(before);
  });

  it('every authenticated response carries the X-RateLimit headers', async () => {
    const team = await teamFixture(server);
    await team.ready();
    const sendingKey = await server.key(team.teamId, 'sending');
    const answers: [string, CallResult][] = [];
    // Whatever each answers once earlier calls have changed the data (a deleted book, say) is fine.
    for (const route of apiRoutes) {
      answers.push([`${routeName(route)} as sent`, await callRoute(team, route)]);
      answers.push([`${routeName(route)} with a sending key`, await callRoute(team, route, { key: sendingKey })]);
      if (route.body) {
        answers.push([
          `${routeName(route)} with malformed JSON`,
          await callRoute(team, route, { rawBody: '{', headers: { 'content-type': 'application/json' } }),
        ]);
      }
    }
    answers.push(['a wrong method', await team.call('PUT', '/api/v1/contactBooks')]);
    answers.push(['an absent id', await team.call('GET', '/v1/contactBooks/absent')]);
    for (const [what, res] of answers) {
      const { limit, remaining, reset } = rateHeaders(res);
      expect(limit, what).toBe(DEFAULT_LIMIT);
      expect(remaining, what).toBeGreaterThanOrEqual(0);
      expect(remaining, what).toBeLessThan(DEFAULT_LIMIT);
      expect(reset, what).toBe(1);
    }
  });

  it('a team without its own limit gets RATE_LIMIT_PER_SECOND, and its own once set', async () => {
    const team = await teamFixture(server);
    expect(rateHeaders(await team.call('GET', '/v1/contactBooks')).limit).toBe(DEFAULT_LIMIT);
    await setTeamRateLimit(server.deps, { teamId: team.teamId, perSecond: 7 });
    expect(rateHeaders(await team.call('GET', '/v1/contactBooks')).limit).toBe(7);
    await setTeamRateLimit(server.deps, { teamId: team.teamId, perSecond: null });
    expect(rateHeaders(await team.call('GET', '/v1/contactBooks')).limit).toBe(DEFAULT_LIMIT);
  });

  it("one team exhausting its limit does not affect another team's", async () => {
    const limit = 3;
    const [busy, quiet] = [await limitedTeam(limit), await limitedTeam(limit)];
    nextSecond();
    const flood = await Promise.all(Array.from({ length: limit + 2 }, () => busy.call('GET', '/v1/contactBooks')));
    const after = await Promise.all([busy.call('GET', '/v1/contactBooks'), quiet.call('GET', '/v1/contactBooks')]);
    expect(flood.filter((res) => res.status === 200)).toHaveLength(limit);
    expectApiError(after[0]!, 429, 'RATE_LIMITED', 'the busy team');
    expect(after[1]!.status).toBe(200);
    expect(rateHeaders(after[1]!)).toEqual({ limit, remaining: limit - 1, reset: 1 });
  });
});
