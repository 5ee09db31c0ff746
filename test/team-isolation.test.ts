import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoutes } from '../src/api/index.js';
import { expectRouteError } from './helpers/api-error.js';
import {
  absentId,
  absentResources,
  fillPath,
  pathParams,
  POSITIONAL_PARAMS,
  referencingWrites,
  routeName,
  routesWithParams,
  snapshot,
  teamFixture,
  type ResourceOwner,
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
 * A trace of a team in an answer: a name or id, and the fields where it would be that team's. An
 * integer id counts only in fields of its own kind (another team's domain may well have the number
 * of the owner's team); text long enough not to occur by chance counts anywhere.
 */
type Secret = { text: string; field: RegExp | null };

async function secretsOf(owner: TeamFixture): Promise<Secret[]> {
  const ofKind = (resource: string, id: string): Secret =>
    id.length >= 8 ? { text: id, field: null } : { text: id, field: new RegExp(`^(id|${resource}s?)$`) };
  return [
    { text: owner.tag, field: null },
    { text: String(owner.teamId), field: /^teamIds?$/ },
    ...(await owner.created()).map(([resource, id]) => ofKind(resource, id)),
  ];
}

/** Which of the secrets a JSON answer mentions. */
function mentions(value: unknown, secrets: Secret[], field = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((item) => mentions(item, secrets, field));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([key, item]) => mentions(item, secrets, key));
  if (typeof value !== 'string' && typeof value !== 'number') return [];
  const text = String(value);
  return secrets.filter((secret) => (secret.field ? secret.field.test(field) && text === secret.text : text.includes(secret.text))).map((secret) => secret.text);
}

/**
 * What a caller may see of another team's data: nothing, not even an id or a name. Ids the caller
 * sent are replaced by their role first (see normalized), so every one of the owner's is looked for.
 */
async function expectNothingOf(owner: TeamFixture, answer: unknown, what: string) {
  expect(mentions(answer, await secretsOf(owner)), `${what} reveals another team's data: ${JSON.stringify(answer)}`).toEqual([]);
}

/**
 * What a write answers when its body names a resource that is not the caller's: the same as for one
 * that does not exist. Every write that names resources needs its answer here.
 */
const ANSWER_TO_ABSENT_REFERENCE: Record<string, number> = {
  'POST /emails': 400,
  'POST /emails/batch': 400,
  'POST /campaigns': 400,
  'POST /contactBooks': 400,
  'PATCH /contactBooks/{contactBookId}': 400,
  'POST /inbound/routes': 400,
  'POST /automations': 400,
  // An event names its book in the body: another team's is as missing as any.
  'POST /events': 404,
  // Deleting contacts the book does not have deletes nothing: { success: true, count: 0 }.
  'DELETE /contactBooks/{contactBookId}/contacts/bulk': 200,
};

/**
 * Query parameters that name a team's resources: the kind they name, and which of the owner's to put
 * there (both its domains, as only the one it sends from has mail; its contact; its contact's address).
 */
const QUERY_REFERENCES: Record<string, { kind: string; of(owner: TeamFixture): Promise<string[]> }> = {
  domainId: {
    kind: 'domainId',
    of: async (owner) => {
      const sender = await owner.id('senderDomain');
      const { body } = await owner.call('GET', '/v1/domains');
      return [await owner.id('domainId'), String(body.find((domain: { name: string }) => domain.name === sender).id)];
    },
  },
  ids: { kind: 'contactId', of: async (owner) => [await owner.id('contactId')] },
  contactId: { kind: 'contactId', of: async (owner) => [await owner.id('contactId')] },
  emails: { kind: 'email', of: async (owner) => [`${owner.tag}@example.com`] },
  routeId: { kind: 'inboundRouteId', of: async (owner) => [await owner.id('inboundRouteId')] },
};
const NAMES_RESOURCES = /^(ids|emails)$|Ids?$/;

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
        const targets = pathParams(route).filter((name) => ownerParams[name] !== absentId(route, name) && !POSITIONAL_PARAMS.has(name));
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
          if (replaced.length === pathParams(route).filter((name) => !POSITIONAL_PARAMS.has(name)).length) expectRouteError(route, foreign.res, 404, 'NOT_FOUND', what);
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

  it("another team's ids in a query string answer exactly like missing ones and reveal nothing of that team", async () => {
    const owner = await teamFixture(server, 'Owner');
    await owner.ready();
    const asked = apiRoutes
      .filter((route) => route.method === 'get' && route.query)
      .flatMap((route) => Object.keys(route.query!.shape).filter((name) => NAMES_RESOURCES.test(name)).map((name) => ({ route, name })));
    expect(asked.map(({ route, name }) => `${routeName(route)}?${name}`)).toEqual(
      expect.arrayContaining(['GET /emails?domainId', 'GET /analytics/reputation-metrics?domainId', 'GET /analytics/email-time-series?domainId']),
    );
    await Promise.all(
      asked.map(async ({ route, name }) => {
        const references = QUERY_REFERENCES[name];
        expect(references, `${routeName(route)} takes ${name}: add what it names to QUERY_REFERENCES`).toBeDefined();
        for (const id of await references!.of(owner)) {
          const what = `${routeName(route)}?${name}=<another team's>`;
          const caller = await teamFixture(server, 'Caller');
          const control = await teamFixture(server, 'Control');
          const ask = async (team: TeamFixture, value: string) => {
            const res = await team.call('GET', `${await team.path(route)}?${name}=${encodeURIComponent(value)}`);
            return { res, normalized: await normalized(res, team, { [name]: value }) };
          };
          const foreign = await ask(caller, id);
          const missing = await ask(control, await absentResources.id(references!.kind));
          expect(foreign.normalized, what).toEqual(missing.normalized);
          await expectNothingOf(owner, foreign.normalized, what);
        }
      }),
    );
  });

  it("a write naming another team's resources in its body is answered as if they did not exist, and changes nothing there", async () => {
    const owner = await teamFixture(server, 'Owner');
    const before = await snapshot(owner);
    const writes = await referencingWrites();
    // The sender checks guard against sending from another team's verified domain.
    expect(writes.map((write) => routeName(write.route))).toEqual(expect.arrayContaining(['POST /emails', 'POST /emails/batch', 'POST /campaigns']));
    await Promise.all(
      writes.flatMap((write) =>
        // Each named resource on its own (the rest the caller's), then all of them at once.
        [...write.names.map((name) => [name]), ...(write.names.length > 1 ? [write.names] : [])].map(async (replaced) => {
          const what = `${routeName(write.route)} naming another team's ${replaced.join(' and ')}`;
          // Two teams in the same state: one names the owner's resources, the other resources nobody has.
          const caller = await teamFixture(server, 'Caller');
          const control = await teamFixture(server, 'Control');
          const send = async (team: TeamFixture, named: ResourceOwner) => {
            const pick = (name: string) => (replaced.includes(name) ? named.id(name) : team.id(name));
            const values = Object.fromEntries(await Promise.all(replaced.map(async (name) => [name, await named.id(name)] as const)));
            const res = await team.call(write.route.method.toUpperCase(), await team.path(write.route), { body: await write.body({ id: pick }) });
            return { res, normalized: await normalized(res, team, values) };
          };
          const foreign = await send(caller, owner);
          const missing = await send(control, absentResources);

          expect(foreign.normalized, what).toEqual(missing.normalized);
          const expected = ANSWER_TO_ABSENT_REFERENCE[routeName(write.route)];
          expect(expected, `${routeName(write.route)} names resources in its body: add its answer to ANSWER_TO_ABSENT_REFERENCE`).toBeDefined();
          expect(foreign.res.status, `${what} → ${JSON.stringify(foreign.res.body)}`).toBe(expected);
          // A refusal names the field like any invalid one, in the route's error shape.
          if (expected === 400) expectRouteError(write.route, foreign.res, 400, 'VALIDATION_ERROR', what);
          await expectNothingOf(owner, foreign.normalized, what);
          // Nothing the caller can read afterwards (a stored email, a book's sender) holds the owner's data.
          await expectNothingOf(owner, await snapshot(caller), `what the caller of ${what} reads afterwards`);
        }),
      ),
    );
    expect(await snapshot(owner), "a write naming another team's resources changed that team's data").toEqual(before);
  });
});
