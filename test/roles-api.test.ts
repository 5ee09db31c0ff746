import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { apiRoutes } from '../src/api/index.js';
import { accessOf, areaOf } from '../src/http/authorize.js';
import { AREAS } from '../src/people/roles.js';
import { expectRouteError } from './helpers/api-error.js';
import { absentId, fillPath, pathParams, routeName, teamFixture, type TeamFixture } from './helpers/fixtures.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// Roles are for people signed in to the dashboard. API keys are not people: a full key may do
// everything in its team (its scope aside), a sending key only send and read mail.

let server: TestServer;
let team: TeamFixture;

beforeAll(async () => {
  server = await startTestServer();
  team = await teamFixture(server, 'Keys');
});
afterAll(() => server?.stop());

const FUTURE = new Date(Date.now() + 30 * 86_400_000).toISOString();

describe('every API route is in the permission table', () => {
  it('each route names an area of the table, by its tag or by itself', () => {
    for (const route of apiRoutes) expect(AREAS, routeName(route)).toContain(areaOf(route));
  });

  it('a read that shows a secret takes the right to change its area', () => {
    const showingSecrets = apiRoutes.filter((route) => route.method === 'get' && 'secret' in ((route.response as z.ZodObject).shape ?? {}));
    expect(showingSecrets.map(routeName)).toEqual(['GET /webhooks/{webhookId}']);
    for (const route of showingSecrets) expect(accessOf(route), routeName(route)).toBe('change');
  });

  it('a sending key reaches only the /v1/emails routes', () => {
    const sending = apiRoutes.filter((route) => route.permission === 'sending');
    expect(sending.length).toBeGreaterThan(0);
    for (const route of sending) expect(route.path, routeName(route)).toMatch(/^\/emails(\/|$)/);
  });
});

describe('API keys are not people', () => {
  it('a full key still reaches every area of the API: a change in each, and the reads of reports and of the audit log', async () => {
    const domain = await team.id('senderDomain');
    const book = await team.id('contactBookId');
    const hook = await team.expectOk('POST', '/v1/webhooks', { url: `http://127.0.0.1:1/hooks/${team.tag}`, events: ['webhook.test'] });
    const samples: [area: string, method: string, path: string, body?: unknown][] = [
      ['mail', 'POST', '/v1/emails', { from: `hello@${domain}`, to: 'reader@example.org', subject: 'Later', text: 'Hi', scheduledAt: FUTURE }],
      ['audience', 'POST', `/v1/contactBooks/${book}/contacts`, { email: 'reader@example.org' }],
      ['campaigns', 'POST', '/v1/campaigns', { name: 'News', from: `hello@${domain}`, subject: 'News', contactBookId: book, html: '<a href="{{unsubscribeUrl}}">Unsubscribe</a>' }],
      ['templates', 'POST', '/v1/templates', { name: 'Hello', subject: 'Hello', html: '<p>Hello</p>' }],
      ['automations', 'POST', '/v1/automations', { name: 'Welcome', trigger: { type: 'event', name: 'joined', contactBookId: book }, steps: [{ type: 'exit' }] }],
      ['reports', 'GET', '/v1/analytics/reputation-metrics'],
      ['suppressions', 'POST', '/v1/suppressions', { email: 'blocked@example.org' }],
      ['domains', 'POST', '/v1/domains', { name: `added-${team.tag}.example.test` }],
      ['inbound', 'POST', '/v1/inbound/routes', { match: `support@${domain}`, action: 'store' }],
      ['webhooks', 'POST', `/v1/webhooks/${hook.id}/rotate-secret`],
      ['webhooks', 'GET', `/v1/webhooks/${hook.id}`],
      ['audit', 'GET', '/v1/audit-log'],
    ];
    for (const [area, method, path, body] of samples) {
      const res = await team.call(method, path, { body });
      expect(res.status, `${area}: ${method} ${path} → ${JSON.stringify(res.body)}`).toBe(200);
    }
    expect(new Set(samples.map(([area]) => area))).toEqual(new Set(AREAS.filter((area) => area !== 'keys' && area !== 'people')));
  });

  it('a sending key is refused every route but sending with 403 FORBIDDEN, in the error shape of the route', async () => {
    const sendingKey = await server.key(team.teamId, 'sending');
    for (const route of apiRoutes.filter((each) => each.permission !== 'sending')) {
      const params = Object.fromEntries(pathParams(route).map((name) => [name, absentId(route, name)]));
      const res = await server.call(route.method.toUpperCase(), fillPath(route, params), { key: sendingKey, body: route.body ? {} : undefined });
      expectRouteError(route, res, 403, 'FORBIDDEN', routeName(route));
    }
    const sent = await server.call('POST', '/v1/emails', {
      key: sendingKey,
      body: { from: `hello@${await team.id('senderDomain')}`, to: 'reader@example.org', subject: 'Later', text: 'Hi', scheduledAt: FUTURE },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  });
});
