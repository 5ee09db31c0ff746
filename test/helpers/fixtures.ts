import { z } from 'zod';
import { apiRoutes } from '../../src/api/index.js';
import type { RouteDef } from '../../src/http/route.js';
import { findRoute } from '../../src/data/inbound-routes.js';
import { insertCall } from '../../src/data/webhook-calls.js';
import { receive } from '../../src/inbound/receive.js';
import { newId } from '../../src/ids.js';
import { verifiedDomain } from './domains.js';
import type { CallOptions, CallResult, TestServer } from './server.js';

type Ids = (name: string) => Promise<string>;

/** Whose resources a request names: a team's (see TeamFixture), or nobody's (absentResources). */
export type ResourceOwner = { id: Ids };

/**
 * How to create one real resource of a team, keyed by the path parameter that names it (see
 * resourceOf). A new resource is one line here; every generic test then reaches its endpoints with
 * real ids.
 */
const resources: Record<string, (team: TeamFixture, server: TestServer) => Promise<string>> = {
  contactBookId: async (team) => (await team.expectOk('POST', '/v1/contactBooks', { name: `Book ${team.tag}` })).id,
  contactId: async (team) =>
    (await team.expectOk('POST', `/v1/contactBooks/${await team.id('contactBookId')}/contacts`, { email: `${team.tag}@example.com` }))
      .contactId,
  segmentId: async (team) =>
    (await team.expectOk('POST', `/v1/contactBooks/${await team.id('contactBookId')}/segments`, {
      name: `Segment ${team.tag}`, filter: { all: [{ field: 'email', op: 'contains', value: team.tag }] },
    })).id,
  domainId: async (team) => String((await team.expectOk('POST', '/v1/domains', { name: `${team.tag}.example.com` })).id),
  senderDomain: async (team, server) => (await verifiedDomain(server, team.apiKey, `send-${team.tag}.example.com`)).name,
  emailId: async (team) => (await team.expectOk('POST', '/v1/emails', { ...(await sampleEmail(team)), scheduledAt: FAR_FUTURE })).emailId,
  email: async (team) => (await team.expectOk('POST', '/v1/suppressions', { email: `${team.tag}@example.com` })).email,
  templateId: async (team) => (await team.expectOk('POST', '/v1/templates', sampleTemplate(team.tag))).id,
  // Its own book, so scheduling it never keeps the team's contactBookId from being deleted.
  campaignId: async (team) =>
    (await team.expectOk('POST', '/v1/campaigns', await sampleCampaign(team, (await team.expectOk('POST', '/v1/contactBooks', { name: `Campaigns ${team.tag}` })).id))).id,
  // Its own book, like a campaign's; it waits and sends nothing, and names no template (which it would keep from being deleted).
  automationId: async (team) =>
    (await team.expectOk('POST', '/v1/automations', {
      name: `Automation ${team.tag}`, status: 'ACTIVE',
      trigger: { type: 'event', name: 'sample', contactBookId: (await team.expectOk('POST', '/v1/contactBooks', { name: `Automations ${team.tag}` })).id },
      steps: [{ type: 'wait', duration: '30 days' }, { type: 'exit' }],
    })).id,
  // Paused as soon as it is made, and hearing only tests until then: it gets no calls, and the
  // sender (which calls only ACTIVE webhooks) leaves its call log as the tests see it.
  webhookId: async (team) => {
    const webhook = await team.expectOk('POST', '/v1/webhooks', { ...sampleWebhook(team.tag), description: `Webhook ${team.tag}` });
    await team.expectOk('PATCH', `/v1/webhooks/${webhook.id}`, { status: 'PAUSED' });
    return webhook.id;
  },
  inboundRouteId: async (team) =>
    (await team.expectOk('POST', '/v1/inbound/routes', { match: `support@${await team.id('senderDomain')}`, action: 'store' })).id,
  inboundEmailId: (team, server) => receivedSample(team, server),
  attachmentId: async (team) => (await team.expectOk('GET', `/v1/inbound/emails/${await team.id('inboundEmailId')}`)).attachments[0].id,
  // A test call as POST …/test makes one; written here since a paused webhook takes no test.
  callId: async (team, server) => {
    const webhookId = await team.id('webhookId');
    const data = { webhookId, message: `Sample call ${team.tag}` };
    return (await insertCall(server.deps.db, { teamId: team.teamId, webhookId, type: 'webhook.test', subjectKey: null, data }, new Date())).id;
  },
};

/**
 * A message with one attachment, taken by the team's route as the inbound listener takes mail
 * once its recipients are claimed (the listener itself is tested in inbound.test.ts).
 */
async function receivedSample(team: TeamFixture, server: TestServer): Promise<string> {
  const route = (await findRoute(server.deps.db, team.teamId, await team.id('inboundRouteId')))!;
  const raw = [
    `From: Ann <ann-${team.tag}@example.org>`, `To: ${route.match}`, `Subject: Received ${team.tag}`, 'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="sample"', '', '--sample', 'Content-Type: text/plain', '', `Hello ${team.tag}`,
    '--sample', 'Content-Type: text/csv', 'Content-Disposition: attachment; filename="sample.csv"', '', `tag\r\n${team.tag}`, '--sample--', '',
  ].join('\r\n');
  const none = { result: 'none' };
  const [stored] = await receive(
    server.deps,
    { raw: Buffer.from(raw), from: `ann-${team.tag}@example.org`, clientAddress: '127.0.0.1', helo: 'mail.example.org', receivedAt: new Date() },
    [{ route, recipients: [route.match] }],
    { spf: none, dkim: none, dmarc: none },
  );
  return stored!.id;
}

// Kept SCHEDULED for the whole run, so the team's data stays as the tests left it.
const FAR_FUTURE = new Date(Date.now() + 30 * 86_400_000).toISOString();
const sampleEmail = async (team: { id: Ids }) =>
  ({ from: `Sample <hello@${await team.id('senderDomain')}>`, to: 'reader@example.com', subject: 'Sample', html: '<p>Hi</p>' });

const sampleTemplate = (tag: string) => ({ name: `Template ${tag}`, subject: 'Hello {{firstName,fallback=there}}', html: '<p>Hi {{firstName}}</p>' });

// Port 1 of loopback (allowed by the test servers' WEBHOOK_ALLOWED_HOSTS) refuses every connection.
const sampleWebhook = (tag: string) => ({ url: `http://127.0.0.1:1/webhooks/${tag}`, events: ['webhook.test'], description: 'Sample webhook' });

const sampleCampaign = async (team: { id: Ids }, contactBookId: string) => ({
  name: 'Sample campaign', from: `hello@${await team.id('senderDomain')}`, subject: 'Hello {{firstName}}', contactBookId,
  html: '<p>Hi</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>',
});

/**
 * A body each endpoint accepts, for those whose body schema refuses `{}` or where `{}` would be a
 * no-op; `ids` names the calling team's resources.
 */
const sampleBodies: Record<string, (ids: Ids) => unknown> = {
  'POST /contactBooks': () => ({ name: 'Sample book' }),
  'PATCH /contactBooks/{contactBookId}': () => ({ name: 'Renamed book' }),
  'POST /contactBooks/{contactBookId}/contacts': () => ({ email: 'sample@example.com', firstName: 'Sam' }),
  'PUT /contactBooks/{contactBookId}/contacts/{contactId}': () => ({ email: 'upserted@example.com', firstName: 'Una' }),
  'PATCH /contactBooks/{contactBookId}/contacts/{contactId}': () => ({ firstName: 'Renamed' }),
  'POST /contactBooks/{contactBookId}/contacts/bulk': () => [{ email: 'bulk@example.com' }],
  'DELETE /contactBooks/{contactBookId}/contacts/bulk': async (ids) => ({ contactIds: [await ids('contactId')] }),
  'POST /domains': () => ({ name: 'sample.example.com' }),
  'PATCH /domains/{id}': () => ({ openTracking: true, clickTracking: true }),
  'POST /emails': (ids) => sampleEmail({ id: ids }),
  'POST /emails/batch': async (ids) => [await sampleEmail({ id: ids })],
  'PATCH /emails/{emailId}': () => ({ scheduledAt: FAR_FUTURE }),
  'POST /suppressions': () => ({ email: 'blocked@example.com' }),
  'POST /templates': () => sampleTemplate('sample'),
  'PATCH /templates/{templateId}': () => ({ name: 'Renamed template' }),
  'POST /campaigns': async (ids) => sampleCampaign({ id: ids }, await ids('contactBookId')),
  'POST /campaigns/{campaignId}/schedule': () => ({ scheduledAt: FAR_FUTURE }),
  'POST /webhooks': () => sampleWebhook('sample'),
  'PATCH /webhooks/{webhookId}': () => ({ description: 'Renamed webhook' }),
  'POST /contactBooks/{contactBookId}/segments': () => ({ name: 'Sample segment', filter: { all: [{ field: 'subscribed', op: 'eq', value: true }] } }),
  'PATCH /contactBooks/{contactBookId}/segments/{segmentId}': () => ({ name: 'Renamed segment' }),
  'POST /automations': async (ids) => ({ name: 'Sample automation', trigger: { type: 'event', name: 'sample', contactBookId: await ids('contactBookId') }, steps: [{ type: 'exit' }] }),
  'PATCH /automations/{automationId}': () => ({ name: 'Renamed automation' }),
  'POST /events': async (ids) => ({ name: 'sample', contactBookId: await ids('contactBookId'), contactId: await ids('contactId') }),
  'POST /inbound/routes': async (ids) => ({ match: `sample@${await ids('senderDomain')}`, action: 'store' }),
  'PATCH /inbound/routes/{id}': () => ({ action: 'store' }),
};

/**
 * Path parameters that name a place within their parent (an attachment's place in its message),
 * alike in every team's: the parent's id is the one that must be the caller's.
 */
export const POSITIONAL_PARAMS = new Set(['attachmentId']);

/** Ids nothing ever gets, in each shape a path parameter takes (integer, opaque string). */
const ABSENT_IDS = ['2147480000', 'absent_00000000000000000000'];

/**
 * Writes that name resources in fields the samples leave out (a sample that did would change what
 * the other generic tests do): each is sent on its own, like a sample body.
 */
const referencingBodies: Record<string, (ids: Ids) => Promise<unknown>> = {
  'PATCH /contactBooks/{contactBookId}': async (ids) => ({ doubleOptInEnabled: true, doubleOptInFrom: `Lists <lists@${await ids('senderDomain')}>` }),
  'POST /contactBooks': async (ids) => ({ name: 'Opt-in book', doubleOptInEnabled: true, doubleOptInFrom: `lists@${await ids('senderDomain')}` }),
  'POST /campaigns': async (ids) => ({ ...(await sampleCampaign({ id: ids }, await ids('contactBookId'))), segmentId: await ids('segmentId') }),
};

/** Resources nobody has, one of each kind a request may name: what "missing" looks like. */
export const absentResources: ResourceOwner = {
  id: async (resource) => {
    if (resource === 'senderDomain') return 'send-absent.example.com';
    if (resource === 'email') return 'absent@example.com';
    if (resource === 'domainId') return ABSENT_IDS[0]!;
    return ABSENT_IDS[1]!;
  },
};

/** A write whose body names resources: the route, and its body naming those of `owner`. */
export type ReferencingWrite = { route: RouteDef; names: string[]; body(owner: ResourceOwner): Promise<unknown> };

/** Every write whose body names resources of the team (its sample body, and the ones above), with the names. */
export async function referencingWrites(): Promise<ReferencingWrite[]> {
  const writes: ReferencingWrite[] = [];
  for (const route of bodyRoutes) {
    for (const build of [sampleBodies[routeName(route)], referencingBodies[routeName(route)]]) {
      if (!build) continue;
      const names = new Set<string>();
      await build((resource) => (names.add(resource), absentResources.id(resource)));
      if (names.size > 0) writes.push({ route, names: [...names], body: (owner) => Promise.resolve(build((resource) => owner.id(resource))) });
    }
  }
  return writes;
}

export const routeName = (route: RouteDef) => `${route.method.toUpperCase()} ${route.path}`;

export const pathParams = (route: RouteDef) => [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

/**
 * The resource a path parameter names: itself, or for a bare `{id}` its collection's, named by
 * the path's words before it (`/domains/{id}`: domainId, `/inbound/routes/{id}`: inboundRouteId).
 */
export function resourceOf(route: RouteDef, name: string): string {
  if (name !== 'id') return name;
  const words = /((?:\/\w+)+)\/\{id\}/.exec(route.path)![1]!.split('/').slice(1);
  return `${words.map((word, index) => (index === 0 ? word : word[0]!.toUpperCase() + word.slice(1))).join('').replace(/s$/, '')}Id`;
}

/** Routes whose handler is reached only with a body, and those whose path names resources. */
export const bodyRoutes = apiRoutes.filter((route) => route.body);
export const routesWithParams = apiRoutes.filter((route) => pathParams(route).length > 0);

/** An id of the shape this route's parameter takes that no resource has. */
export function absentId(route: RouteDef, name: string): string {
  const schema = route.params?.shape[name] as z.ZodType | undefined;
  const id = ABSENT_IDS.find((candidate) => !schema || schema.safeParse(candidate).success);
  if (!id) throw new Error(`${routeName(route)}: no absent id fits parameter ${name}; add its shape to ABSENT_IDS`);
  return id;
}

export function fillPath(route: RouteDef, values: Record<string, string>, prefix = '/v1'): string {
  return prefix + route.path.replace(/\{(\w+)\}/g, (_m, name: string) => encodeURIComponent(values[name]!));
}

export type TeamFixture = {
  teamId: number;
  apiKey: string;
  /** Unique to this team; every fixture it creates carries it, so it shows where its data leaks. */
  tag: string;
  /** Calls the API with this team's key unless the options name another. */
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  expectOk(method: string, path: string, body?: unknown): Promise<any>;
  /** The team's resource named by this path parameter, created on first use. */
  id(name: string): Promise<string>;
  /** Every path parameter of the route: the team's own resource, or an absent id where none exists. */
  params(route: RouteDef): Promise<Record<string, string>>;
  path(route: RouteDef, prefix?: string): Promise<string>;
  /** A request body the route accepts, naming the resources of `owner` (this team by default). */
  body(route: RouteDef, owner?: ResourceOwner): Promise<unknown>;
  /** Creates every resource any endpoint's sample request names, so later calls create none. */
  ready(): Promise<void>;
  /** Every resource id this team's fixtures created so far (positional ones aside). */
  createdIds(): Promise<string[]>;
  /** The same, each with the path parameter that names its kind (`domainId`, `contactId`…). */
  created(): Promise<[string, string][]>;
};

export async function teamFixture(server: TestServer, name = 'Team'): Promise<TeamFixture> {
  const tag = `t${newId(10).toLowerCase()}`;
  const { teamId, apiKey } = await server.team(`${name} ${tag}`);
  const created = new Map<string, Promise<string>>();
  const team: TeamFixture = {
    teamId,
    apiKey,
    tag,
    call: (method, path, options = {}) => server.call(method, path, { key: apiKey, ...options }),
    async expectOk(method, path, body) {
      const res = await team.call(method, path, { body });
      if (res.status !== 200) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body;
    },
    id(resource) {
      const make = resources[resource];
      if (!make) throw new Error(`No fixture creates a ${resource}; add one to resources in test/helpers/fixtures.ts`);
      let id = created.get(resource);
      if (!id) {
        id = make(team, server);
        created.set(resource, id);
      }
      return id;
    },
    async params(route) {
      const values: Record<string, string> = {};
      for (const name of pathParams(route)) {
        const resource = resourceOf(route, name);
        values[name] = resources[resource] ? await team.id(resource) : absentId(route, name);
      }
      return values;
    },
    async path(route, prefix) {
      return fillPath(route, await team.params(route), prefix);
    },
    async body(route, owner = team) {
      if (!route.body) return undefined;
      const sample = sampleBodies[routeName(route)];
      return sample ? sample((resource) => owner.id(resource)) : {};
    },
    async ready() {
      for (const route of apiRoutes) {
        await team.params(route);
        await team.body(route);
      }
    },
    createdIds: async () => (await team.created()).map(([, id]) => id),
    created: () =>
      Promise.all([...created].filter(([resource]) => !POSITIONAL_PARAMS.has(resource)).map(async ([resource, id]): Promise<[string, string]> => [resource, await id])),
  };
  return team;
}

/** Sends the route's sample request as this team, at its own resources. */
export async function callRoute(team: TeamFixture, route: RouteDef, options: CallOptions & { prefix?: string } = {}) {
  const { prefix, ...rest } = options;
  const body = 'body' in rest || 'rawBody' in rest ? undefined : await team.body(route);
  return team.call(route.method.toUpperCase(), await team.path(route, prefix), { ...(body === undefined ? {} : { body }), ...rest });
}

/** Everything the team can read through the API: every GET endpoint at its own resources. */
export async function snapshot(team: TeamFixture) {
  await team.ready();
  const reads = apiRoutes.filter((route) => route.method === 'get');
  const views = await Promise.all(
    reads.map(async (route) => {
      const path = await team.path(route);
      const res = await team.call('GET', path);
      return [path, { status: res.status, body: res.body }] as const;
    }),
  );
  return Object.fromEntries(views);
}
