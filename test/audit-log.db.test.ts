import { readFile } from 'node:fs/promises';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoutes } from '../src/api/index.js';
import { parseCommand, type CommandTarget } from '../src/cli/commands.js';
import { AUDIT_ACTIONS, type AuditAction, type AuditTargetType } from '../src/events/audit.js';
import { createApiKey, createTeamApiKey, revokeTeamApiKey } from '../src/services/api-keys.js';
import { createTeam } from '../src/services/teams.js';
import { routeName, teamFixture, type TeamFixture } from './helpers/fixtures.js';
import { startTestServer, type CallResult, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

/**
 * The audit log on real parts: every change is made over HTTP (or through the CLI's commands and
 * the dashboard's key service), and the rows are read straight from the database.
 */

let server: TestServer;
let team: TeamFixture;
/** The key `team` calls with, as its rows must name it. */
let actor: { type: string; id: string; label: string };
/** Every secret any call answered, none of which may reach the log. */
const secrets: string[] = [];

beforeAll(async () => {
  server = await startTestServer();
  team = await teamFixture(server, 'Audited');
  secrets.push(team.apiKey);
  await team.ready();
  const key = await server.deps.db.selectFrom('api_keys').select(['id', 'name']).where('team_id', '=', team.teamId).executeTakeFirstOrThrow();
  actor = { type: 'apiKey', id: key.id, label: key.name! };
}, 60_000);
afterAll(() => server?.stop());

const rowsOf = (teamId: number) =>
  server.deps.db.selectFrom('audit_log').selectAll().where('team_id', '=', teamId).orderBy('at').orderBy('id').execute();

/** Runs `change` and answers the audit rows of the team it wrote, with its result. */
async function rowsWritten<T>(teamId: number, change: () => Promise<T>) {
  const before = new Set((await rowsOf(teamId)).map((row) => row.id));
  const result = await change();
  return { result, rows: (await rowsOf(teamId)).filter((row) => !before.has(row.id)) };
}

/** The API writes the tests below made, to show at the end that none was left out. */
const exercised = new Set<string>();

type Expected = { action: AuditAction; targetType: AuditTargetType; targetId: (res: CallResult) => string | number };

/**
 * Makes one change through the API as the team's key (`route` as the API lists it, the path with
 * the ids filled in) and expects 200 and exactly one new row: the action, the key as actor, the
 * target, the client's address.
 */
async function expectAudited(route: string, path: string, body: unknown, expected: Expected) {
  const [method] = route.split(' ');
  const { result: res, rows } = await rowsWritten(team.teamId, () => team.call(method!, `/v1${path}`, body === undefined ? {} : { body }));
  expect(res.status, `${route}: ${JSON.stringify(res.body)}`).toBe(200);
  if (res.body?.secret) secrets.push(res.body.secret);
  expect(rows, route).toHaveLength(1);
  expect(rows[0], route).toMatchObject({
    action: expected.action,
    target_type: expected.targetType,
    target_id: String(expected.targetId(res)),
    actor_type: actor.type,
    actor_id: actor.id,
    actor_label: actor.label,
  });
  expect(['127.0.0.1', '::ffff:127.0.0.1'], route).toContain(rows[0]!.ip);
  exercised.add(route);
  return res.body;
}

const fromBody = (field: string) => (res: CallResult) => res.body[field];
const is = (id: string | number) => () => id;

/** Expects the change to be made and to write no audit row (data, not a change of the account). */
async function expectUnaudited(route: string, path: string, body: unknown) {
  const [method] = route.split(' ');
  const { result: res, rows } = await rowsWritten(team.teamId, () => team.call(method!, `/v1${path}`, { body }));
  expect([200, 202], `${route}: ${JSON.stringify(res.body)}`).toContain(res.status);
  expect(rows, route).toEqual([]);
  exercised.add(route);
}

describe('every change made through the API writes one audit row in its transaction', () => {
  it('domains: created, updated, verification requested, deleted', async () => {
    const domain = await expectAudited('POST /domains', '/domains', { name: 'audited.example.com' }, { action: 'domain.created', targetType: 'domain', targetId: fromBody('id') });
    const id = domain.id as number;
    await expectAudited('PATCH /domains/{id}', `/domains/${id}`, { openTracking: true }, { action: 'domain.updated', targetType: 'domain', targetId: is(id) });
    await expectAudited('PUT /domains/{id}/verify', `/domains/${id}/verify`, undefined, { action: 'domain.verificationRequested', targetType: 'domain', targetId: is(id) });
    await expectAudited('DELETE /domains/{id}', `/domains/${id}`, undefined, { action: 'domain.deleted', targetType: 'domain', targetId: is(id) });
  });

  it('contact books: created, updated, deleted', async () => {
    const book = await expectAudited('POST /contactBooks', '/contactBooks', { name: 'Audited book' }, { action: 'contactBook.created', targetType: 'contactBook', targetId: fromBody('id') });
    await expectAudited('PATCH /contactBooks/{contactBookId}', `/contactBooks/${book.id}`, { name: 'Renamed' }, { action: 'contactBook.updated', targetType: 'contactBook', targetId: is(book.id) });
    await expectAudited('DELETE /contactBooks/{contactBookId}', `/contactBooks/${book.id}`, undefined, { action: 'contactBook.deleted', targetType: 'contactBook', targetId: is(book.id) });
  });

  it('contacts: one row per contact changed alone, one per bulk request whatever its size, and none when nothing changed', async () => {
    const bookId = await team.id('contactBookId');
    const contacts = `/contactBooks/${bookId}/contacts`;
    const created = await expectAudited(`POST /contactBooks/{contactBookId}/contacts`, contacts, { email: 'ada@example.com' }, { action: 'contact.created', targetType: 'contact', targetId: fromBody('contactId') });
    const contactId = created.contactId as string;
    await expectAudited('PATCH /contactBooks/{contactBookId}/contacts/{contactId}', `${contacts}/${contactId}`, { firstName: 'Ada' }, { action: 'contact.updated', targetType: 'contact', targetId: is(contactId) });
    await expectAudited('PUT /contactBooks/{contactBookId}/contacts/{contactId}', `${contacts}/${contactId}`, { lastName: 'Lovelace' }, { action: 'contact.updated', targetType: 'contact', targetId: is(contactId) });
    const repeated = await rowsWritten(team.teamId, () => team.call('PUT', `/v1${contacts}/${contactId}`, { body: { lastName: 'Lovelace' } }));
    expect(repeated.result.status).toBe(200);
    expect(repeated.rows, 'a PUT that changes nothing').toEqual([]);
    // Deleted by address: the row names the contact by its id all the same.
    await expectAudited('DELETE /contactBooks/{contactBookId}/contacts/{contactId}', `${contacts}/ada@example.com`, undefined, { action: 'contact.deleted', targetType: 'contact', targetId: is(contactId) });

    const rows = Array.from({ length: 500 }, (_, i) => ({ email: `reader${i}@example.com` }));
    await expectAudited('POST /contactBooks/{contactBookId}/contacts/bulk', `${contacts}/bulk`, rows, { action: 'contact.imported', targetType: 'contactBook', targetId: is(bookId) });
    const contactIds = rows.slice(0, 200).map((row) => row.email);
    await expectAudited('DELETE /contactBooks/{contactBookId}/contacts/bulk', `${contacts}/bulk`, { contactIds }, { action: 'contact.bulkDeleted', targetType: 'contactBook', targetId: is(bookId) });
  });

  it('segments: created, updated, deleted', async () => {
    const segments = `/contactBooks/${await team.id('contactBookId')}/segments`;
    const filter = { all: [{ field: 'email', op: 'contains', value: 'reader' }] };
    const segment = await expectAudited('POST /contactBooks/{contactBookId}/segments', segments, { name: 'Readers', filter }, { action: 'segment.created', targetType: 'segment', targetId: fromBody('id') });
    await expectAudited('PATCH /contactBooks/{contactBookId}/segments/{segmentId}', `${segments}/${segment.id}`, { name: 'All readers' }, { action: 'segment.updated', targetType: 'segment', targetId: is(segment.id) });
    await expectAudited('DELETE /contactBooks/{contactBookId}/segments/{segmentId}', `${segments}/${segment.id}`, undefined, { action: 'segment.deleted', targetType: 'segment', targetId: is(segment.id) });
  });

  it('campaigns: created, updated, scheduled, paused, resumed, deleted', async () => {
    const body = {
      name: 'Audited campaign', from: `hello@${await team.id('senderDomain')}`, subject: 'Hello', contactBookId: await team.id('contactBookId'),
      html: '<p>Hi</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>',
    };
    const campaign = await expectAudited('POST /campaigns', '/campaigns', body, { action: 'campaign.created', targetType: 'campaign', targetId: fromBody('id') });
    const path = `/campaigns/${campaign.id}`;
    const target = { targetType: 'campaign', targetId: is(campaign.id) } as const;
    await expectAudited('PATCH /campaigns/{campaignId}', path, { name: 'Renamed campaign' }, { action: 'campaign.updated', ...target });
    const later = new Date(Date.now() + 30 * 86_400_000).toISOString();
    await expectAudited('POST /campaigns/{campaignId}/schedule', `${path}/schedule`, { scheduledAt: later }, { action: 'campaign.scheduled', ...target });
    await expectAudited('POST /campaigns/{campaignId}/pause', `${path}/pause`, undefined, { action: 'campaign.paused', ...target });
    await expectAudited('POST /campaigns/{campaignId}/resume', `${path}/resume`, undefined, { action: 'campaign.resumed', ...target });
    await expectAudited('DELETE /campaigns/{campaignId}', path, undefined, { action: 'campaign.deleted', ...target });
  });

  it('scheduled emails: rescheduled, cancelled; sending mail is not a change of the account', async () => {
    const emailId = await team.id('emailId');
    const later = new Date(Date.now() + 40 * 86_400_000).toISOString();
    await expectAudited('PATCH /emails/{emailId}', `/emails/${emailId}`, { scheduledAt: later }, { action: 'email.rescheduled', targetType: 'email', targetId: is(emailId) });
    await expectAudited('POST /emails/{emailId}/cancel', `/emails/${emailId}/cancel`, undefined, { action: 'email.cancelled', targetType: 'email', targetId: is(emailId) });
    const email = { from: `hello@${await team.id('senderDomain')}`, to: 'reader@example.com', subject: 'Hi', text: 'Hi', scheduledAt: later };
    await expectUnaudited('POST /emails', '/emails', email);
    await expectUnaudited('POST /emails/batch', '/emails/batch', [email]);
  });

  it('templates: created, updated, deleted', async () => {
    const template = await expectAudited('POST /templates', '/templates', { name: 'Audited', subject: 'Hi', html: '<p>Hi</p>' }, { action: 'template.created', targetType: 'template', targetId: fromBody('id') });
    await expectAudited('PATCH /templates/{templateId}', `/templates/${template.id}`, { name: 'Renamed' }, { action: 'template.updated', targetType: 'template', targetId: is(template.id) });
    await expectAudited('DELETE /templates/{templateId}', `/templates/${template.id}`, undefined, { action: 'template.deleted', targetType: 'template', targetId: is(template.id) });
  });

  it('suppressions: added and removed, named by the address', async () => {
    await expectAudited('POST /suppressions', '/suppressions', { email: 'Blocked@Example.com' }, { action: 'suppression.added', targetType: 'suppression', targetId: is('blocked@example.com') });
    await expectAudited('DELETE /suppressions/{email}', '/suppressions/blocked@example.com', undefined, { action: 'suppression.removed', targetType: 'suppression', targetId: is('blocked@example.com') });
  });

  it('webhooks: created, updated, secret rotated, tested, a call retried, deleted', async () => {
    const body = { url: 'http://127.0.0.1:1/audited', events: ['webhook.test'] };
    const webhook = await expectAudited('POST /webhooks', '/webhooks', body, { action: 'webhook.created', targetType: 'webhook', targetId: fromBody('id') });
    const path = `/webhooks/${webhook.id}`;
    const target = { targetType: 'webhook', targetId: is(webhook.id) } as const;
    await expectAudited('PATCH /webhooks/{webhookId}', path, { description: 'Audited' }, { action: 'webhook.updated', ...target });
    await expectAudited('POST /webhooks/{webhookId}/rotate-secret', `${path}/rotate-secret`, undefined, { action: 'webhook.secretRotated', ...target });
    const call = await expectAudited('POST /webhooks/{webhookId}/test', `${path}/test`, undefined, { action: 'webhook.tested', ...target });
    // A call is retried once it is no longer PENDING: here as if its attempts had run out, once the
    // sender has recorded its first (refused) attempt, which would otherwise overwrite the status.
    const { db } = server.deps;
    const attempted = () => db.selectFrom('webhook_calls').select(['attempt', 'claimed_by']).where('id', '=', call.id).executeTakeFirstOrThrow();
    await waitFor('the test call attempted once', attempted, (row) => row.attempt >= 1 && row.claimed_by === null);
    await db.updateTable('webhook_calls').set({ status: 'FAILED' }).where('id', '=', call.id).execute();
    await expectAudited('POST /webhooks/{webhookId}/calls/{callId}/retry', `${path}/calls/${call.id}/retry`, undefined, { action: 'webhookCall.retried', targetType: 'webhookCall', targetId: is(call.id) });
    await expectAudited('DELETE /webhooks/{webhookId}', path, undefined, { action: 'webhook.deleted', ...target });
  });

  it('inbound routes: created, updated, deleted', async () => {
    const route = await expectAudited('POST /inbound/routes', '/inbound/routes', { match: `audit@${await team.id('senderDomain')}`, action: 'store' }, { action: 'inboundRoute.created', targetType: 'inboundRoute', targetId: fromBody('id') });
    await expectAudited('PATCH /inbound/routes/{id}', `/inbound/routes/${route.id}`, { action: 'store' }, { action: 'inboundRoute.updated', targetType: 'inboundRoute', targetId: is(route.id) });
    await expectAudited('DELETE /inbound/routes/{id}', `/inbound/routes/${route.id}`, undefined, { action: 'inboundRoute.deleted', targetType: 'inboundRoute', targetId: is(route.id) });
  });

  it('automations: created, updated, deleted; an event is data, even one that brings a new contact', async () => {
    const contactBookId = await team.id('contactBookId');
    const body = { name: 'Audited', trigger: { type: 'event', name: 'signed-up', contactBookId }, steps: [{ type: 'exit' }] };
    const automation = await expectAudited('POST /automations', '/automations', body, { action: 'automation.created', targetType: 'automation', targetId: fromBody('id') });
    const target = { targetType: 'automation', targetId: is(automation.id) } as const;
    await expectAudited('PATCH /automations/{automationId}', `/automations/${automation.id}`, { name: 'Renamed' }, { action: 'automation.updated', ...target });
    await expectUnaudited('POST /events', '/events', { name: 'signed-up', contactBookId, email: 'newcomer@example.com' });
    await expectAudited('DELETE /automations/{automationId}', `/automations/${automation.id}`, undefined, { action: 'automation.deleted', ...target });
  });

  it('every write of the API is among those above', () => {
    const writes = apiRoutes.filter((route) => route.method !== 'get').map(routeName);
    expect(writes.filter((name) => !exercised.has(name))).toEqual([]);
  });
});

describe('a change refused or failed writes no row', () => {
  it('403 (a sending-only key, a key scoped to another domain), 400, 404 and 409 leave the log as it was', async () => {
    const sending = await server.key(team.teamId, 'sending');
    const domainId = Number(await team.id('domainId'));
    const senderDomain = await team.id('senderDomain');
    const scopedTo = (await team.call('GET', '/v1/domains')).body.find((domain: { name: string }) => domain.name === senderDomain).id;
    const scoped = await server.key(team.teamId, 'full', scopedTo);
    secrets.push(sending, scoped);
    const templateUsed = await team.expectOk('POST', '/v1/templates', { name: 'Used', subject: 'Hi', text: 'Hi' });
    await team.expectOk('POST', '/v1/automations', {
      name: 'Uses a template', trigger: { type: 'event', name: 'x', contactBookId: await team.id('contactBookId') },
      steps: [{ type: 'send', templateId: templateUsed.id, from: `hello@${senderDomain}` }],
    });
    const campaignId = await team.id('campaignId');
    const bookId = await team.id('contactBookId');
    const webhookId = await team.id('webhookId');
    // Renamed onto the fixture contact's address: the write that fails is inside the transaction.
    const other = await team.expectOk('POST', `/v1/contactBooks/${bookId}/contacts`, { email: 'other@example.com' });
    const refusals: Array<[number, string, string, unknown, string?]> = [
      [403, 'POST', '/v1/domains', { name: 'refused.example.com' }, sending],
      [403, 'DELETE', `/v1/templates/${templateUsed.id}`, undefined, sending],
      [403, 'PATCH', `/v1/domains/${domainId}`, { openTracking: false }, scoped],
      [403, 'POST', '/v1/suppressions', { email: 'x@example.com' }, scoped],
      [400, 'POST', '/v1/domains', { name: 'not a domain' }],
      [400, 'POST', `/v1/contactBooks/${bookId}/segments`, { name: 'Bad', filter: { all: [{ field: 'campaign', op: 'opened', value: 'absent' }] } }],
      [400, 'POST', '/v1/campaigns', { name: 'Bad', from: 'hello@unknown.example', subject: 'Hi', contactBookId: 'absent', html: '<p>Hi</p>' }],
      [404, 'DELETE', '/v1/templates/absent_000000', undefined],
      [404, 'DELETE', '/v1/webhooks/absent_000000', undefined],
      [404, 'DELETE', '/v1/suppressions/nobody@example.com', undefined],
      [404, 'PATCH', `/v1/contactBooks/${bookId}/contacts/absent_000000`, { firstName: 'X' }],
      [404, 'POST', `/v1/webhooks/${webhookId}/calls/absent_000000/retry`, undefined],
      [409, 'POST', '/v1/domains', { name: senderDomain }],
      [409, 'DELETE', `/v1/templates/${templateUsed.id}`, undefined],
      [409, 'POST', `/v1/campaigns/${campaignId}/resume`, undefined],
      [409, 'POST', `/v1/webhooks/${webhookId}/test`, undefined],
      [409, 'PATCH', `/v1/contactBooks/${bookId}/contacts/${other.contactId}`, { email: `${team.tag}@example.com` }],
    ];
    for (const [status, method, path, body, key] of refusals) {
      const { result: res, rows } = await rowsWritten(team.teamId, () => team.call(method, path, { ...(body === undefined ? {} : { body }), ...(key ? { key } : {}) }));
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status);
      expect(rows, `${method} ${path}`).toEqual([]);
    }
  });

  it('a change whose transaction fails after its audit row was written leaves neither', async () => {
    const doomed = await createTeam(server.deps, { name: 'Doomed' });
    const { apiKey } = await createApiKey(server.deps, { teamId: doomed.teamId, name: 'doomed' });
    // Checked at commit, after every statement of the change: its transaction fails there.
    await sql`CREATE FUNCTION audit_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$`.execute(server.deps.db);
    await sql`CREATE CONSTRAINT TRIGGER audit_test_refuse AFTER INSERT ON audit_log DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.actor_label = 'doomed') EXECUTE FUNCTION audit_test_refuse()`.execute(server.deps.db);
    try {
      const res = await server.call('POST', '/v1/templates', { key: apiKey, body: { name: 'Never', subject: 'Hi', text: 'Hi' } });
      expect(res.status).toBe(500);
      expect((await server.call('GET', '/v1/templates', { key: apiKey })).body.data).toEqual([]);
      expect(await rowsOf(doomed.teamId)).toEqual([]);
    } finally {
      await sql`DROP TRIGGER audit_test_refuse ON audit_log`.execute(server.deps.db);
      await sql`DROP FUNCTION audit_test_refuse()`.execute(server.deps.db);
    }
  });
});

describe('changes made outside the API', () => {
  // As the server runs a command handed to it on its control socket.
  const run = (argv: string[]) => {
    const target: CommandTarget = {
      db: server.deps.db, runner: 'server', publicUrl: server.url, recentKeys: server.deps.recentKeys,
      secret: () => Promise.reject(new Error('no command run here reads the secret')),
    };
    return parseCommand(argv).run(target) as Promise<any>;
  };

  it('the CLI is recorded as the operator: team create, team set-rate-limit, key create, key revoke (in the key\'s own team)', async () => {
    const created = await run(['team', 'create', '--name', 'Operated']);
    secrets.push(created.apiKey);
    const { teamId } = created;
    const rows = await rowsOf(teamId);
    expect(rows.map((row) => [row.action, row.target_type, row.target_id])).toEqual([
      ['team.created', 'team', String(teamId)],
      ['apiKey.created', 'apiKey', created.keyId],
    ]);
    for (const row of rows) {
      expect(row).toMatchObject({ actor_type: 'cli', actor_id: 'cli', ip: null });
      expect(row.actor_label).toMatch(/^cli( \(.+\))?$/);
    }

    const limited = await rowsWritten(teamId, () => run(['team', 'set-rate-limit', '--team', String(teamId), '--per-second', '5']));
    expect(limited.rows).toMatchObject([{ action: 'team.rateLimitChanged', target_type: 'team', target_id: String(teamId), actor_type: 'cli' }]);
    const key = await rowsWritten(teamId, () => run(['key', 'create', '--team', String(teamId), '--name', 'deploy']));
    secrets.push(key.result.apiKey);
    expect(key.rows).toMatchObject([{ action: 'apiKey.created', target_type: 'apiKey', target_id: key.result.id, actor_type: 'cli' }]);
    const revoked = await rowsWritten(teamId, () => run(['key', 'revoke', '--id', key.result.id]));
    expect(revoked.rows).toMatchObject([{ action: 'apiKey.revoked', target_type: 'apiKey', target_id: key.result.id, actor_type: 'cli' }]);
    const again = await rowsWritten(teamId, () => run(['key', 'revoke', '--id', key.result.id]));
    expect(again.rows, 'revoking a revoked key changes nothing').toEqual([]);
  });

  it("the dashboard's key service records the person who made and revoked a key", async () => {
    const person = { teamId: team.teamId, domainId: null, role: 'admin' as const, actor: { type: 'user' as const, id: 'usr_audited', label: 'ada@example.com', ip: '127.0.0.1' } };
    const made = await rowsWritten(team.teamId, () => createTeamApiKey(server.deps, person, { name: 'ci', permission: 'full', domainId: null }));
    secrets.push(made.result.apiKey);
    expect(made.rows).toMatchObject([{ action: 'apiKey.created', target_id: made.result.id, actor_type: 'user', actor_id: 'usr_audited', actor_label: 'ada@example.com', ip: '127.0.0.1' }]);
    const revoked = await rowsWritten(team.teamId, () => revokeTeamApiKey(server.deps, person, { id: made.result.id }));
    expect(revoked.rows).toMatchObject([{ action: 'apiKey.revoked', target_id: made.result.id, actor_type: 'user' }]);
    const viewer = { ...person, role: 'viewer' as const };
    const refused = await rowsWritten(team.teamId, () => createTeamApiKey(server.deps, viewer, { name: 'nope', permission: 'full', domainId: null }).catch((error) => error));
    expect(refused.result.status).toBe(403);
    expect(refused.rows).toEqual([]);
  });
});

it('no row holds a secret: no API key token, no webhook signing secret', async () => {
  const rows = await server.deps.db.selectFrom('audit_log').selectAll().execute();
  expect(rows.length).toBeGreaterThan(40);
  const text = JSON.stringify(rows);
  expect(secrets.length).toBeGreaterThan(6);
  for (const secret of [...secrets, 'whsec_']) expect(text).not.toContain(secret);
});

it('docs/audit-log.md names every action, and no other', async () => {
  const documented = [...(await readFile(new URL('../docs/audit-log.md', import.meta.url), 'utf8')).matchAll(/^\| `(\w+\.\w+)` \|/gm)].map((match) => match[1]);
  expect(documented.sort()).toEqual([...AUDIT_ACTIONS].sort());
});
