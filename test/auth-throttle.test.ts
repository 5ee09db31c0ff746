import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTeamRateLimit } from '../src/services/teams.js';
import { startTestServer, type TestServer } from './helpers/server.js';

const FAILURES_PER_MINUTE = 5;
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ AUTH_FAILURES_PER_MINUTE: String(FAILURES_PER_MINUTE) });
});
afterAll(() => server.stop());

/** A GET from a chosen loopback address (any of 127.0.0.0/8), so tests can be different clients. */
function getFrom(localAddress: string, path: string, key?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${server.url}${path}`, { localAddress, headers: key ? { authorization: `Bearer ${key}` } : {} }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: JSON.parse(text) }));
    });
    request.on('error', reject);
  });
}

describe('guessing keys is throttled per client address', () => {
  it(`after ${FAILURES_PER_MINUTE} failed authentications a client gets 429 with Retry-After, even with a valid key; other clients are not affected`, async () => {
    const { apiKey } = await server.team('Throttled');
    const answers = [];
    for (let i = 0; i < FAILURES_PER_MINUTE + 3; i++) answers.push(await getFrom('127.0.0.5', '/v1/domains', `mr_guess${i}`));
    expect(answers.map((a) => a.status)).toEqual([...Array(FAILURES_PER_MINUTE).fill(401), 429, 429, 429]);
    const throttled = answers.at(-1)!;
    expect(throttled.body).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(throttled.headers['retry-after'])).toBeLessThanOrEqual(60);
    // Missing keys count as failures too, and a right key no longer gets through from there.
    expect((await getFrom('127.0.0.5', '/v1/domains')).status).toBe(429);
    expect((await getFrom('127.0.0.5', '/v1/domains', apiKey)).status).toBe(429);

    expect((await getFrom('127.0.0.6', '/v1/domains', 'mr_wrong')).status).toBe(401);
    expect((await getFrom('127.0.0.6', '/v1/domains', apiKey)).status).toBe(200);
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
