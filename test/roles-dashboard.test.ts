import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardPages } from '../src/dashboard/index.js';
import { csrfTokenFor, CSRF_FIELD, CSRF_HEADER, SESSION_COOKIE } from '../src/dashboard/session.js';
import type { Role } from '../src/people/caller.js';
import { createApiKey, listApiKeys } from '../src/services/api-keys.js';
import { invitePerson } from './helpers/browser.js';
import { createDomain, startServerWithDns, verifiedDomain } from './helpers/domains.js';
import { expectOk, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';

// What each role may do in the dashboard, as promises: every change a role may not make is
// refused (403, naming the role it takes) when its form is posted anyway, with a valid CSRF token
// of the person's own session, as if its hidden button had been there; and nothing changed, as
// read back through the API with a full key. The page a change is made on hides its control
// from a role that may not make it, and a page that is only that change's form is refused too.

/** Most rights first: the order the promises below are stated in, written out here rather than read from the code they test. */
const RANKED: Role[] = ['owner', 'admin', 'member', 'viewer'];
const mayAct = (role: Role, least: Role) => RANKED.indexOf(role) <= RANKED.indexOf(least);

const PASSWORD = 'roles are kept everywhere';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const FUTURE = new Date(Date.now() + 30 * 86_400_000).toISOString();
const UNSUBSCRIBE = '<p>News</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>';
const SUBSCRIBED = JSON.stringify({ all: [{ field: 'subscribed', op: 'eq', value: true }] });

let server: TestServer;
let stop: () => Promise<void>;
let teamId: number;
let key: string;
let sender: string;
let receiver: WebhookReceiver;
const people = new Map<Role, Person>();

type Person = { role: Role; userId: string; cookie: string; csrf: string };
type Sent = { status: number; text: string };

let unique = 0;
const tag = () => `r${Date.now().toString(36)}${(unique++).toString(36)}`;

/** A person of the team with this role: invited as the operator's CLI does, then choosing a password on the invite's page. */
async function signedIn(role: Role): Promise<Person> {
  const invite = await invitePerson(server, teamId, `${role}-${tag()}@roles.test`, role);
  const res = await fetch(invite.inviteUrl, { method: 'POST', redirect: 'manual', headers: FORM, body: new URLSearchParams({ password: PASSWORD, confirm: PASSWORD }) });
  expect(res.status, `accepting the ${role}'s invite`).toBe(303);
  const token = new RegExp(`${SESSION_COOKIE}=([^;]+)`).exec(res.headers.getSetCookie().join('\n'))![1]!;
  return { role, userId: invite.userId, cookie: `${SESSION_COOKIE}=${token}`, csrf: csrfTokenFor(token) };
}

async function send(person: Person, path: string, init: RequestInit = {}): Promise<Sent> {
  const res = await fetch(server.url + path, { ...init, redirect: 'manual', headers: { cookie: person.cookie, connection: 'close', ...init.headers } });
  return { status: res.status, text: await res.text() };
}

/** A typed URL. */
const open = (person: Person, path: string) => send(person, path);
/** A form posted straight to its URL, with the session's CSRF token. */
const post = (person: Person, path: string, fields: Record<string, string> = {}) =>
  send(person, path, { method: 'POST', headers: FORM, body: new URLSearchParams({ ...fields, [CSRF_FIELD]: person.csrf }) });
/** A file sent as the CSV import sends it: the raw body, the token in a header. */
const upload = (person: Person, path: string, csv: string) =>
  send(person, path, { method: 'POST', headers: { 'content-type': 'text/csv', [CSRF_HEADER]: person.csrf }, body: csv });

const api = (method: string, path: string, body?: unknown) => expectOk(server, key, method, `/v1${path}`, body);

/** A 403 that says whose role could not, and which role it takes. */
function expectRefused(sent: Sent, role: Role, least: Role) {
  expect(sent.status, sent.text.slice(0, 500)).toBe(403);
  expect(sent.text).toContain(`Your role (${role}) cannot`);
  expect(sent.text).toContain(`the ${least} role or higher`);
}

type Fixture = Record<string, string>;
type Action = {
  /** What the person does, as the promise says it. */
  does: string;
  /** The least role that may. */
  least: Role;
  /** The dashboard route it posts to, as the pages declare it. */
  route: string;
  setup?: () => Promise<Fixture>;
  /** A page that is only this change's form, reached by typing its URL. */
  page?: (f: Fixture) => string;
  /** The page the change is offered on, and the mark of its control there. */
  control?: (f: Fixture) => { on: string; mark: string };
  send: (person: Person, f: Fixture) => Promise<Sent>;
  /** What the change changes, read back through the API with a full key (or the database). */
  state: (f: Fixture) => Promise<unknown>;
};

const book = async () => ({ book: (await api('POST', '/contactBooks', { name: `Book ${tag()}` })).id as string });
const contactsOf = async (f: Fixture) => (await api('GET', `/contactBooks/${f.book}/contacts`)).map((contact: { email: string }) => contact.email);
const webhook = async (url = `http://127.0.0.1:1/hooks/${tag()}`) => {
  const made = await api('POST', '/webhooks', { url, events: ['webhook.test'] });
  return { id: made.id as string, url: made.url as string };
};
const webhookOf = async (f: Fixture) => (await api('GET', '/webhooks?limit=100')).data.find((each: { id: string }) => each.id === f.id);
const suppressed = async (f: Fixture) => (await api('GET', '/suppressions?limit=100')).data.some((s: { email: string }) => s.email === f.email);
const routesOf = async () => (await api('GET', '/inbound/routes')).data as { id: string; match: string }[];
const statusOf = async (path: string) => (await server.call('GET', `/v1${path}`, { key })).status;

const ACTIONS: Action[] = [
  {
    does: 'cancel a scheduled email',
    least: 'member',
    route: '/emails/:id/cancel',
    setup: async () => ({ id: (await api('POST', '/emails', { from: sender, to: 'reader@example.org', subject: 'Later', text: 'Hi', scheduledAt: FUTURE })).emailId }),
    control: (f) => ({ on: `/emails/${f.id}`, mark: `action="/emails/${f.id}/cancel"` }),
    send: (p, f) => post(p, `/emails/${f.id}/cancel`),
    state: async (f) => (await api('GET', `/emails/${f.id}`)).latestStatus,
  },
  {
    does: 'add a contact',
    least: 'member',
    route: '/contacts/:bookId/new',
    setup: book,
    page: (f) => `/contacts/${f.book}/new`,
    control: (f) => ({ on: `/contacts/${f.book}`, mark: `href="/contacts/${f.book}/new"` }),
    send: (p, f) => post(p, `/contacts/${f.book}/new`, { email: 'added@example.org', subscribed: 'true' }),
    state: contactsOf,
  },
  {
    does: 'import contacts from a CSV file',
    least: 'member',
    route: '/contacts/:bookId/import',
    setup: book,
    page: (f) => `/contacts/${f.book}/import`,
    control: (f) => ({ on: `/contacts/${f.book}`, mark: `href="/contacts/${f.book}/import"` }),
    send: (p, f) => upload(p, `/contacts/${f.book}/import`, 'email,first_name\nimported@example.org,Ida\n'),
    state: contactsOf,
  },
  {
    does: 'make a segment',
    least: 'member',
    route: '/contacts/:bookId/segments/new',
    setup: book,
    page: (f) => `/contacts/${f.book}/segments/new`,
    control: (f) => ({ on: `/contacts/${f.book}/segments`, mark: `href="/contacts/${f.book}/segments/new"` }),
    send: (p, f) => post(p, `/contacts/${f.book}/segments/new`, { name: 'Subscribed', filter: SUBSCRIBED }),
    state: async (f) => (await api('GET', `/contactBooks/${f.book}/segments`)).data.map((segment: { name: string }) => segment.name),
  },
  {
    does: 'make a campaign',
    least: 'member',
    route: '/campaigns/new',
    setup: async () => ({ ...(await book()), name: `News ${tag()}` }),
    page: () => '/campaigns/new',
    control: () => ({ on: '/campaigns', mark: 'href="/campaigns/new"' }),
    send: (p, f) => post(p, '/campaigns/new', { name: f.name!, from: sender, contactBookId: f.book!, subject: 'News', html: UNSUBSCRIBE, when: 'draft' }),
    state: async (f) => (await api('GET', `/campaigns?search=${encodeURIComponent(f.name!)}`)).campaigns.length,
  },
  {
    does: 'delete a campaign',
    least: 'member',
    route: '/campaigns/:id/delete',
    setup: async () => {
      const { book: contactBookId } = await book();
      return { id: (await api('POST', '/campaigns', { name: 'Old news', from: sender, subject: 'News', contactBookId, html: UNSUBSCRIBE })).id };
    },
    control: (f) => ({ on: `/campaigns/${f.id}`, mark: `action="/campaigns/${f.id}/delete"` }),
    send: (p, f) => post(p, `/campaigns/${f.id}/delete`),
    state: (f) => statusOf(`/campaigns/${f.id}`),
  },
  {
    does: 'make a template',
    least: 'member',
    route: '/templates/new',
    setup: async () => ({ name: `Template ${tag()}` }),
    page: () => '/templates/new',
    control: () => ({ on: '/templates', mark: 'href="/templates/new"' }),
    send: (p, f) => post(p, '/templates/new', { name: f.name!, subject: 'Hello', html: '<p>Hello</p>' }),
    state: async (f) => (await api('GET', '/templates?limit=100')).data.some((template: { name: string }) => template.name === f.name),
  },
  {
    does: 'change a template',
    least: 'member',
    route: '/templates/:id',
    setup: async () => ({ id: (await api('POST', '/templates', { name: `Template ${tag()}`, subject: 'Hello', html: '<p>Hello</p>' })).id }),
    control: (f) => ({ on: `/templates/${f.id}`, mark: `action="/templates/${f.id}"` }),
    send: (p, f) => post(p, `/templates/${f.id}`, { name: 'Renamed', subject: 'Hello', html: '<p>Hello</p>' }),
    state: async (f) => (await api('GET', `/templates/${f.id}`)).name,
  },
  {
    does: 'make an automation',
    least: 'member',
    route: '/automations/new',
    setup: book,
    page: () => '/automations/new',
    control: () => ({ on: '/automations', mark: 'href="/automations/new"' }),
    send: (p, f) => post(p, '/automations/new', { name: 'Welcome', contactBookId: f.book!, triggerType: 'contact.added' }),
    state: async (f) => (await api('GET', '/automations')).data.filter((each: { trigger: { contactBookId: string } }) => each.trigger.contactBookId === f.book).length,
  },
  {
    does: 'activate an automation',
    least: 'member',
    route: '/automations/:id/status',
    setup: async () => {
      const trigger = { type: 'event', name: 'signed.up', contactBookId: (await book()).book };
      return { id: (await api('POST', '/automations', { name: 'Welcome', trigger, steps: [{ type: 'wait', duration: '1 day' }] })).id };
    },
    control: (f) => ({ on: `/automations/${f.id}`, mark: `action="/automations/${f.id}/status"` }),
    send: (p, f) => post(p, `/automations/${f.id}/status`, { status: 'ACTIVE' }),
    state: async (f) => (await api('GET', `/automations/${f.id}`)).status,
  },
  {
    does: 'suppress an address',
    least: 'admin',
    route: '/suppressions',
    setup: async () => ({ email: `${tag()}@example.org` }),
    control: () => ({ on: '/suppressions', mark: 'action="/suppressions"' }),
    send: (p, f) => post(p, '/suppressions', { email: f.email! }),
    state: suppressed,
  },
  {
    does: 'lift a suppression',
    least: 'admin',
    route: '/suppressions/remove',
    setup: async () => ({ email: (await api('POST', '/suppressions', { email: `${tag()}@example.org` })).email }),
    control: () => ({ on: '/suppressions', mark: 'action="/suppressions/remove"' }),
    send: (p, f) => post(p, '/suppressions/remove', { email: f.email! }),
    state: suppressed,
  },
  {
    does: 'add a domain',
    least: 'admin',
    route: '/domains',
    setup: async () => ({ name: `${tag()}.example.test` }),
    control: () => ({ on: '/domains', mark: 'action="/domains"' }),
    send: (p, f) => post(p, '/domains', { name: f.name! }),
    state: async (f) => (await api('GET', '/domains')).some((domain: { name: string }) => domain.name === f.name),
  },
  {
    does: 'verify a domain',
    least: 'admin',
    route: '/domains/:id/verify',
    setup: async () => ({ id: String((await createDomain(server, key, `${tag()}.example.test`)).id) }),
    control: (f) => ({ on: `/domains/${f.id}`, mark: `action="/domains/${f.id}/verify"` }),
    send: (p, f) => post(p, `/domains/${f.id}/verify`),
    // Set by a request to verify alone; the checks it starts leave it as it is.
    state: async (f) =>
      (await server.deps.db.selectFrom('domains').select('verification_started_at').where('id', '=', Number(f.id)).executeTakeFirstOrThrow()).verification_started_at?.getTime(),
  },
  {
    does: "change a domain's tracking",
    least: 'admin',
    route: '/domains/:id/tracking',
    setup: async () => ({ id: String((await createDomain(server, key, `${tag()}.example.test`)).id) }),
    control: (f) => ({ on: `/domains/${f.id}`, mark: `action="/domains/${f.id}/tracking"` }),
    send: (p, f) => post(p, `/domains/${f.id}/tracking`, { openTracking: 'on', clickTracking: 'on' }),
    state: async (f) => (await api('GET', `/domains/${f.id}`)).openTracking,
  },
  {
    does: 'delete a domain',
    least: 'admin',
    route: '/domains/:id/delete',
    setup: async () => ({ id: String((await createDomain(server, key, `${tag()}.example.test`)).id) }),
    control: (f) => ({ on: `/domains/${f.id}`, mark: `action="/domains/${f.id}/delete"` }),
    send: (p, f) => post(p, `/domains/${f.id}/delete`),
    state: (f) => statusOf(`/domains/${f.id}`),
  },
  {
    does: 'add an inbound route',
    least: 'admin',
    route: '/inbound',
    setup: async () => ({ match: `${tag()}@roles.example.test` }),
    control: () => ({ on: '/inbound', mark: 'method="post" action="/inbound"' }),
    send: (p, f) => post(p, '/inbound', { match: f.match!, action: 'store' }),
    state: async (f) => (await routesOf()).some((route) => route.match === f.match),
  },
  {
    does: 'delete an inbound route',
    least: 'admin',
    route: '/inbound/routes/:id/delete',
    setup: async () => ({ id: (await api('POST', '/inbound/routes', { match: `${tag()}@roles.example.test`, action: 'store' })).id }),
    control: (f) => ({ on: '/inbound', mark: `action="/inbound/routes/${f.id}/delete"` }),
    send: (p, f) => post(p, `/inbound/routes/${f.id}/delete`),
    state: async (f) => (await routesOf()).some((route) => route.id === f.id),
  },
  {
    does: 'make a webhook',
    least: 'admin',
    route: '/webhooks',
    setup: async () => ({ url: `http://127.0.0.1:1/hooks/${tag()}` }),
    page: () => '/webhooks/new',
    control: () => ({ on: '/webhooks', mark: 'href="/webhooks/new"' }),
    send: (p, f) => post(p, '/webhooks', { url: f.url!, events: 'webhook.test' }),
    state: async (f) => (await api('GET', '/webhooks?limit=100')).data.some((each: { url: string }) => each.url === f.url),
  },
  {
    does: 'change a webhook',
    least: 'admin',
    route: '/webhooks/:id/edit',
    setup: () => webhook(),
    page: (f) => `/webhooks/${f.id}/edit`,
    control: (f) => ({ on: `/webhooks/${f.id}`, mark: `href="/webhooks/${f.id}/edit"` }),
    send: (p, f) => post(p, `/webhooks/${f.id}/edit`, { url: f.url!, description: 'Renamed', events: 'webhook.test' }),
    state: async (f) => (await webhookOf(f)).description,
  },
  {
    does: "rotate a webhook's signing secret",
    least: 'admin',
    route: '/webhooks/:id/rotate-secret',
    setup: () => webhook(),
    control: (f) => ({ on: `/webhooks/${f.id}`, mark: `action="/webhooks/${f.id}/rotate-secret"` }),
    send: (p, f) => post(p, `/webhooks/${f.id}/rotate-secret`),
    state: async (f) => (await api('GET', `/webhooks/${f.id}`)).secret,
  },
  {
    does: 'retry a webhook call',
    least: 'admin',
    route: '/webhooks/:id/calls/:callId/retry',
    // The receiver answers 410 Gone, which fails a test call at its first attempt.
    setup: async () => {
      const { id } = await webhook(receiver.url);
      const call = await api('POST', `/webhooks/${id}/test`);
      await waitFor('the test call made', () => api('GET', `/webhooks/${id}/calls/${call.id}`), (read) => read.status !== 'PENDING');
      return { id, call: call.id };
    },
    control: (f) => ({ on: `/webhooks/${f.id}/calls/${f.call}`, mark: `action="/webhooks/${f.id}/calls/${f.call}/retry"` }),
    send: (p, f) => post(p, `/webhooks/${f.id}/calls/${f.call}/retry`),
    // Retried, it is PENDING again, or already made once more.
    state: async (f) => {
      const call = await api('GET', `/webhooks/${f.id}/calls/${f.call}`);
      return { status: call.status, attempt: call.attempt };
    },
  },
  {
    does: 'make an API key',
    least: 'admin',
    route: '/api-keys',
    setup: async () => ({ name: `Key ${tag()}` }),
    control: () => ({ on: '/api-keys', mark: 'action="/api-keys"' }),
    send: (p, f) => post(p, '/api-keys', { name: f.name!, permission: 'full' }),
    state: async (f) => (await listApiKeys(server.deps, { teamId })).some((each) => each.name === f.name),
  },
  {
    does: 'revoke an API key',
    least: 'admin',
    route: '/api-keys/:id/revoke',
    setup: async () => {
      const made = await createApiKey(server.deps, { teamId, name: `Key ${tag()}` });
      return { id: made.id, token: made.apiKey };
    },
    control: (f) => ({ on: '/api-keys', mark: `action="/api-keys/${f.id}/revoke"` }),
    send: (p, f) => post(p, `/api-keys/${f.id}/revoke`),
    state: async (f) => (await server.call('GET', '/v1/domains', { key: f.token })).status,
  },
];

/** Pages that are reads, but only for some roles; `nav` is their entry in the navigation. */
const READS: { sees: string; least: Role; page: string; nav: string }[] = [
  { sees: 'the API keys', least: 'admin', page: '/api-keys', nav: 'API keys' },
  { sees: 'the audit log', least: 'admin', page: '/audit-log', nav: 'Audit log' },
];

beforeAll(async () => {
  ({ server, teamId, key, stop } = await startServerWithDns({ WEBHOOK_POLL_MS: '20' }));
  receiver = await startWebhookReceiver({ answer: () => ({ status: 410 }) });
  const domain = await verifiedDomain(server, key, 'roles.example.test');
  sender = `Roles <hello@${domain.name}>`;
  for (const role of RANKED) people.set(role, await signedIn(role));
});
afterAll(async () => {
  await receiver?.close();
  await stop?.();
});

describe.each(RANKED)('a signed-in %s', (role) => {
  const person = () => people.get(role)!;

  for (const action of ACTIONS) {
    const allowed = mayAct(role, action.least);
    const promise = allowed
      ? `may ${action.does}: the page offers it and it is done`
      : `may not ${action.does}: the page does not offer it, a forged post is refused with 403 naming the role it takes, and nothing changed`;
    it(promise, async () => {
      const f = (await action.setup?.()) ?? {};
      const before = await action.state(f);
      if (action.page) {
        const typed = await open(person(), action.page(f));
        if (allowed) expect(typed.status, typed.text.slice(0, 500)).toBe(200);
        else expectRefused(typed, role, action.least);
      }
      if (action.control) {
        const { on, mark } = action.control(f);
        const shown = await open(person(), on);
        // A role that may not read the page at all is refused it (READS), which hides the control too.
        if (shown.status === 200) expect(shown.text.includes(mark), `${mark} on ${on}`).toBe(allowed);
        else expect(allowed).toBe(false);
      }
      const sent = await action.send(person(), f);
      if (allowed) {
        expect(sent.status, sent.text.slice(0, 500)).toBeLessThan(400);
        expect(await action.state(f)).not.toEqual(before);
      } else {
        expectRefused(sent, role, action.least);
        expect(await action.state(f)).toEqual(before);
      }
    });
  }

  for (const read of READS) {
    const allowed = mayAct(role, read.least);
    it(`${allowed ? 'sees' : 'does not see'} ${read.sees}: ${allowed ? 'in the navigation and on its page' : 'no entry in the navigation, and its typed URL is refused with 403'}`, async () => {
      const overview = await open(person(), '/');
      expect(overview.status).toBe(200);
      const nav = /<nav aria-label="Main">([\s\S]*?)<\/nav>/.exec(overview.text)![1]!;
      expect(nav.includes(`href="${read.page}"`)).toBe(allowed);
      const typed = await open(person(), read.page);
      if (allowed) expect(typed.status).toBe(200);
      else expectRefused(typed, role, read.least);
    });
  }
});

/** The dashboard's POST routes, as its sections declare them. */
const postRoutes = () => [...new Set(dashboardPages(server.deps).routes.filter((route) => route.method === 'POST').map((route) => route.path))];

/** Posts that change nothing of the team: reading a form's count or preview. */
const READ_POSTS = ['/campaigns/preview', '/contacts/:bookId/segments/count', '/automations/:id/count'];
/** Posts of no team's data: signing in and out, choosing a password, and each person's own account. */
const OWN_POSTS = [/^\/login(\/|$)/, /^\/logout$/, /^\/invite\/:token$/, /^\/forgot-password$/, /^\/reset-password\/:token$/, /^\/account(\/|$)/];

describe('every change the dashboard offers is refused to a viewer', () => {
  it('the table above names only routes the dashboard has', () => {
    const routes = postRoutes();
    for (const action of ACTIONS) expect(routes, action.does).toContain(action.route);
  });

  it("a viewer's forged post to each of its change routes is refused with 403, and the audit log holds no change by them", async () => {
    const viewer = people.get('viewer')!;
    const { book: bookId } = await book();
    const contactId = (await api('POST', `/contactBooks/${bookId}/contacts`, { email: 'kept@example.org' })).contactId;
    const automation = await api('POST', '/automations', { name: 'Kept', trigger: { type: 'event', name: 'kept', contactBookId: bookId }, steps: [{ type: 'wait', duration: '1 day' }] });
    const hook = await webhook();
    const ids: Record<string, string> = {
      bookId,
      contactId,
      segmentId: (await api('POST', `/contactBooks/${bookId}/segments`, { name: 'Kept', filter: JSON.parse(SUBSCRIBED) })).id,
      callId: (await api('POST', `/webhooks/${hook.id}/test`)).id,
      stepId: automation.steps[0].id,
      '/domains': String((await createDomain(server, key, `${tag()}.example.test`)).id),
      '/emails': (await api('POST', '/emails', { from: sender, to: 'reader@example.org', subject: 'Later', text: 'Hi', scheduledAt: FUTURE })).emailId,
      '/campaigns': (await api('POST', '/campaigns', { name: 'Kept', from: sender, subject: 'News', contactBookId: bookId, html: UNSUBSCRIBE })).id,
      '/templates': (await api('POST', '/templates', { name: 'Kept', subject: 'Hello', html: '<p>Hello</p>' })).id,
      '/webhooks': hook.id,
      '/automations': automation.id,
      '/api-keys': (await createApiKey(server.deps, { teamId, name: 'Kept' })).id,
      '/inbound/routes': (await api('POST', '/inbound/routes', { match: `${tag()}@roles.example.test`, action: 'store' })).id,
      userId: people.get('member')!.userId,
    };
    /** Each alternative of a `:name{a|b}` segment, and every `:name` as the fixture's id: by name, or for `:id` by the path before it. */
    const filled = (route: string): string[] => {
      const choice = /:\w+\{([^}]+)\}/.exec(route);
      if (choice) return choice[1]!.split('|').flatMap((alternative) => filled(route.replace(choice[0], alternative)));
      return [
        route.replace(/:(\w+)/g, (_match, name: string, at: number) => {
          const id = ids[name] ?? (name === 'id' ? ids[route.slice(0, at - 1)] : undefined);
          if (id === undefined) throw new Error(`${route}: no fixture for :${name}; add one to this test`);
          return encodeURIComponent(id);
        }),
      ];
    };
    const changes = postRoutes().filter((route) => !READ_POSTS.includes(route) && !OWN_POSTS.some((own) => own.test(route)));
    expect(changes.length).toBeGreaterThan(ACTIONS.length);
    for (const route of changes) {
      for (const path of filled(route)) {
        const sent = await post(viewer, path);
        expect(sent.status, `${path}: ${sent.text.slice(0, 300)}`).toBe(403);
        expect(sent.text, path).toContain('Your role (viewer) cannot');
      }
    }
    const byViewer = await server.deps.db.selectFrom('audit_log').select('action').where('team_id', '=', teamId).where('actor_id', '=', viewer.userId).execute();
    expect(byViewer).toEqual([]);
  });
});
