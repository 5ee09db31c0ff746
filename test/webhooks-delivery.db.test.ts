import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { UseSend } from 'usesend-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { callBodySchema, EVENT_TYPES } from '../src/events/contract.js';
import { SIMULATOR } from '../src/sending/transports/capture.js';
import type { TestDnsServer } from './helpers/dns-server.js';
import { dnsVerifiedDomain, startServerWithDns, verifiedDomain } from './helpers/domains.js';
import { waitForEmail } from './helpers/emails.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { deliverRaw } from './helpers/smtp-client.js';
import { waitFor } from './helpers/wait.js';
import {
  closedPort,
  startWebhookReceiver,
  typesOf,
  type Answerer,
  type ReceivedRequest,
  type WebhookReceiver,
} from './helpers/webhook-receiver.js';

// Small numbers, so that retries, timeouts and disabling happen within a test's seconds.
const WEBHOOK_ENV = {
  WEBHOOK_ALLOWED_HOSTS: '127.0.0.1,::1',
  WEBHOOK_RETRY_BASE_MS: '50',
  WEBHOOK_POLL_MS: '50',
  WEBHOOK_TIMEOUT_MS: '1000',
  WEBHOOK_MAX_ATTEMPTS: '3',
  WEBHOOK_AUTO_DISABLE_AFTER: '3',
  DISPATCH_POLL_MS: '20',
  CAMPAIGN_POLL_MS: '20',
  AUTOMATION_POLL_MS: '20',
};

let dns: TestDnsServer;
let server: TestServer;
let teamId: number;
let key: string;
let stop: () => Promise<void>;
/** The team's sending domain, verified through the loopback DNS server while the first webhooks listened. */
let domain: { id: number; name: string };

/** Every webhook this file made, with its secret: every call any of them received must verify. */
const hooks: Hook[] = [];
const receivers: WebhookReceiver[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  ({ dns, server, teamId, key, stop } = await startServerWithDns(WEBHOOK_ENV, { inbound: true }));
}, 30_000);
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await stop();
});

type Hook = { id: string; secret: string; url: string; teamId: number; receiver: WebhookReceiver | null };

const ok = (method: string, path: string, body?: unknown, as = key) => expectOk(server, as, method, path, body);

async function receiver(answer?: Answerer, host?: string, port?: number) {
  const started = await startWebhookReceiver({ answer, host, port });
  receivers.push(started);
  return started;
}

/** A webhook of the team (or of `as`'s team) to a new receiver answering as told (or to `url`). */
async function hook(options: { events?: string[]; domainIds?: number[]; answer?: Answerer; url?: string; as?: string; teamId?: number } = {}): Promise<Hook> {
  const target = options.url ? null : await receiver(options.answer);
  const url = options.url ?? target!.url;
  const created = await ok('POST', '/v1/webhooks', { url, events: options.events, domainIds: options.domainIds }, options.as ?? key);
  expect(created).toMatchObject({ status: 'ACTIVE', url });
  expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  const made: Hook = { id: created.id, secret: created.secret, url, teamId: options.teamId ?? teamId, receiver: target };
  hooks.push(made);
  return made;
}

const webhookOf = (h: Hook, as = key) => ok('GET', `/v1/webhooks/${h.id}`, undefined, as);
const callLog = async (h: Hook, as = key): Promise<any[]> => (await ok('GET', `/v1/webhooks/${h.id}/calls?limit=100`, undefined, as)).data;
const callOf = (h: Hook, callId: string) => ok('GET', `/v1/webhooks/${h.id}/calls/${callId}`);
const waitForCall = (h: Hook, callId: string, what: string, done: (call: any) => boolean) => waitFor(`call ${callId} ${what}`, () => callOf(h, callId), done);
const testCall = async (h: Hook): Promise<string> => (await ok('POST', `/v1/webhooks/${h.id}/test`)).id;

/** The first request of each call, in arrival order (a healthy receiver gets each call once). */
function firstOfEach(requests: ReceivedRequest[]): ReceivedRequest[] {
  const seen = new Set<string>();
  return requests.filter((r) => !seen.has(r.headers['webhook-id']!) && seen.add(r.headers['webhook-id']!));
}

const isEmailEvent = (r: ReceivedRequest) => typeof r.json?.type === 'string' && r.json.type.startsWith('email.');
const ofEmail = (emailId: string) => (r: ReceivedRequest) => isEmailEvent(r) && r.json.data.id === emailId;

/** Waits until the receiver has calls of the email of each of `types`; answers its calls of the email in arrival order. */
async function emailCalls(receiver: WebhookReceiver, emailId: string, types: string[]): Promise<ReceivedRequest[]> {
  const of = () => firstOfEach(receiver.received.filter(ofEmail(emailId)));
  await receiver.waitFor(`${types.join(', ')} of email ${emailId}`, () => types.every((type) => typesOf(of()).includes(type)));
  return of();
}

/** Waits for one call matching `match`; answers its body. */
async function oneCall(receiver: WebhookReceiver, what: string, match: (body: any) => boolean): Promise<any> {
  const [found] = (await receiver.waitFor(what, (all) => all.some((r) => r.json && match(r.json)))).filter((r) => r.json && match(r.json));
  return found!.json;
}

const from = () => `Hooks <hello@${domain.name}>`;
const send = async (to: string, extra: Record<string, unknown> = {}): Promise<string> =>
  (await ok('POST', '/v1/emails', { from: from(), to, subject: `To ${to}`, html: '<p>Hello</p>', ...extra })).emailId;

const EMAIL_TYPES = EVENT_TYPES.filter((type) => type.startsWith('email.'));
const OTHER_TYPES = EVENT_TYPES.filter((type) => !type.startsWith('email.') && type !== 'webhook.test');
// Nothing in Mailroom produces email.rejected (no transport reports a rejection apart from a bounce).
const UNPRODUCED = ['email.rejected'];

describe('every event type reaches the webhooks subscribed to it, and only those', () => {
  let all: Hook;
  let emailOnly: Hook;
  let otherOnly: Hook;

  beforeAll(async () => {
    all = await hook();
    emailOnly = await hook({ events: [...EMAIL_TYPES] });
    otherOnly = await hook({ events: [...OTHER_TYPES] });
    const verified = await dnsVerifiedDomain(server, key, dns, 'hooks.test');
    domain = { id: verified.id, name: verified.name };
  }, 30_000);

  it('domain.created, domain.updated and domain.verified are called as a domain is added and verified through DNS', async () => {
    const types = ['domain.created', 'domain.updated', 'domain.verified'];
    for (const h of [all, otherOnly]) {
      const calls = await h.receiver!.waitFor('the domain calls', (received) =>
        types.every((type) => received.some((r) => r.json?.type === type && r.json.data.id === domain.id)),
      );
      const ofDomain = firstOfEach(calls.filter((r) => r.json?.data?.id === domain.id && r.json.type.startsWith('domain.')));
      // One domain's calls go out in the order of its changes.
      expect(typesOf(ofDomain)[0]).toBe('domain.created');
      expect(typesOf(ofDomain).at(-1)).toBe('domain.verified');
      expect(ofDomain[0]!.json.data).toMatchObject({ id: domain.id, name: 'hooks.test' });
      expect(ofDomain.at(-1)!.json.data).toMatchObject({ id: domain.id, name: 'hooks.test', status: 'SUCCESS', dkimStatus: 'SUCCESS' });
    }
  });

  it("an email's email.queued, email.sent and email.delivered arrive in that order, with the email's data", async () => {
    const emailId = await send('reader@example.org');
    for (const h of [all, emailOnly]) {
      const calls = await emailCalls(h.receiver!, emailId, ['email.queued', 'email.sent', 'email.delivered']);
      expect(typesOf(calls)).toEqual(['email.queued', 'email.sent', 'email.delivered']);
      for (const [index, status] of ['QUEUED', 'SENT', 'DELIVERED'].entries()) {
        const body = calls[index]!.json;
        expect(Object.keys(body).sort()).toEqual(['attempt', 'createdAt', 'data', 'id', 'teamId', 'type', 'version']);
        expect(body).toMatchObject({ id: calls[index]!.headers['webhook-id'], teamId, attempt: 1 });
        expect(body.data).toMatchObject({ id: emailId, status, to: ['reader@example.org'], subject: 'To reader@example.org', domainId: domain.id });
        expect(body.data.from).toContain(`hello@${domain.name}`);
        expect(new Date(body.data.occurredAt).toISOString()).toBe(body.data.occurredAt);
      }
    }
  });

  it("a bounced email's webhook call carries the bounce details, and the next email to the address is email.suppressed", async () => {
    const bounced = await send(SIMULATOR.bounce);
    const calls = await emailCalls(all.receiver!, bounced, ['email.bounced']);
    expect(typesOf(calls)).toEqual(['email.queued', 'email.sent', 'email.bounced']);
    expect(calls[2]!.json.data).toMatchObject({
      id: bounced,
      status: 'BOUNCED',
      bounce: { type: 'Permanent', subType: 'General', message: 'smtp; 550 5.1.1 simulated: mailbox does not exist', recipients: [SIMULATOR.bounce] },
    });

    const suppressed = await send(SIMULATOR.bounce);
    const next = await emailCalls(all.receiver!, suppressed, ['email.suppressed']);
    expect(typesOf(next)).toEqual(['email.queued', 'email.suppressed']);
    expect(next[1]!.json.data).toMatchObject({ id: suppressed, status: 'SUPPRESSED', to: [SIMULATOR.bounce] });
    await emailCalls(emailOnly.receiver!, suppressed, ['email.suppressed']);
  });

  it("a complained email's webhook call carries the complaint details", async () => {
    const emailId = await send(SIMULATOR.complaint);
    const calls = await emailCalls(all.receiver!, emailId, ['email.complained']);
    expect(typesOf(calls)).toEqual(['email.queued', 'email.sent', 'email.delivered', 'email.complained']);
    expect(calls[3]!.json.data).toMatchObject({
      id: emailId, status: 'COMPLAINED', complaint: { feedbackType: 'abuse', recipients: [SIMULATOR.complaint] },
    });
  });

  it("a delayed email's email.delivery_delayed call carries the receiver's message", async () => {
    const emailId = await send(SIMULATOR.delayed);
    const calls = await emailCalls(all.receiver!, emailId, ['email.delivery_delayed']);
    expect(typesOf(calls)).toEqual(['email.queued', 'email.sent', 'email.delivery_delayed']);
    expect(calls[2]!.json.data).toMatchObject({
      id: emailId, status: 'DELIVERY_DELAYED', delay: { message: 'smtp; 421 4.4.7 simulated: delivery delayed' },
    });
  });

  it('an open and a click are called with their details (the click with its URL)', async () => {
    const emailId = await send('opener@example.org');
    await emailCalls(all.receiver!, emailId, ['email.delivered']);
    const headers = { 'user-agent': 'HookTest/1.0' };
    const opened = await fetch(`${server.url}/track/open/${server.deps.tokens.sign('open', { emailId })}`, { headers });
    expect(opened.status).toBe(200);
    const clicked = await fetch(`${server.url}/track/click/${server.deps.tokens.sign('click', { emailId, url: 'https://example.com/landing?a=1' })}`, {
      headers, redirect: 'manual',
    });
    expect(clicked.status).toBe(302);

    for (const h of [all, emailOnly]) {
      const calls = await emailCalls(h.receiver!, emailId, ['email.opened', 'email.clicked']);
      expect(typesOf(calls)).toEqual(['email.queued', 'email.sent', 'email.delivered', 'email.opened', 'email.clicked']);
      const open = calls[3]!.json.data;
      expect(open).toMatchObject({ id: emailId, status: 'OPENED', open: { userAgent: 'HookTest/1.0' } });
      expect(open.open.ip).toMatch(/127\.0\.0\.1/);
      expect(new Date(open.open.timestamp).getTime()).toBeGreaterThan(0);
      expect(calls[4]!.json.data).toMatchObject({
        id: emailId, status: 'CLICKED', click: { url: 'https://example.com/landing?a=1', userAgent: 'HookTest/1.0' },
      });
    }
  });

  it('a scheduled email is called email.scheduled, and cancelling it email.cancelled', async () => {
    const emailId = await send('later@example.org', { scheduledAt: new Date(Date.now() + 86_400_000).toISOString() });
    await ok('POST', `/v1/emails/${emailId}/cancel`);
    for (const h of [all, emailOnly]) {
      const calls = await emailCalls(h.receiver!, emailId, ['email.scheduled', 'email.cancelled']);
      expect(typesOf(calls)).toEqual(['email.scheduled', 'email.cancelled']);
      expect(calls[1]!.json.data).toMatchObject({ id: emailId, status: 'CANCELLED' });
    }
  });

  it('an email whose domain was deleted before it was sent is called email.failed with the reason; the domain email.deleted', async () => {
    const doomed = await verifiedDomain(server, key, 'doomed.hooks.test');
    const emailId = (await ok('POST', '/v1/emails', {
      from: `hello@${doomed.name}`, to: 'never@example.org', subject: 'Never', html: '<p>x</p>', scheduledAt: new Date(Date.now() + 86_400_000).toISOString(),
    })).emailId;
    await ok('DELETE', `/v1/domains/${doomed.id}`);
    await ok('PATCH', `/v1/emails/${emailId}`, { scheduledAt: new Date().toISOString() });

    const calls = await emailCalls(all.receiver!, emailId, ['email.failed']);
    expect(typesOf(calls)).toEqual(['email.scheduled', 'email.scheduled', 'email.failed']);
    expect(calls[2]!.json.data).toMatchObject({ id: emailId, status: 'FAILED', failed: { reason: 'the sending domain no longer exists' } });
    for (const h of [all, otherOnly]) {
      expect(await oneCall(h.receiver!, 'domain.deleted', (b) => b.type === 'domain.deleted' && b.data.id === doomed.id))
        .toMatchObject({ data: { id: doomed.id, name: doomed.name } });
    }
  });

  it('a call tells of the email as it was when its event happened: after the email changed, its call log entry and its retry say the same', async () => {
    const h = await hook({ events: ['email.scheduled'] });
    const passing = await verifiedDomain(server, key, 'snapshot.hooks.test');
    const emailId = (await ok('POST', '/v1/emails', {
      from: `hello@${passing.name}`, to: 'later@example.org', subject: 'Later', html: '<p>x</p>', scheduledAt: new Date(Date.now() + 86_400_000).toISOString(),
    })).emailId;
    const delivered = await oneCall(h.receiver!, 'email.scheduled of the email', (b) => b.type === 'email.scheduled' && b.data.id === emailId);
    expect(delivered.data).toMatchObject({ id: emailId, status: 'SCHEDULED', domainId: passing.id, subject: 'Later' });
    const logged = async () => (await callLog(h)).find((call) => call.id === delivered.id);
    expect((await logged()).payload.data).toEqual(delivered.data);
    // Its attempt is recorded a moment after the receiver answered; until then the call is PENDING,
    // and a retry of a PENDING call changes nothing (the attempt in flight is its delivery).
    await waitForCall(h, delivered.id, 'DELIVERED', (call) => call.status === 'DELIVERED');

    // Deleting the domain takes it off the email (domain_id is null now): the event's call keeps it.
    await ok('DELETE', `/v1/domains/${passing.id}`);
    expect((await logged()).payload.data).toEqual(delivered.data);
    expect(await ok('POST', `/v1/webhooks/${h.id}/calls/${delivered.id}/retry`)).toMatchObject({ id: delivered.id, status: 'PENDING', attempt: 1 });
    const retried = await h.receiver!.waitFor('the retried call', (received) => received.filter((r) => r.json?.id === delivered.id).length === 2);
    expect(retried.filter((r) => r.json?.id === delivered.id)[1]!.json.data).toEqual(delivered.data);
  });

  it('domain.updated is called when tracking is turned on', async () => {
    await ok('PATCH', `/v1/domains/${domain.id}`, { openTracking: true, clickTracking: true });
    for (const h of [all, otherOnly]) {
      expect(await oneCall(h.receiver!, 'domain.updated with tracking on', (b) => b.type === 'domain.updated' && b.data.id === domain.id && b.data.clickTracking))
        .toMatchObject({ data: { id: domain.id, status: 'SUCCESS', openTracking: true, clickTracking: true } });
    }
    await ok('PATCH', `/v1/domains/${domain.id}`, { openTracking: false, clickTracking: false });
  });

  it('contact.created, contact.updated and contact.deleted are called for single and bulk changes', async () => {
    const book = await ok('POST', '/v1/contactBooks', { name: 'Hooked book' });
    const base = `/v1/contactBooks/${book.id}/contacts`;
    const { contactId } = await ok('POST', base, { email: 'one@example.org', firstName: 'One' });
    await ok('PATCH', `${base}/${contactId}`, { firstName: 'Uno' });
    await ok('DELETE', `${base}/${contactId}`);
    expect(await ok('POST', `${base}/bulk`, [{ email: 'two@example.org' }, { email: 'three@example.org' }])).toMatchObject({ created: 2 });
    expect(await ok('POST', `${base}/bulk`, [{ email: 'two@example.org', firstName: 'Two' }, { email: 'four@example.org' }])).toMatchObject({ created: 1, updated: 1 });
    const listed: { id: string; email: string }[] = await ok('GET', base);
    const idOf = (email: string) => listed.find((c) => c.email === email)!.id;
    expect(await ok('DELETE', `${base}/bulk`, { contactIds: [idOf('two@example.org'), idOf('three@example.org')] })).toMatchObject({ count: 2 });

    const expected: [string, string, Record<string, unknown>][] = [
      ['contact.created', 'one@example.org', { firstName: 'One', subscribed: true }],
      ['contact.updated', 'one@example.org', { firstName: 'Uno' }],
      ['contact.deleted', 'one@example.org', {}],
      ['contact.created', 'two@example.org', {}],
      ['contact.created', 'three@example.org', {}],
      ['contact.updated', 'two@example.org', { firstName: 'Two' }],
      ['contact.created', 'four@example.org', {}],
      ['contact.deleted', 'two@example.org', {}],
      ['contact.deleted', 'three@example.org', {}],
    ];
    for (const h of [all, otherOnly]) {
      const ofBook = (received: ReceivedRequest[]) => firstOfEach(received.filter((r) => r.json?.type?.startsWith('contact.') && r.json.data.contactBookId === book.id));
      await h.receiver!.waitFor('the contact calls', (received) => ofBook(received).length >= expected.length);
      const calls = ofBook(h.receiver!.received);
      expect(calls).toHaveLength(expected.length);
      for (const [type, email, fields] of expected) {
        expect(calls.some((r) => r.json.type === type && r.json.data.email === email && expect.objectContaining(fields).asymmetricMatch(r.json.data)), `${type} ${email}`)
          .toBe(true);
      }
      // One contact's calls in the order of its changes.
      expect(calls.filter((r) => r.json.data.email === 'one@example.org').map((r) => r.json.type)).toEqual(['contact.created', 'contact.updated', 'contact.deleted']);
      expect(calls.filter((r) => r.json.data.email === 'two@example.org').map((r) => r.json.type)).toEqual(['contact.created', 'contact.updated', 'contact.deleted']);
    }
  });

  it('campaign mail is called with its campaignId and contactId, the campaign calls campaign.status_changed, and an unsubscribe through the link calls contact.updated', async () => {
    const book = await ok('POST', '/v1/contactBooks', { name: 'Campaign book' });
    await ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, [{ email: 'fan1@example.org' }, { email: 'fan2@example.org' }]);
    const campaign = await ok('POST', '/v1/campaigns', {
      name: 'Hooked', from: from(), subject: 'News', contactBookId: book.id, sendNow: true,
      html: '<p>Hi</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>',
    });
    const statuses = await all.receiver!.waitFor('the campaign SENT', (received) =>
      received.some((r) => r.json?.type === 'campaign.status_changed' && r.json.data.id === campaign.id && r.json.data.status === 'SENT'),
    );
    const changes = firstOfEach(statuses.filter((r) => r.json?.type === 'campaign.status_changed' && r.json.data.id === campaign.id)).map((r) => r.json.data);
    expect(changes[0]).toMatchObject({ id: campaign.id, name: 'Hooked', previousStatus: null });
    expect(changes.at(-1)).toMatchObject({ status: 'SENT', contactBookId: book.id });
    // Each change names the status before it: the calls came in the order of the changes.
    for (let i = 1; i < changes.length; i++) expect(changes[i].previousStatus).toBe(changes[i - 1].status);
    await oneCall(otherOnly.receiver!, 'campaign SENT', (b) => b.type === 'campaign.status_changed' && b.data.id === campaign.id && b.data.status === 'SENT');

    const mail = await server.deps.db.selectFrom('emails').select(['id', 'contact_id']).where('campaign_id', '=', campaign.id).execute();
    expect(mail).toHaveLength(2);
    for (const { id, contact_id } of mail) {
      for (const h of [all, emailOnly]) {
        const calls = await emailCalls(h.receiver!, id, ['email.queued', 'email.sent', 'email.delivered']);
        expect(typesOf(calls)).toEqual(['email.queued', 'email.sent', 'email.delivered']);
        for (const call of calls) expect(call.json.data).toMatchObject({ id, campaignId: campaign.id, contactId: contact_id, domainId: domain.id });
      }
    }

    // The recipient's List-Unsubscribe link, from the message as it was sent.
    const raw = (await readFile(path.join(server.deps.config.dataDir, 'outbox', `${mail[0]!.id}.eml`), 'latin1')).replace(/\r\n[ \t]+/g, ' ');
    const link = new URL(/^List-Unsubscribe: <([^>]+)>/im.exec(raw)![1]!);
    const unsubscribed = await fetch(server.url + link.pathname, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click',
    });
    expect(unsubscribed.status).toBe(200);
    for (const h of [all, otherOnly]) {
      const update = await oneCall(h.receiver!, 'contact.updated by the unsubscribe', (b) => b.type === 'contact.updated' && b.data.id === mail[0]!.contact_id);
      expect(update.data).toMatchObject({ contactBookId: book.id, subscribed: false, unsubscribeReason: 'UNSUBSCRIBED' });
    }
  });

  it('the mail a deleted campaign cancels is called email.cancelled', async () => {
    const book = await ok('POST', '/v1/contactBooks', { name: 'Cancelled campaign book' });
    // Deferred by the simulated relay, the email waits for its retry, unclaimed: deleting the campaign cancels it.
    await ok('POST', `/v1/contactBooks/${book.id}/contacts`, { email: SIMULATOR.deferred });
    const campaign = await ok('POST', '/v1/campaigns', {
      name: 'Doomed', from: from(), subject: 'News', contactBookId: book.id, sendNow: true, html: '<p>Hi</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>',
    });
    const delayed = await oneCall(all.receiver!, 'the campaign email delayed', (b) => b.type === 'email.delivery_delayed' && b.data.campaignId === campaign.id);
    await ok('DELETE', `/v1/campaigns/${campaign.id}`);
    expect((await ok('GET', `/v1/emails/${delayed.data.id}`)).latestStatus).toBe('CANCELLED');
    for (const h of [all, emailOnly]) {
      const calls = await emailCalls(h.receiver!, delayed.data.id, ['email.cancelled']);
      expect(typesOf(calls)).toEqual(['email.queued', 'email.delivery_delayed', 'email.cancelled']);
      expect(calls[2]!.json.data).toMatchObject({ id: delayed.data.id, status: 'CANCELLED', campaignId: campaign.id });
    }
  });

  it('mail received on a webhook route is called email.received, with the message it stored', async () => {
    await ok('POST', '/v1/inbound/routes', { match: `support@${domain.name}`, action: 'webhook' });
    const raw = `From: Ann <ann@example.org>\r\nTo: support@${domain.name}\r\nSubject: Help wanted\r\nMessage-ID: <help-1@example.org>\r\n\r\nHello\r\n`;
    expect(await deliverRaw(server.inboundPort!, { from: 'ann@example.org', to: [`support@${domain.name}`] }, raw)).toMatchObject({ accepted: true });
    const [stored] = (await ok('GET', '/v1/inbound/emails')).data;
    for (const h of [all, emailOnly]) {
      const call = await oneCall(h.receiver!, 'email.received', (b) => b.type === 'email.received' && b.data.id === stored.id);
      expect(call.data).toMatchObject({ from: 'ann@example.org', subject: 'Help wanted', messageId: '<help-1@example.org>' });
    }
  });

  it("an automation's run calls automation.run_started and automation.run_completed, each with the run", async () => {
    const book = await ok('POST', '/v1/contactBooks', { name: 'Automated book' });
    const automation = await ok('POST', '/v1/automations', {
      name: 'Hooked', status: 'ACTIVE', trigger: { type: 'event', name: 'hooked', contactBookId: book.id }, steps: [{ id: 'bye', type: 'exit' }],
    });
    const { contactId } = (await server.call('POST', '/v1/events', { key, body: { name: 'hooked', contactBookId: book.id, email: 'walker@example.org' } })).body;
    for (const h of [all, otherOnly]) {
      const started = await oneCall(h.receiver!, 'automation.run_started', (b) => b.type === 'automation.run_started' && b.data.automationId === automation.id);
      const ended = await oneCall(h.receiver!, 'automation.run_completed', (b) => b.type === 'automation.run_completed' && b.data.automationId === automation.id);
      expect(started.data).toMatchObject({ contactId, email: 'walker@example.org', status: 'ACTIVE', stepId: 'bye' });
      expect(ended.data).toMatchObject({ id: started.data.id, status: 'EXITED', stepId: 'bye', exitReason: 'exit step' });
    }
  });

  it('webhook.test reaches the webhook it was sent to', async () => {
    const callId = await testCall(all);
    const body = await oneCall(all.receiver!, 'webhook.test', (b) => b.id === callId);
    expect(body).toMatchObject({ type: 'webhook.test', teamId, attempt: 1, data: { webhookId: all.id } });
    await waitForCall(all, callId, 'DELIVERED', (call) => call.status === 'DELIVERED');
  });

  it(`every event type but ${UNPRODUCED.join(', ')} reached the webhook of all events; the others got only the types they are subscribed to`, async () => {
    const seen = (h: Hook) => new Set(typesOf(h.receiver!.received));
    expect([...seen(all)].sort()).toEqual(EVENT_TYPES.filter((type) => !UNPRODUCED.includes(type)).sort());
    expect([...seen(emailOnly)].sort()).toEqual(EMAIL_TYPES.filter((type) => !UNPRODUCED.includes(type)).sort());
    expect([...seen(otherOnly)].sort()).toEqual([...OTHER_TYPES].sort());
    // Not only what arrived: the call logs hold no call of another type either.
    for (const [h, types] of [[emailOnly, EMAIL_TYPES], [otherOnly, OTHER_TYPES]] as const) {
      await waitFor('no call pending', async () => (await ok('GET', `/v1/webhooks/${h.id}/calls?status=PENDING&limit=1`)).count, (n) => n === 0);
      const logged = await ok('GET', `/v1/webhooks/${h.id}/calls?limit=100`);
      expect(logged.count).toBe(h.receiver!.received.length);
      expect(logged.data.filter((call: { type: string }) => !(types as readonly string[]).includes(call.type))).toEqual([]);
    }
    // Every body is exactly what the event contract declares for its type (which the OpenAPI document shows).
    for (const h of [all, emailOnly, otherOnly]) {
      for (const r of h.receiver!.received) {
        const checked = callBodySchema(r.json.type).strict().safeParse(r.json);
        expect(checked.error?.issues, `${r.json.type}: ${JSON.stringify(r.json)}`).toBeUndefined();
      }
    }
    // Each got every call of its types once, each on its first attempt.
    for (const h of [all, emailOnly, otherOnly]) {
      expect(firstOfEach(h.receiver!.received)).toHaveLength(h.receiver!.received.length);
      expect(h.receiver!.received.every((r) => r.json.attempt === 1 && r.headers['x-usesend-retry'] === 'false')).toBe(true);
    }
  });
});

describe('subscriptions by domain', () => {
  it("a webhook limited to one domain gets that domain's email calls and no other domain's", async () => {
    const second = await verifiedDomain(server, key, 'second.hooks.test');
    const only = await hook({ events: ['email.queued', 'email.delivered'], domainIds: [second.id] });
    const mine = (await ok('POST', '/v1/emails', { from: `hi@${second.name}`, to: 'a@example.org', subject: 'Mine', html: '<p>x</p>' })).emailId;
    const other = await send('b@example.org');
    await emailCalls(only.receiver!, mine, ['email.queued', 'email.delivered']);
    // The other domain's email is DELIVERED: any call it owed this webhook is in the log by now.
    await waitForEmail(server, key, other, (email) => email.latestStatus === 'DELIVERED');
    expect(only.receiver!.received.filter(ofEmail(other))).toEqual([]);
    expect((await callLog(only)).map((call) => call.payload.data.id)).toEqual([mine, mine]);
  });
});

describe('order of one email’s calls', () => {
  it('holds when every call fails its first attempt: no later event of an email is tried before the earlier one was delivered', async () => {
    const types = ['email.queued', 'email.sent', 'email.delivered'];
    const ordered = await hook({ events: types, answer: (request) => ({ status: request.headers['x-usesend-retry'] === 'false' ? 503 : 200 }) });
    const batch = await ok('POST', '/v1/emails/batch', Array.from({ length: 10 }, (_, i) => ({ from: from(), to: `order${i}@example.org`, subject: `Order ${i}`, html: '<p>x</p>' })));
    const ids: string[] = batch.data.map((d: { emailId: string }) => d.emailId);
    await ordered.receiver!.waitFor('every call delivered on its second attempt', (received) => received.filter((r) => r.answeredStatus === 200).length === 30);
    for (const emailId of ids) {
      const requests = ordered.receiver!.received.filter(ofEmail(emailId));
      // Every attempt of each call before any attempt of the next: queued 503, queued 200, sent 503, ...
      expect(requests.map((r) => `${r.json.type} ${r.json.attempt}`)).toEqual(types.flatMap((type) => [`${type} 1`, `${type} 2`]));
      for (let i = 2; i < requests.length; i += 2) expect(requests[i]!.at).toBeGreaterThanOrEqual(requests[i - 1]!.at);
    }
  });
});

describe('retries', () => {
  // A receiver told to answer this slowly: the call log's response time is at least that, as measured
  // by the sender (whose clock may read a timer's end a little early).
  const SLOW_ANSWER_MS = 250;
  const CLOCK_SLACK_MS = 50;

  it('a 500, then a timeout, then a 200: three attempts of one call, all with the same webhook-id, X-UseSend-Retry and attempt counting up, each signed afresh', async () => {
    const answers = [{ status: 500, body: 'not now' }, { hang: true }, { status: 200, delayMs: SLOW_ANSWER_MS }];
    const h = await hook({ events: ['webhook.test'], answer: (_, index) => answers[Math.min(index, 2)]! });
    const callId = await testCall(h);
    const done = await waitForCall(h, callId, 'DELIVERED', (call) => call.status !== 'PENDING');
    expect(done).toMatchObject({ status: 'DELIVERED', attempt: 3, responseStatus: 200, lastError: null, nextAttemptAt: null });
    expect(done.responseTimeMs, 'the time of the last attempt, which the receiver answered slowly').toBeGreaterThanOrEqual(SLOW_ANSWER_MS - CLOCK_SLACK_MS);

    const received = h.receiver!.received;
    expect(received).toHaveLength(3);
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([callId, callId, callId]);
    expect(received.map((r) => r.headers['x-usesend-call'])).toEqual([callId, callId, callId]);
    expect(received.map((r) => r.headers['x-usesend-retry'])).toEqual(['false', 'true', 'true']);
    expect(received.map((r) => r.json.attempt)).toEqual([1, 2, 3]);
    expect(received.map((r) => r.json.id)).toEqual([callId, callId, callId]);
    expect(new Set(received.map((r) => r.headers['webhook-signature'])).size).toBe(3);
    // The timed-out attempt was given up after WEBHOOK_TIMEOUT_MS (the receiver never answers it).
    expect(received[2]!.at - received[1]!.at).toBeGreaterThanOrEqual(1000);
  });

  it('the call log records status, response code, latency and last error of calls that failed every attempt: a 500, a timeout, a refused connection', async () => {
    const failing = await hook({ events: ['webhook.test'], answer: () => ({ status: 500, body: 'broken receiver', delayMs: SLOW_ANSWER_MS }) });
    const hanging = await hook({ events: ['webhook.test'], answer: () => ({ hang: true }) });
    const refusedPort = await closedPort();
    const refused = await hook({ events: ['webhook.test'], url: `http://127.0.0.1:${refusedPort}/hook` });
    const [a, b, c] = await Promise.all([failing, hanging, refused].map(testCall));
    const ended = (call: any) => call.status !== 'PENDING';
    const [failed500, timedOut, refusedCall] = await Promise.all([
      waitForCall(failing, a!, 'FAILED', ended),
      waitForCall(hanging, b!, 'FAILED', ended),
      waitForCall(refused, c!, 'FAILED', ended),
    ]);
    expect(failed500).toMatchObject({ status: 'FAILED', attempt: 3, responseStatus: 500, lastError: 'HTTP 500: broken receiver', nextAttemptAt: null });
    expect(failed500.responseTimeMs).toBeGreaterThanOrEqual(SLOW_ANSWER_MS - CLOCK_SLACK_MS);
    expect(timedOut).toMatchObject({ status: 'FAILED', attempt: 3, responseStatus: null, lastError: 'timed out after 1000 ms' });
    expect(timedOut.responseTimeMs).toBeGreaterThanOrEqual(1000);
    expect(refusedCall).toMatchObject({ status: 'FAILED', attempt: 3, responseStatus: null, lastError: 'connection refused (ECONNREFUSED)' });
    expect(failing.receiver!.received.map((r) => r.json.attempt)).toEqual([1, 2, 3]);
    expect(hanging.receiver!.received.map((r) => r.json.attempt)).toEqual([1, 2, 3]);
    // Backoff: each retry waits, after the answer before it, at least its share of a growing delay
    // (50 ms, then 5 times that, each -20% at worst). A lower bound only: a busy machine may add to it.
    const [first, second, third] = failing.receiver!.received;
    // The sender dates the next attempt after reading the answer, a few ms after the receiver did.
    const shortestWait = (retry: number) => 0.8 * 50 * 5 ** (retry - 1) - 5;
    expect(second!.at - first!.answeredAt!).toBeGreaterThanOrEqual(shortestWait(1));
    expect(third!.at - second!.answeredAt!).toBeGreaterThanOrEqual(shortestWait(2));

    // A FAILED call retried from the log goes out once more, now to a receiver that is up.
    const upAgain = await receiver(() => ({ status: 204, delayMs: SLOW_ANSWER_MS }), '127.0.0.1', refusedPort);
    const retried = await ok('POST', `/v1/webhooks/${refused.id}/calls/${c}/retry`);
    expect(retried).toMatchObject({ id: c, status: 'PENDING', attempt: 3 });
    const delivered = await waitForCall(refused, c!, 'DELIVERED', (call) => call.status !== 'PENDING');
    expect(delivered).toMatchObject({ status: 'DELIVERED', attempt: 4, responseStatus: 204, lastError: null });
    expect(delivered.responseTimeMs).toBeGreaterThanOrEqual(SLOW_ANSWER_MS - CLOCK_SLACK_MS);
    expect(upAgain.received).toHaveLength(1);
    expect(upAgain.received[0]!.headers).toMatchObject({ 'webhook-id': c, 'x-usesend-retry': 'true' });
    expect(upAgain.received[0]!.json).toMatchObject({ id: c, type: 'webhook.test', attempt: 4 });
    hooks.find((x) => x.id === refused.id)!.receiver = upAgain;
  });

  it('Retry-After on a 429 is honoured: the next attempt comes no sooner', async () => {
    const h = await hook({ events: ['webhook.test'], answer: (_, index) => (index === 0 ? { status: 429, headers: { 'Retry-After': '1' } } : { status: 200 }) });
    const callId = await testCall(h);
    const [first] = await h.receiver!.waitFor('the first attempt answered', (received) => received[0]?.answeredAt != null);
    const waiting = await waitForCall(h, callId, 'waiting for its retry', (call) => call.attempt === 1);
    expect(waiting).toMatchObject({ status: 'PENDING', responseStatus: 429, lastError: 'HTTP 429' });
    expect(new Date(waiting.nextAttemptAt).getTime()).toBeGreaterThanOrEqual(first!.at + 1000);
    const [, second] = await h.receiver!.waitForCount(2);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1000);
    expect(await waitForCall(h, callId, 'DELIVERED', (call) => call.status !== 'PENDING')).toMatchObject({ status: 'DELIVERED', attempt: 2 });
  });

  it('a 410 sets the webhook AUTO_DISABLED at once, and no further calls go to it', async () => {
    const control = await hook({ events: ['contact.created'] });
    const gone = await hook({ events: ['contact.created'], answer: () => ({ status: 410, body: 'unsubscribed' }) });
    const book = await ok('POST', '/v1/contactBooks', { name: 'Gone book' });
    await ok('POST', `/v1/contactBooks/${book.id}/contacts`, { email: 'first@example.org' });
    await gone.receiver!.waitForCount(1);
    const disabled = await waitFor('AUTO_DISABLED', () => webhookOf(gone), (w) => w.status === 'AUTO_DISABLED');
    expect(disabled.disabledReason).toMatch(/410/);
    const [call] = await callLog(gone);
    // Not retried: 410 says the receiver is gone.
    expect(call).toMatchObject({ status: 'FAILED', attempt: 1, responseStatus: 410 });

    await ok('POST', `/v1/contactBooks/${book.id}/contacts`, { email: 'second@example.org' });
    await oneCall(control.receiver!, 'the second contact', (b) => b.data.email === 'second@example.org');
    expect(gone.receiver!.received).toHaveLength(1);
    expect(await callLog(gone)).toHaveLength(1);
    expect((await server.call('POST', `/v1/webhooks/${gone.id}/test`, { key })).status).toBe(409);
  });

  it('three calls in a row that fail every attempt set the webhook AUTO_DISABLED (a delivery in between starts the count again); PATCH status ACTIVE re-activates it', async () => {
    let healthy = false;
    const h = await hook({ events: ['webhook.test'], answer: () => ({ status: healthy ? 200 : 500 }) });
    const run = async (expected: 'FAILED' | 'DELIVERED') => {
      healthy = expected === 'DELIVERED';
      const callId = await testCall(h);
      expect((await waitForCall(h, callId, expected, (call) => call.status !== 'PENDING')).status).toBe(expected);
    };
    await run('FAILED');
    await run('FAILED');
    await run('DELIVERED');
    await run('FAILED');
    await run('FAILED');
    expect(await webhookOf(h)).toMatchObject({ status: 'ACTIVE', disabledReason: null });
    await run('FAILED');
    expect(await webhookOf(h)).toMatchObject({ status: 'AUTO_DISABLED', disabledReason: '3 calls in a row failed every attempt' });
    const received = h.receiver!.received.length;
    expect((await server.call('POST', `/v1/webhooks/${h.id}/test`, { key })).status).toBe(409);

    expect(await ok('PATCH', `/v1/webhooks/${h.id}`, { status: 'ACTIVE' })).toMatchObject({ status: 'ACTIVE', disabledReason: null });
    expect((await webhookOf(h)).status).toBe('ACTIVE');
    await run('DELIVERED');
    expect(h.receiver!.received).toHaveLength(received + 1);
  });

  it('a redirect is not followed: the other receiver sees nothing, and the call is retried with the reason in lastError', async () => {
    const elsewhere = await receiver();
    const h = await hook({ events: ['webhook.test'], answer: () => ({ status: 302, headers: { Location: elsewhere.url } }) });
    const callId = await testCall(h);
    const failed = await waitForCall(h, callId, 'FAILED', (call) => call.status !== 'PENDING');
    expect(failed).toMatchObject({ status: 'FAILED', attempt: 3, responseStatus: 302, lastError: `redirect to ${elsewhere.url} not followed` });
    expect(h.receiver!.received).toHaveLength(3);
    expect(elsewhere.received).toEqual([]);
  });
});

describe('isolation', () => {
  it("team B's webhook never receives team A's events", async () => {
    const { teamId: otherTeam, apiKey: otherKey } = await server.team('Team B');
    const theirs = await hook({ as: otherKey, teamId: otherTeam });
    const ours = await hook();

    const emailId = await send('isolated@example.org');
    const book = await ok('POST', '/v1/contactBooks', { name: 'Team A book' });
    await ok('POST', `/v1/contactBooks/${book.id}/contacts`, { email: 'a-only@example.org' });
    await ok('PATCH', `/v1/domains/${domain.id}`, { openTracking: true });
    await ok('PATCH', `/v1/domains/${domain.id}`, { openTracking: false });
    await emailCalls(ours.receiver!, emailId, ['email.delivered']);
    await oneCall(ours.receiver!, "team A's contact", (b) => b.type === 'contact.created' && b.data.email === 'a-only@example.org');
    await ours.receiver!.waitFor("team A's domain changes", (received) => received.filter((r) => r.json.type === 'domain.updated').length === 2);

    const testId = (await ok('POST', `/v1/webhooks/${theirs.id}/test`, undefined, otherKey)).id;
    await theirs.receiver!.waitForCount(1);
    expect(theirs.receiver!.received.map((r) => [r.json.type, r.json.id, r.json.teamId])).toEqual([['webhook.test', testId, otherTeam]]);
    expect((await callLog(theirs, otherKey)).map((call) => call.id)).toEqual([testId]);
    expect(ours.receiver!.received.every((r) => r.json.teamId === teamId)).toBe(true);
    // Nor can team B see or drive team A's webhook.
    expect((await server.call('GET', `/v1/webhooks/${ours.id}/calls`, { key: otherKey })).status).toBe(404);
  });
});

describe('a rolled-back change sends no call', () => {
  it('a bulk upsert that fails partway, a PUT refused with 409 and emails refused with 4xx leave the call log empty', async () => {
    // A team of its own, so that its one webhook is all the outbox writes to.
    const { teamId: own, apiKey: ownKey } = await server.team('Rollback team');
    const as = (method: string, path: string, body?: unknown) => ok(method, path, body, ownKey);
    const sending = await verifiedDomain(server, ownKey, 'rollback.hooks.test');
    const book = await as('POST', '/v1/contactBooks', { name: 'Rollback book' });
    const base = `/v1/contactBooks/${book.id}/contacts`;
    await as('POST', base, { email: 'taken@example.org' });
    const { contactId: movable } = await as('POST', base, { email: 'movable@example.org' });
    const h = await hook({ as: ownKey, teamId: own });

    const { db } = server.deps;
    await sql`CREATE FUNCTION webhook_test_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- Fails only once the first chunk's calls are written: else the upsert succeeds, and the test fails.
        IF NEW.email = 'poison@example.org' AND EXISTS (
          SELECT 1 FROM webhook_calls WHERE team_id = NEW.team_id AND type = 'contact.created' AND data->>'email' = 'bulk0@example.org'
        ) THEN RAISE EXCEPTION 'simulated fault'; END IF;
        RETURN NEW;
      END $$`.execute(db);
    await sql`CREATE TRIGGER webhook_test_poison BEFORE INSERT ON contacts FOR EACH ROW EXECUTE FUNCTION webhook_test_poison()`.execute(db);
    try {
      // The poisoned row comes after a whole chunk (2,500) was written, with its calls, in the same transaction.
      const rows = [...Array.from({ length: 3_000 }, (_, i) => ({ email: `bulk${i}@example.org` })), { email: 'poison@example.org' }];
      expect((await server.call('POST', `${base}/bulk`, { key: ownKey, body: rows })).status).toBe(500);
    } finally {
      await sql`DROP TRIGGER webhook_test_poison ON contacts`.execute(db);
      await sql`DROP FUNCTION webhook_test_poison()`.execute(db);
    }
    expect((await server.call('PUT', `${base}/${movable}`, { key: ownKey, body: { email: 'taken@example.org' } })).status).toBe(409);
    const unverified = await as('POST', '/v1/domains', { name: 'unverified.rollback.hooks.test' });
    const refusedSends = [
      await server.call('POST', '/v1/emails', { key: ownKey, body: { from: `a@${unverified.name}`, to: 'x@example.org', subject: 'No', html: '<p>x</p>' } }),
      await server.call('POST', '/v1/emails/batch', {
        key: ownKey,
        body: [
          { from: `a@${sending.name}`, to: 'ok@example.org', subject: 'Yes', html: '<p>x</p>' },
          { from: `a@${unverified.name}`, to: 'y@example.org', subject: 'No', html: '<p>x</p>' },
        ],
      }),
    ];
    for (const res of refusedSends) expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
    for (const res of refusedSends) expect(res.status).toBeLessThan(500);

    // A change that did commit, made last: once its call is in, any call of the above would be too.
    await as('POST', base, { email: 'marker@example.org' });
    await oneCall(h.receiver!, 'the marker contact', (b) => b.type === 'contact.created' && b.data.email === 'marker@example.org');
    const logged = await callLog(h, ownKey);
    expect(logged.map((call) => [call.type, call.payload.data.email ?? call.payload.data.name])).toEqual([
      ['contact.created', 'marker@example.org'],
      ['domain.created', 'unverified.rollback.hooks.test'],
    ]);
    expect(h.receiver!.received.filter((r) => r.json.type.startsWith('email.'))).toEqual([]);
  });
});

describe('a slow receiver', () => {
  it("does not hold back another webhook's calls nor email delivery", async () => {
    // Its own server: here the limit must be longer than the test, so that the slow receiver's
    // calls stay under way all along (a call cut off at the limit would only be tried again).
    const own = await startTestServer({ ...WEBHOOK_ENV, WEBHOOK_TIMEOUT_MS: '120000' });
    cleanups.push(() => own.stop());
    const { teamId: ownTeam, apiKey } = await own.team();
    const sending = await verifiedDomain(own, apiKey, 'slow.hooks.test');
    // As slow as can be: it answers nothing until the test ends (close() cuts its calls off).
    const slow = await startWebhookReceiver({ answer: () => ({ hang: true }) });
    const fast = await startWebhookReceiver();
    cleanups.push(() => slow.close(), () => fast.close());
    for (const target of [slow, fast]) {
      const created = await own.call('POST', '/v1/webhooks', { key: apiKey, body: { url: target.url } });
      expect(created.status).toBe(200);
      hooks.push({ id: created.body.id, secret: created.body.secret, url: target.url, teamId: ownTeam, receiver: target });
    }

    const batch = await own.call('POST', '/v1/emails/batch', {
      key: apiKey,
      body: Array.from({ length: 20 }, (_, i) => ({ from: `hi@${sending.name}`, to: `r${i}@example.org`, subject: `Slow ${i}`, html: '<p>x</p>' })),
    });
    expect(batch.status).toBe(200);
    const ids: string[] = batch.body.data.map((d: { emailId: string }) => d.emailId);
    // The slow receiver has a call, which it holds from then on.
    await slow.waitForCount(1);
    await fast.waitFor('every email.delivered at the fast receiver', (received) =>
      ids.every((id) => received.some((r) => r.json?.type === 'email.delivered' && r.json.data.id === id)),
    );
    const delivered = await own.call('GET', '/v1/emails?status=DELIVERED&limit=1', { key: apiKey });
    expect(delivered.body.count).toBe(20);
  });
});

describe('signatures', () => {
  it('every call received in this file verifies with usesend-js and with standardwebhooks; a tampered body is refused by both', () => {
    const checked = hooks.filter((h) => h.receiver).flatMap((h) => h.receiver!.received.map((request) => ({ h, request })));
    expect(checked.length).toBeGreaterThan(0);
    for (const { h, request } of checked) {
      const useSend = new UseSend('us_x', 'http://127.0.0.1:1').webhooks(h.secret);
      const standard = new Webhook(h.secret);
      expect(useSend.constructEvent(request.rawBody, { headers: request.headers })).toEqual(request.json);
      expect(standard.verify(request.rawBody, request.headers)).toEqual(request.json);
      expect(request.headers['x-usesend-event']).toBe(request.json.type);
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.json.teamId).toBe(h.teamId);
      expect(request.method).toBe('POST');

      const tampered = request.rawBody.replace(/"attempt":\d+/, (m) => `${m}0`);
      expect(tampered).not.toBe(request.rawBody);
      expect(() => useSend.constructEvent(tampered, { headers: request.headers })).toThrow();
      expect(useSend.verify(tampered, { headers: request.headers })).toBe(false);
      expect(() => standard.verify(tampered, request.headers)).toThrow();
      // Nor does another webhook's secret verify it.
      const other = hooks.find((x) => x.secret !== h.secret)!;
      expect(useSend.verify(request.rawBody, { headers: request.headers, secret: other.secret })).toBe(false);
      expect(() => new Webhook(other.secret).verify(request.rawBody, request.headers)).toThrow();
    }
  });
});
