import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audit, type Actor, type AuditedChange } from '../src/events/audit.js';
import { expectApiError, errorFields } from './helpers/api-error.js';
import { createDomain } from './helpers/domains.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const HOUR_MS = 3_600_000;
// Changes recorded a month before the tests run (well within AUDIT_RETENTION_DAYS, so retention
// leaves them): a window ending a day later holds only the rows a test wrote.
const BASE = Math.floor(Date.now() / 86_400_000 - 30) * 86_400_000;
const END = new Date(BASE + 86_400_000).toISOString();

const ada: Actor = { type: 'user', id: 'usr_ada', label: 'ada@example.test', ip: '203.0.113.7' };
const deployKey: Actor = { type: 'apiKey', id: 'key_deploy', label: 'Deploy', ip: '198.51.100.20' };
const operator: Actor = { type: 'cli', id: 'cli', label: 'CLI', ip: null };

type Written = { actor: Actor; change: AuditedChange; at: Date };

/** Records each change as made by its actor at its time, as a service's transaction would. */
async function record(teamId: number, rows: Written[]) {
  for (const { actor, change, at } of rows) await audit(server.deps.db, { teamId, actor }, change, at);
}

/** A team with a history: seven changes, an hour apart, by a person, a key and the CLI. */
async function teamWithHistory(name: string) {
  const team = await server.team(name);
  const at = (hours: number) => new Date(BASE + hours * HOUR_MS);
  const rows: Written[] = [
    { actor: operator, change: { action: 'team.rateLimitChanged', targetType: 'team', targetId: team.teamId }, at: at(0) },
    { actor: ada, change: { action: 'domain.created', targetType: 'domain', targetId: 41 }, at: at(1) },
    { actor: deployKey, change: { action: 'template.created', targetType: 'template', targetId: 'tpl_1' }, at: at(2) },
    { actor: ada, change: { action: 'apiKey.revoked', targetType: 'apiKey', targetId: 'key_old' }, at: at(3) },
    { actor: deployKey, change: { action: 'domain.created', targetType: 'domain', targetId: 42 }, at: at(4) },
    { actor: ada, change: { action: 'campaign.paused', targetType: 'campaign', targetId: 'cmp_1' }, at: at(5) },
    { actor: deployKey, change: { action: 'suppression.added', targetType: 'suppression', targetId: null }, at: at(6) },
  ];
  await record(team.teamId, rows);
  return { ...team, at };
}

type Entry = { id: string; at: string; actor: { type: string; id: string; label: string }; action: string; targetType: string; targetId: string | null; ip: string | null };

async function list(key: string, query: Record<string, string> = {}) {
  const res = await server.call('GET', `/v1/audit-log?${new URLSearchParams(query)}`, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { data: Entry[]; count: number };
}
const actions = (page: { data: Entry[] }) => page.data.map((entry) => entry.action);

describe('GET /v1/audit-log', () => {
  it('lists the changes newest first, a page at a time, each with who, what, to what and from where', async () => {
    const team = await teamWithHistory('Paged');
    const pages = [];
    for (const page of ['1', '2', '3']) pages.push(await list(team.apiKey, { to: END, limit: '3', page }));
    expect(pages.map((page) => page.count)).toEqual([7, 7, 7]);
    expect(pages.map(actions)).toEqual([
      ['suppression.added', 'campaign.paused', 'domain.created'],
      ['apiKey.revoked', 'template.created', 'domain.created'],
      ['team.rateLimitChanged'],
    ]);
    const all = pages.flatMap((page) => page.data);
    expect(new Set(all.map((entry) => entry.id)).size).toBe(7);
    expect(all.map((entry) => entry.at)).toEqual([6, 5, 4, 3, 2, 1, 0].map((hours) => team.at(hours).toISOString()));
    expect(all[1]).toEqual({
      id: expect.any(String),
      at: team.at(5).toISOString(),
      actor: { type: 'user', id: 'usr_ada', label: 'ada@example.test' },
      action: 'campaign.paused',
      targetType: 'campaign',
      targetId: 'cmp_1',
      ip: '203.0.113.7',
    });
    expect(all.at(-1)).toMatchObject({ actor: { type: 'cli', id: 'cli', label: 'CLI' }, targetId: String(team.teamId), ip: null });
    expect(all[0]!.targetId).toBeNull();
    expect(await list(team.apiKey, { to: END, limit: '3', page: '4' })).toEqual({ data: [], count: 7 });
  });

  it('narrows by actor, kind of actor, one or several actions, and a window from (inclusive) to (exclusive)', async () => {
    const team = await teamWithHistory('Filtered');
    const key = team.apiKey;
    const narrowed = async (query: Record<string, string>) => {
      const page = await list(key, { to: END, ...query });
      expect(page.count).toBe(page.data.length);
      return actions(page);
    };
    expect(await narrowed({ actor: 'usr_ada' })).toEqual(['campaign.paused', 'apiKey.revoked', 'domain.created']);
    expect(await narrowed({ actorType: 'apiKey' })).toEqual(['suppression.added', 'domain.created', 'template.created']);
    expect(await narrowed({ actor: 'cli' })).toEqual(['team.rateLimitChanged']);
    expect(await narrowed({ actor: 'usr_ada', actorType: 'apiKey' })).toEqual([]);
    expect(await narrowed({ action: 'domain.created' })).toEqual(['domain.created', 'domain.created']);
    expect(await narrowed({ action: 'domain.created, campaign.paused,domain.created' })).toEqual(['campaign.paused', 'domain.created', 'domain.created']);
    expect(await narrowed({ from: team.at(2).toISOString(), to: team.at(4).toISOString() })).toEqual(['apiKey.revoked', 'template.created']);
    // Any ISO 8601 offset is the same instant: 03:00 at +01:00 is 02:00 UTC.
    const day = team.at(0).toISOString().slice(0, 10);
    expect(await narrowed({ from: `${day}T03:00:00+01:00`, to: `${day}T03:00:00Z` })).toEqual(['template.created']);
    expect(await narrowed({ from: team.at(3).toISOString(), to: team.at(3).toISOString() })).toEqual([]);
    expect(await narrowed({ actor: 'key_deploy', action: 'domain.created,suppression.added', from: team.at(4).toISOString() })).toEqual([
      'suppression.added',
      'domain.created',
    ]);
  });

  it("shows a team only its own changes: another team's, by the same actor ids and actions, never appear", async () => {
    const mine = await teamWithHistory('Mine');
    const theirs = await server.team('Theirs');
    await record(theirs.teamId, [
      { actor: ada, change: { action: 'domain.created', targetType: 'domain', targetId: 'theirs-1' }, at: new Date(BASE + 90 * 60_000) },
      { actor: deployKey, change: { action: 'webhook.deleted', targetType: 'webhook', targetId: 'theirs-2' }, at: new Date(BASE + 150 * 60_000) },
    ]);
    const filters: Record<string, string>[] = [{}, { actor: 'usr_ada' }, { actorType: 'apiKey' }, { action: 'domain.created,webhook.deleted' }, { from: new Date(BASE).toISOString() }];
    for (const query of filters) {
      const page = await list(mine.apiKey, { to: END, ...query });
      expect(JSON.stringify(page), JSON.stringify(query)).not.toContain('theirs-');
    }
    expect((await list(mine.apiKey, { to: END })).count).toBe(7);
    expect(await list(theirs.apiKey, { to: END })).toMatchObject({ count: 2, data: [{ targetId: 'theirs-2' }, { targetId: 'theirs-1' }] });
  });

  it('records a change made through the API in the same request, with the key as its actor, and lists it first', async () => {
    const team = await server.team('Live');
    const created = await server.call('POST', '/v1/domains', { key: team.apiKey, body: { name: 'audited.example.test' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const [newest] = (await list(team.apiKey)).data;
    expect(newest).toMatchObject({ action: 'domain.created', targetType: 'domain', targetId: String(created.body.id), actor: { type: 'apiKey' } });
    expect(newest!.ip).toEqual(expect.any(String));
    expect((await list(team.apiKey, { actor: newest!.actor.id, action: 'domain.created' })).count).toBe(1);
  });

  it('is refused with 403 to a sending-only key and to a key scoped to a domain: the log is the whole team\'s', async () => {
    const team = await teamWithHistory('Keys');
    const domain = await createDomain(server, team.apiKey, 'scoped-audit.example.test');
    const sending = await server.key(team.teamId, 'sending');
    const scoped = await server.key(team.teamId, 'full', domain.id);
    for (const key of [sending, scoped]) {
      const res = await server.call('GET', '/v1/audit-log', { key });
      expectApiError(res, 403, 'FORBIDDEN');
      expect(JSON.stringify(res.body)).not.toContain('usr_ada');
    }
    expect((await list(team.apiKey, { to: END })).count).toBe(7);
  });

  it('refuses bad filters with 400 VALIDATION_ERROR naming each bad field', async () => {
    const { apiKey } = await server.team('Bad filters');
    const refused = async (query: string) => {
      const res = await server.call('GET', `/v1/audit-log?${query}`, { key: apiKey });
      expectApiError(res, 400, 'VALIDATION_ERROR');
      return Object.fromEntries(errorFields(res).details!.map((detail) => [detail.path, detail.message]));
    };
    expect(await refused('actorType=robot')).toEqual({ actorType: 'must be one of: user, apiKey, cli' });
    expect(await refused('action=domain.exploded')).toEqual({ 'action[0]': 'unknown action "domain.exploded"' });
    expect(await refused('action=domain.created,nope')).toEqual({ 'action[1]': 'unknown action "nope"' });
    expect(await refused('action=,,')).toEqual({ action: 'must name an action' });
    expect(Object.keys(await refused('from=yesterday&to=2020-13-01T00:00:00Z'))).toEqual(['from', 'to']);
    expect(Object.keys(await refused('from=2020-03-01'))).toEqual(['from']);
    expect(await refused('from=0001-01-01T00:00:00Z')).toEqual({ from: 'must be between 1970-01-01 and 9999-12-31' });
    expect(await refused(`from=${encodeURIComponent('2026-03-02T00:00:00Z')}&to=${encodeURIComponent('2026-03-01T23:59:59.999+00:00')}`)).toEqual({ to: 'must not be before from' });
    expect(Object.keys(await refused(`actor=${'x'.repeat(129)}&limit=101&page=0`)).sort()).toEqual(['actor', 'limit', 'page']);
  });
});
