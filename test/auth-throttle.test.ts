import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoutes } from '../src/api/index.js';
import { setTeamRateLimit } from '../src/services/teams.js';
import { expectApiError, expectRouteError, routeHasLegacyErrors } from './helpers/api-error.js';
import { requestFrom as requestFromAddress } from './helpers/client-address.js';
import { roomInThisMinute } from './helpers/clock-minute.js';
import { absentId, fillPath, pathParams, routeName } from './helpers/fixtures.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';

const FAILURES_PER_MINUTE = 5;
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ AUTH_FAILURES_PER_MINUTE: String(FAILURES_PER_MINUTE) });
});
afterAll(() => server.stop());

/** An API call from a chosen loopback address, so tests can be different clients. */
async function requestFrom(localAddress: string, method: string, path: string, key?: string): Promise<CallResult> {
  const answer = await requestFromAddress(localAddress, `${server.url}${path}`, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { ...answer, body: JSON.parse(answer.text) };
}
const getFrom = (localAddress: string, path: string, key?: string) => requestFrom(localAddress, 'GET', path, key);

describe('guessing keys is throttled per client address', () => {
  it(`after ${FAILURES_PER_MINUTE} failed authentications a client gets 429 with Retry-After, even with a valid key; other clients are not affected`, async () => {
    const { apiKey } = await server.team('Throttled');
    await roomInThisMinute(15_000);
    const answers = [];
    for (let i = 0; i < FAILURES_PER_MINUTE + 3; i++) answers.push(await getFrom('127.0.0.5', '/v1/domains', `mr_guess${i}`));
    expect(answers.map((a) => a.status)).toEqual([...Array(FAILURES_PER_MINUTE).fill(401), 429, 429, 429]);
    const throttled = answers.at(-1)!;
    expectApiError(throttled, 429, 'RATE_LIMITED');
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(throttled.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    // Missing keys count as failures too, and a right key no longer gets through from there.
    expect((await getFrom('127.0.0.5', '/v1/domains')).status).toBe(429);
    expect((await getFrom('127.0.0.5', '/v1/domains', apiKey)).status).toBe(429);

    expect((await getFrom('127.0.0.6', '/v1/domains', 'mr_wrong')).status).toBe(401);
    expect((await getFrom('127.0.0.6', '/v1/domains', apiKey)).status).toBe(200);
  });
});

describe('the 429 of a throttled client', () => {
  it('is in the error shape of the route it refuses, on every route under /v1 and /api/v1: the legacy one for contact-book PATCH and DELETE', async () => {
    const { apiKey } = await server.team('Throttled everywhere');
    await roomInThisMinute(15_000);
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) expect((await getFrom('127.0.0.7', '/v1/domains', `mr_guess${i}`)).status).toBe(401);
    let legacy = 0;
    for (const route of apiRoutes) {
      // Ids nobody has: the throttle answers before anything is looked up, with a valid key or none.
      const path = fillPath(route, Object.fromEntries(pathParams(route).map((name) => [name, absentId(route, name)])), '');
      for (const prefix of ['/v1', '/api/v1']) {
        for (const key of [apiKey, undefined]) {
          const res = await requestFrom('127.0.0.7', route.method.toUpperCase(), prefix + path, key);
          expectRouteError(route, res, 429, 'RATE_LIMITED', `${routeName(route)} under ${prefix}${key ? ' with a valid key' : ''}`);
        }
        if (routeHasLegacyErrors(route)) legacy++;
      }
    }
    expect(legacy, 'contact-book PATCH and DELETE under both prefixes').toBe(4);
  });
});

describe("a refused call does not spend the team's quota", () => {
  it('403s never exhaust the rate limit, so the calls the key may make still get through', async () => {
    const { teamId } = await server.team('Quota');
    const sendingOnly = await server.key(teamId, 'sending');
    await setTeamRateLimit(server.deps, { teamId, perSecond: 3 });
    // A sending-only key may not read contact books: 403. Twenty of them within a second or two
    // would spend a quota of 3 per second many times over if they counted.
    const forbidden = [];
    for (let i = 0; i < 20; i++) forbidden.push((await server.call('GET', '/v1/contactBooks', { key: sendingOnly })).status);
    expect(forbidden).toEqual(Array(20).fill(403));
    expect((await server.call('GET', '/v1/emails', { key: sendingOnly })).status).toBe(200);
  });
});
