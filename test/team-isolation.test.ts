import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoutes } from '../src/api/index.js';
import { expectApiError } from './helpers/api-error.js';
import {
  absentId,
  fillPath,
  pathParams,
  routeName,
  routesWithParams,
  snapshot,
  teamFixture,
  type TeamFixture,
} from './helpers/fixtures.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const ID_FIELD = /^id$|Ids?$/;

/**
 * Where a JSON answer mentions any of `ids`: as the value of an id field (`id`, `teamId`,
 * `contactIds`…), or, for ids and names long enough not to occur by chance, anywhere in its text.
 */
function mentions(value: unknown, ids: string[], field = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((item) => mentions(item, ids, field));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => mentions(item, ids, key));
  if (typeof value !== 'string' && typeof value !== 'number') return [];
  const text = String(value);
  return ids.filter((id) => (ID_FIELD.test(field) && text === id) || (id.length >= 8 && text.includes(id)));
}

/** What a caller may see of another team's data: nothing, not even an id or a name, beyond the ids it sent. */
async function expectNothingOf(owner: TeamFixture, answer: unknown, what: string, sent = '') {
  const secrets = [owner.tag, String(owner.teamId), ...(await owner.createdIds())].filter((secret) => !sent.includes(secret));
  expect(mentions(answer, secrets), `${what} reveals another team's data: ${JSON.stringify(answer)}`).toEqual([]);
}

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The answer with each id it was given, the caller's own ids and name, and times, replaced by their role. */
async function normalized(res: CallResult, caller: TeamFixture, values: Record<string, string>) {
  const roles = new Map<string, string>([
    ...(await caller.createdIds()).map((id): [string, string] => [id, '<own id>']),
    ...Object.entries(values).map(([name, id]): [string, string] => [id, `<${name}>`]),
    [caller.tag, '<own tag>'],
    [String(caller.teamId), '<own team>'],
  ]);
  const tokens = [...roles.keys()].sort((a, b) => b.length - a.length);
  const replace = (value: unknown, field = ''): unknown => {
    if (Array.isArray(value)) return value.map((item) => replace(item, field));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replace(item, key)]));
    }
    if (typeof value === 'number') return ID_FIELD.test(field) ? (roles.get(String(value)) ?? value) : value;
    if (typeof value !== 'string') return value;
    if (TIMESTAMP.test(value)) return '<time>';
    return tokens.reduce(
      (text, token) => text.replace(new RegExp(`(?<![\\w-])${token.replace(/[^\w]/g, '\\$&')}(?![\\w-])`, 'g'), roles.get(token)!),
      value,
    );
  };
  return { status: res.status, body: replace(res.body) };
}

describe('team isolation', () => {
  it("another team's ids answer exactly like missing ones on every endpoint, and change nothing there", async () => {
    const owner = await teamFixture(server, 'Owner');
    const before = await snapshot(owner);
    // Each endpoint gets its own callers, so endpoints checked at once cannot disturb each other.
    await Promise.all(
      routesWithParams.map(async (route) => {
        const ownerParams = await owner.params(route);
        // Two teams in the same state: one is pointed at the owner's ids, the other at absent ones.
        const caller = await teamFixture(server, 'Caller');
        const control = await teamFixture(server, 'Control');
        const targets = pathParams(route).filter((name) => ownerParams[name] !== absentId(route, name));
        // Each resource parameter on its own (the rest the caller's), then all of them at once.
        for (const replaced of [...targets.map((name) => [name]), ...(targets.length > 1 ? [targets] : [])]) {
          const what = `${routeName(route)} with another team's ${replaced.join(' and ')}`;
          const send = async (team: TeamFixture, pick: (name: string) => string) => {
            const values = { ...(await team.params(route)), ...Object.fromEntries(replaced.map((name) => [name, pick(name)])) };
            const body = await team.body(route);
            const res = await team.call(route.method.toUpperCase(), fillPath(route, values), body === undefined ? {} : { body });
            return { res, normalized: await normalized(res, team, values) };
          };
          const foreign = await send(caller, (name) => ownerParams[name]!);
          const missing = await send(control, (name) => absentId(route, name));

          expect(foreign.normalized, what).toEqual(missing.normalized);
          if (replaced.length === pathParams(route).length) expectApiError(foreign.res, 404, 'NOT_FOUND', what);
          await expectNothingOf(owner, foreign.normalized, what);
        }
      }),
    );
    expect(await snapshot(owner), "a request at another team's ids changed that team's data").toEqual(before);
  });

  it("no endpoint shows a team another team's rows", async () => {
    const a = await teamFixture(server, 'A');
    const b = await teamFixture(server, 'B');
    await a.ready();
    await b.ready();
    for (const [viewer, other] of [[a, b], [b, a]] as const) {
      let seen = '';
      for (const route of apiRoutes.filter((r) => r.method === 'get')) {
        const res = await viewer.call('GET', await viewer.path(route));
        expect(res.status, routeName(route)).toBe(200);
        await expectNothingOf(other, res.body, routeName(route));
        seen += JSON.stringify(res.body);
      }
      expect(seen, 'the listings show the team its own rows').toContain(viewer.tag);
    }
  });

  it("a write naming another team's resources in its body changes nothing there", async () => {
    const owner = await teamFixture(server, 'Owner');
    const before = await snapshot(owner);
    await Promise.all(
      apiRoutes
        .filter((route) => route.method !== 'get' && route.body)
        .map(async (route) => {
          const caller = await teamFixture(server, 'Caller');
          const body = await caller.body(route, owner);
          const res = await caller.call(route.method.toUpperCase(), await caller.path(route), { body });
          await expectNothingOf(owner, res.body, routeName(route), JSON.stringify(body));
        }),
    );
    expect(await snapshot(owner), "a write naming another team's resources changed that team's data").toEqual(before);
  });
});
