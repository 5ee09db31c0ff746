import net from 'node:net';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DkimSigner } from '../src/domains/dkim.js';
import { expectApiError } from './helpers/api-error.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { publishSenders } from './helpers/inbound-senders.js';
import { verifiedDomain } from './helpers/domains.js';
import { settled, waitForEmail } from './helpers/emails.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { deliverRaw } from './helpers/smtp-client.js';
import { waitFor } from './helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';

/**
 * Inbound email end to end, on real parts: the inbound SMTP listener (nodemailer and a raw socket
 * talk to it), a loopback DNS server publishing the senders' SPF, DKIM keys and DMARC, and an HTTP
 * receiver that checks every webhook call's Standard Webhooks signature.
 */

const MAX_BYTES = 512 * 1024;

let dns: TestDnsServer;
let server: TestServer;
let receiver: WebhookReceiver;
let key: string;
let teamId: number;
let other: { teamId: number; apiKey: string };
let secret: string;
let dkim: DkimSigner;

const ok = (method: string, path: string, body?: unknown, as = key) => expectOk(server, as, method, path, body);
const deliver = (to: string[], raw: string | Buffer, from = 'ann@sender.test') => deliverRaw(server.inboundPort!, { from, to }, raw);

/** A message as a mail client writes it, with CRLF line ends. */
function message(headers: Record<string, string>, body = 'Hello, I need help.'): string {
  const lines = Object.entries({ From: 'Ann <ann@sender.test>', To: 'support@acme.test', Subject: 'Help', 'Message-ID': `<${Math.random().toString(36).slice(2)}@sender.test>`, ...headers }).map(([k, v]) => `${k}: ${v}`);
  return `${lines.join('\r\n')}\r\n\r\n${body.replace(/\r?\n/g, '\r\n')}\r\n`;
}

const PDF = Buffer.from('%PDF-1.4\n% a small but binary attachment \x00\x01\xff\n');

function withAttachment(headers: Record<string, string>): string {
  const boundary = 'b0undary';
  return message(
    { ...headers, 'MIME-Version': '1.0', 'Content-Type': `multipart/mixed; boundary="${boundary}"` },
    [
      `--${boundary}`, 'Content-Type: text/plain; charset=utf-8', '', 'See the report.', '',
      `--${boundary}`, 'Content-Type: application/pdf', 'Content-Disposition: attachment; filename="report.pdf"', 'Content-Transfer-Encoding: base64', '',
      PDF.toString('base64'), '', `--${boundary}--`,
    ].join('\r\n'),
  );
}

/** Received mail of the team, newest first. */
const received = async (query = '', as = key) => (await ok('GET', `/v1/inbound/emails${query}`, undefined, as)).data as any[];

beforeAll(async () => {
  [dns, receiver] = await Promise.all([startDnsServer(), startWebhookReceiver()]);
  dkim = publishSenders(dns);

  server = await startTestServer({ DNS_SERVERS: dns.address, DISPATCH_POLL_MS: '50', WEBHOOK_POLL_MS: '50', INBOUND_MAX_BYTES: String(MAX_BYTES) }, { inbound: true });
  ({ teamId, apiKey: key } = await server.team('Acme'));
  other = await server.team('Other');
  await verifiedDomain(server, key, 'acme.test');
  await verifiedDomain(server, other.apiKey, 'other.test');
  ({ secret } = await ok('POST', '/v1/webhooks', { url: receiver.url, events: ['email.received'] }));
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await Promise.all([dns?.close(), receiver?.close()]);
});

describe('inbound routes', () => {
  it('a route on a verified domain answers the MX record to create; on a subdomain too; anything else is refused naming the field, storing nothing', async () => {
    const route = await ok('POST', '/v1/inbound/routes', { match: 'Support@ACME.test', action: 'webhook' });
    expect(route).toMatchObject({
      match: 'support@acme.test', action: 'webhook', forwardTo: [], webhookIds: null,
      dnsRecords: [{ type: 'MX', name: '@', value: server.deps.config.inboundMxHost, priority: '10', zone: 'acme.test' }],
    });
    const sub = await ok('POST', '/v1/inbound/routes', { match: '*@in.acme.test', action: 'store' });
    expect(sub.dnsRecords[0]).toMatchObject({ name: 'in', zone: 'acme.test' });

    const deafHook = await ok('POST', '/v1/webhooks', { url: receiver.url, events: ['email.sent'] });
    for (const [body, pathOf, text] of [
      [{ match: 'help@unknown.test', action: 'store' }, 'match', 'unknown.test is not a verified domain of the team'],
      [{ match: 'not an address', action: 'store' }, 'match', 'must be an address'],
      [{ match: 'x@acme.test', action: 'forward' }, 'forwardTo', 'must name at least one address'],
      [{ match: '*@deep.in.acme.test', action: 'forward', forwardTo: 'a@example.org' }, 'action', 'deep.in.acme.test itself must be a verified domain'],
      [{ match: 'x@acme.test', action: 'webhook', webhookIds: ['wh_nope'] }, 'webhookIds[0]', 'no webhook wh_nope'],
      [{ match: 'x@acme.test', action: 'webhook', webhookIds: [deafHook.id] }, 'webhookIds[0]', 'does not take email.received'],
      [{ match: 'x@acme.test', action: 'bounce' }, 'action', 'must be one of'],
    ] as const) {
      const res = await server.call('POST', '/v1/inbound/routes', { key, body });
      expectApiError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.error.details, JSON.stringify(body)).toEqual(expect.arrayContaining([{ path: pathOf, message: expect.stringContaining(text) }]));
    }
    expect((await ok('GET', '/v1/inbound/routes')).data.map((r: any) => r.match)).toEqual(['*@in.acme.test', 'support@acme.test']);
    await ok('DELETE', `/v1/webhooks/${deafHook.id}`);
  });

  it("an address has one route, and a domain one team: another team's route of it is a 409; another team sees and changes none of this team's routes", async () => {
    expectApiError(await server.call('POST', '/v1/inbound/routes', { key, body: { match: 'support@acme.test', action: 'store' } }), 409, 'CONFLICT');
    // The other team verified acme.test too: it still may not route it.
    await verifiedDomain(server, other.apiKey, 'acme.test').catch(() => undefined);
    const taken = await server.call('POST', '/v1/inbound/routes', { key: other.apiKey, body: { match: 'sales@acme.test', action: 'store' } });
    expectApiError(taken, 409, 'CONFLICT');
    expect(taken.body.error.message).toContain('acme.test is routed by another team');

    const [mine] = (await ok('GET', '/v1/inbound/routes')).data;
    expect((await ok('GET', '/v1/inbound/routes', undefined, other.apiKey)).data).toEqual([]);
    for (const [method, body] of [['GET'], ['PATCH', { action: 'store' }], ['DELETE']] as const) {
      expectApiError(await server.call(method, `/v1/inbound/routes/${mine.id}`, { key: other.apiKey, body }), 404, 'NOT_FOUND');
    }
    expect(await ok('GET', `/v1/inbound/routes/${mine.id}`)).toEqual(mine);

    const domain = (await ok('GET', '/v1/domains')).find((d: any) => d.name === 'acme.test');
    const scoped = await server.key(teamId, 'full', domain.id);
    expectApiError(await server.call('GET', '/v1/inbound/routes', { key: scoped }), 403, 'FORBIDDEN');
    expectApiError(await server.call('GET', '/v1/inbound/emails', { key: scoped }), 403, 'FORBIDDEN');
  });
});

describe('receiving', () => {
  it('mail to an address no route claims is refused at RCPT (550 5.1.1), before any content is sent', async () => {
    const refused = await deliver(['nobody@acme.test'], message({ To: 'nobody@acme.test' }));
    expect(refused).toMatchObject({ accepted: false, code: 550 });
    expect(refused.response).toContain('5.1.1');
    expect((await deliver(['someone@other.test'], message({}))).code).toBe(550);
  });

  it('the exact address wins over its domain wildcard, each route keeps its own copy, and a webhook route sends email.received, signed, with the whole message', async () => {
    const raw = dkim.sign(withAttachment({ To: 'support@acme.test, desk@in.acme.test', Cc: 'boss@example.org', 'In-Reply-To': '<unknown@elsewhere.test>' }));
    const delivery = await deliver(['support@acme.test', 'desk@in.acme.test'], await raw);
    expect(delivery).toMatchObject({ accepted: true, code: 250 });
    const [wild, exact] = await waitFor('both routes stored it', () => received(), (rows) => rows.length >= 2);
    const routes = new Map((await ok('GET', '/v1/inbound/routes')).data.map((r: any) => [r.match, r.id]));
    expect(exact).toMatchObject({ routeId: routes.get('support@acme.test'), envelope: { to: ['support@acme.test'], from: 'ann@sender.test', clientAddress: '127.0.0.1' } });
    expect(wild).toMatchObject({ routeId: routes.get('*@in.acme.test'), envelope: { to: ['desk@in.acme.test'] } });
    expect(exact).toMatchObject({
      from: 'ann@sender.test', to: ['support@acme.test', 'desk@in.acme.test'], cc: ['boss@example.org'], subject: 'Help', text: expect.stringMatching(/^See the report\.\n/),
      inReplyTo: '<unknown@elsewhere.test>', inReplyToEmailId: null,
      attachments: [{ id: 'att_1', filename: 'report.pdf', contentType: 'application/pdf', size: PDF.length }],
    });
    expect(exact.headers).toEqual(expect.arrayContaining([{ key: 'subject', value: 'Help' }]));

    // An address of its own beside its domain's wildcard: the address's route takes it.
    const vip = await ok('POST', '/v1/inbound/routes', { match: 'vip@in.acme.test', action: 'store' });
    await deliver(['vip@in.acme.test'], message({ To: 'vip@in.acme.test', Subject: 'For the VIP' }));
    const [forVip] = await waitFor('stored for the VIP', () => received('?to=vip@in.acme.test'), (rows) => rows.length === 1);
    expect(forVip.routeId).toBe(vip.id);

    // Only the webhook route calls; the store routes keep their copies quietly.
    const [call] = await receiver.waitFor('the email.received call', (requests) => requests.length > 0);
    expect(() => new StandardWebhook(secret.replace(/^whsec_/, '')).verify(call!.rawBody, call!.headers)).not.toThrow();
    expect(call!.json).toMatchObject({ type: 'email.received', teamId, data: { ...exact, truncated: false } });
    expect(receiver.received).toHaveLength(1);
  });

  it("a route's webhookIds take its calls alone; a call cuts text and html at 256 KiB and says so, the API keeps them whole", async () => {
    const only = await startWebhookReceiver();
    try {
      const hook = await ok('POST', '/v1/webhooks', { url: only.url, events: ['email.received'] });
      await ok('POST', '/v1/inbound/routes', { match: 'long@acme.test', action: 'webhook', webhookIds: [hook.id] });
      const before = receiver.received.length;
      const text = 'A long letter. '.repeat(20_000);
      await deliver(['long@acme.test'], message({ To: 'long@acme.test', Subject: 'Long' }, text));
      const [call] = await only.waitFor('the call to the route\'s webhook', (requests) => requests.length > 0);
      expect(() => new StandardWebhook(hook.secret.replace(/^whsec_/, '')).verify(call!.rawBody, call!.headers)).not.toThrow();
      expect(call!.json.data.truncated).toBe(true);
      expect(call!.json.data.text).toHaveLength(256 * 1024);
      const [stored] = await received('?to=long@acme.test');
      expect(stored.text.length).toBeGreaterThan(256 * 1024);
      expect(text.startsWith(call!.json.data.text)).toBe(true);
      // The calls are written with the mail: one, to the route's webhook; the team's other webhook was owed none.
      const calls = await server.deps.db.selectFrom('webhook_calls').select('webhook_id').where('subject_key', '=', stored.id).execute();
      expect(calls).toEqual([{ webhook_id: hook.id }]);
      expect(receiver.received.slice(before).filter((r) => r.json.data.subject === 'Long')).toEqual([]);
    } finally {
      await only.close();
    }
  });

  it('the raw message downloads byte for byte, and each attachment as its bytes with its type, never to be shown in a browser', async () => {
    const raw = withAttachment({ To: 'support@acme.test', Subject: 'Raw' });
    await deliver(['support@acme.test'], raw);
    const [stored] = await waitFor('stored', () => received('?from=ann@sender.test'), (rows) => rows.some((r) => r.subject === 'Raw'));
    const download = await fetch(`${server.url}/v1/inbound/emails/${stored.id}/raw`, { headers: { authorization: `Bearer ${key}` } });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('message/rfc822');
    expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(raw))).toBe(true);

    const attachment = await fetch(`${server.url}/v1/inbound/emails/${stored.id}/attachments/att_1`, { headers: { authorization: `Bearer ${key}` } });
    expect(attachment.status).toBe(200);
    expect(attachment.headers.get('content-type')).toBe('application/pdf');
    expect(attachment.headers.get('content-disposition')).toMatch(/^attachment; filename="report.pdf"/);
    expect(attachment.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await attachment.arrayBuffer()).equals(PDF)).toBe(true);

    expectApiError(await server.call('GET', `/v1/inbound/emails/${stored.id}/attachments/att_9`, { key }), 404, 'NOT_FOUND');
    for (const suffix of ['', '/raw', '/attachments/att_1']) {
      expectApiError(await server.call('GET', `/v1/inbound/emails/${stored.id}${suffix}`, { key: other.apiKey }), 404, 'NOT_FOUND');
    }
  });

  it('authenticates what it takes: DKIM, SPF and DMARC pass for mail its domain signed and sent; DMARC fails for mail a stranger sent in a bank\'s name', async () => {
    await deliver(['support@acme.test'], await dkim.sign(message({ Subject: 'Signed' })));
    await deliver(['support@acme.test'], message({ From: 'CEO <ceo@bank.test>', Subject: 'Wire the money' }), 'ceo@bank.test');
    const rows = await waitFor('both stored', () => received(), (all) => ['Signed', 'Wire the money'].every((s) => all.some((r) => r.subject === s)));
    const signed = rows.find((r) => r.subject === 'Signed');
    expect(signed.authentication).toMatchObject({
      spf: { result: 'pass', domain: 'sender.test' },
      dkim: { result: 'pass', signatures: [{ result: 'pass', domain: 'sender.test', selector: 'sel1' }] },
      dmarc: { result: 'pass', domain: 'sender.test' },
    });
    const forged = rows.find((r) => r.subject === 'Wire the money');
    expect(forged.authentication).toMatchObject({ spf: { result: 'fail', domain: 'bank.test' }, dkim: { result: 'none', signatures: [] }, dmarc: { result: 'fail', domain: 'bank.test' } });
  });

  it('a reply to an email the team sent names that email', async () => {
    const { emailId } = await ok('POST', '/v1/emails', { from: 'help@acme.test', to: 'ann@sender.test', subject: 'Your ticket', text: 'We are on it.' });
    const sent = await waitForEmail(server, key, emailId, settled);
    const messageId = (await server.deps.db.selectFrom('emails').select('message_id').where('id', '=', sent.id).executeTakeFirstOrThrow()).message_id;
    await deliver(['support@acme.test'], message({ Subject: 'Re: Your ticket', 'In-Reply-To': messageId, References: messageId }));
    const [reply] = await waitFor('the reply stored', () => received(), (rows) => rows.some((r) => r.subject === 'Re: Your ticket'));
    expect(reply).toMatchObject({ subject: 'Re: Your ticket', inReplyTo: messageId, inReplyToEmailId: emailId });
    // The other team's mail is never "answered" by this team's inbound.
    expect(reply.inReplyToEmailId).not.toBeNull();
  });

  it('a forward route sends the message on through the normal sending path: From the route address, Reply-To the sender, its attachment along', async () => {
    const route = await ok('POST', '/v1/inbound/routes', { match: 'sales@acme.test', action: 'forward', forwardTo: ['team@example.org', 'lead@example.org'] });
    expect(route.forwardTo).toEqual(['team@example.org', 'lead@example.org']);
    await deliver(['sales@acme.test'], withAttachment({ To: 'sales@acme.test', Subject: 'Quote please' }));
    const forwarded = await waitFor(
      'the forward delivered',
      async () => (await ok('GET', '/v1/emails?limit=100')).data.find((e: any) => e.subject === 'Quote please' && e.latestStatus === 'DELIVERED'),
      (found) => found !== undefined,
    );
    expect(forwarded).toMatchObject({ from: 'sales@acme.test', to: 'team@example.org, lead@example.org', replyTo: 'ann@sender.test' });
    const eml = await readFile(path.join(server.deps.config.dataDir, 'outbox', `${forwarded.id}.eml`), 'latin1');
    expect(eml).toMatch(/^Reply-To: ann@sender\.test\r$/m);
    expect(eml).toMatch(/^Content-Disposition: attachment; filename="report\.pdf"\r$/m);
    expect(eml).toMatch(/^DKIM-Signature: /m);
  });
});

describe('what the listener refuses stores nothing', () => {
  const count = async () => Number((await server.deps.db.selectFrom('inbound_emails').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

  it('a message over INBOUND_MAX_BYTES is refused with 552, and INBOUND_MAX_BYTES is announced in SIZE', async () => {
    const before = await count();
    const big = message({ Subject: 'Too big' }, 'x'.repeat(76).concat('\n').repeat(Math.ceil((MAX_BYTES + 1000) / 77)));
    const refused = await deliver(['support@acme.test'], big);
    expect(refused).toMatchObject({ accepted: false, code: 552 });
    expect(await count()).toBe(before);
    const ehlo = await rawSession((_socket, say) => say('EHLO client.test'));
    expect(ehlo).toMatch(new RegExp(`^250[- ]SIZE ${MAX_BYTES}\r$`, 'm'));
    expect(ehlo).toMatch(/^250[- ]STARTTLS\r$/m);
  });

  it('a message cut off in the middle of its DATA stores nothing', async () => {
    const before = await count();
    await rawSession(async (socket, say) => {
      await say('EHLO client.test');
      await say('MAIL FROM:<ann@sender.test>');
      await say('RCPT TO:<support@acme.test>');
      await say('DATA');
      socket.write('From: ann@sender.test\r\nSubject: Cut\r\n\r\nHalf a message, then the line drops');
      socket.destroy();
    });
    // A whole message after it arrives (so the cut one had every chance to be stored first).
    await deliver(['support@acme.test'], message({ Subject: 'After the cut' }));
    await waitFor('the next one stored', () => received(), (rows) => rows.some((r) => r.subject === 'After the cut'));
    expect(await count()).toBe(before + 1);
    expect((await received()).some((r) => r.subject === 'Cut')).toBe(false);
  });
});

/** A raw SMTP session: `say` sends a line and answers the server's reply; answers the last reply. */
async function rawSession(script: (socket: net.Socket, say: (line: string) => Promise<string>) => Promise<unknown>): Promise<string> {
  const socket = net.connect(server.inboundPort!, '127.0.0.1');
  let buffered = '';
  let waiting: ((reply: string) => void) | null = null;
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    // A reply ends with a line whose fourth character is a space.
    if (/(^|\r\n)\d{3} [^\r\n]*\r\n$/.test(buffered) && waiting) {
      const reply = buffered;
      buffered = '';
      const done = waiting;
      waiting = null;
      done(reply);
    }
  });
  socket.on('error', () => undefined);
  const next = () => new Promise<string>((resolve) => (waiting = resolve));
  await next();
  let last = '';
  const say = async (line: string) => {
    const reply = next();
    socket.write(`${line}\r\n`);
    return (last = await reply);
  };
  await script(socket, say);
  socket.destroy();
  return last;
}
