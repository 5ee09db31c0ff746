import nodemailer from 'nodemailer';
import PostalMime from 'postal-mime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildMessage } from '../src/mail/mime.js';
import { smtpTransport } from '../src/sending/transports/smtp.js';
import { verifyDkim } from './helpers/dkim.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { createDomain, verifiedDomain } from './helpers/domains.js';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { recordingLogger, type LogEntry } from './helpers/log.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { plainMessage, queuedId, SubmissionClient } from './helpers/submission-client.js';
import { sleep } from './helpers/wait.js';

/**
 * SMTP submission (SPEC §9) with real clients against the real listeners: nodemailer as an
 * application would use it, and a raw socket for what a library would not send.
 */

const PDF = Buffer.from('%PDF-1.4\n% a tiny but binary \x00\x01\x02\xff attachment\n', 'latin1');
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...Array.from({ length: 300 }, (_, i) => i % 256)]);

const unique = (() => {
  let n = 0;
  return (label: string) => `${label}-${process.pid}-${++n}.test`;
})();

/** The team's emails as GET /v1/emails counts them. */
async function emailCount(server: TestServer, key: string): Promise<number> {
  const res = await server.call('GET', '/v1/emails?limit=1', { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.count;
}

/** A new team with a verified domain (served by `dns` when given, so its DKIM signature verifies). */
async function teamWithDomain(server: TestServer, label: string, dns?: TestDnsServer) {
  const { teamId, apiKey: key } = await server.team(label);
  const domain = await verifiedDomain(server, key, unique(label));
  dns?.serve(domain);
  return { teamId, key, domain: domain as { id: number; name: string } };
}

/** A raw client on the STARTTLS port, through STARTTLS and AUTH PLAIN with `key`. */
async function signedIn(port: number, key: string, options: { tls?: boolean; localAddress?: string } = {}) {
  const client = await SubmissionClient.connect(port, options);
  await client.secureHello();
  const auth = await client.authPlain(key);
  expect(auth.code, auth.text).toBe(235);
  return client;
}

/** nodemailer on the STARTTLS port, TLS required, the key as password; with `maxConnections`, a pool of that many. */
const starttlsTransport = (server: TestServer, key: string, maxConnections?: number) =>
  nodemailer.createTransport({
    ...(maxConnections === undefined ? {} : { pool: true, maxConnections, maxMessages: Infinity }),
    host: '127.0.0.1',
    port: server.submissionPort!,
    secure: false,
    requireTLS: true,
    auth: { user: 'usesend', pass: key },
    tls: { rejectUnauthorized: false },
  });


const idOf = (response: string) => {
  const id = /^250 2\.0\.0 Queued as (\S+)$/.exec(response)?.[1];
  if (!id) throw new Error(`not queued: ${response}`);
  return id;
};

describe('SMTP submission', () => {
  let dns: TestDnsServer;
  let sink: SmtpSink;
  let server: TestServer;
  let logs: LogEntry[];

  beforeAll(async () => {
    dns = await startDnsServer();
    sink = await startSmtpSink({ closeTimeout: 100 });
    const recording = recordingLogger();
    logs = recording.entries;
    server = await startTestServer({ DNS_SERVERS: dns.address, DISPATCH_POLL_MS: '50', SMTP_URL: sink.url }, { submission: true, log: recording.log });
  });
  afterAll(async () => {
    await server?.stop();
    await sink?.close();
    await dns?.close();
  });

  describe('a message from nodemailer over STARTTLS', () => {
    it('arrives DKIM-signed with its VERP Return-Path, every header, the attachment and the inline image, the Bcc recipient only in the envelope; the API shows it with its events', async () => {
      const { key, domain } = await teamWithDomain(server, 'rich', dns);
      const transport = starttlsTransport(server, key, 3);
      const html = '<p>Hello <b>Ada</b>, here is our logo: <img src="cid:logo@mailroom.test" alt="logo"></p>';
      try {
        const [rich, ...others] = await Promise.all([
          transport.sendMail({
            from: `"Acme News" <news@${domain.name}>`,
            to: 'Ada Lovelace <ada@example.org>',
            cc: 'carol@example.org',
            bcc: 'secret@example.org',
            replyTo: 'replies@example.org',
            inReplyTo: '<parent@example.org>',
            references: ['<root@example.org>', '<parent@example.org>'],
            subject: 'Quarterly report',
            text: 'Hello Ada, the report is attached.',
            html,
            headers: { 'X-Campaign-Ref': 'spring-2026' },
            attachments: [
              { filename: 'logo.png', content: PNG, contentType: 'image/png', cid: 'logo@mailroom.test' },
              { filename: 'report.pdf', content: PDF, contentType: 'application/pdf' },
            ],
          }),
          // Sent at the same time: the pool opens more connections.
          ...[1, 2, 3].map((n) =>
            transport.sendMail({ from: `news@${domain.name}`, to: `reader${n}@example.org`, subject: `Also ${n}`, text: `Message ${n}` }),
          ),
        ]);
        const emailId = idOf(rich!.response);
        const otherIds = others.map((info) => idOf(info.response));
        expect(new Set([emailId, ...otherIds]).size).toBe(4);

        const email = await waitForEmail(server, key, emailId, settled);
        expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
        expect(email).toMatchObject({
          from: `"Acme News" <news@${domain.name}>`,
          subject: 'Quarterly report',
          cc: 'carol@example.org',
          bcc: 'secret@example.org',
          replyTo: 'replies@example.org',
          domainId: domain.id,
        });
        expect(email.to).toContain('ada@example.org');

        const [message] = sink.forEmail(emailId);
        expect(message, 'the message reached the sink').toBeDefined();
        const [dkim] = await verifyDkim(dns, message!.raw);
        expect(dkim).toMatchObject({ signingDomain: domain.name, status: { result: 'pass' } });
        expect(message!.mailFrom).toMatch(new RegExp(`^bounces\\+${emailId}\\.[0-9a-f]{16}@mail\\.${domain.name.replaceAll('.', '\\.')}$`));
        expect([...message!.rcptTo].sort()).toEqual(['ada@example.org', 'carol@example.org', 'secret@example.org']);

        const raw = message!.raw.toString('latin1');
        const headerBlock = raw.slice(0, raw.indexOf('\r\n\r\n'));
        expect(headerBlock).not.toMatch(/^bcc:/im);
        expect(raw).not.toContain('secret@example.org');

        const parsed = await PostalMime.parse(message!.raw);
        expect(parsed.from).toMatchObject({ name: 'Acme News', address: `news@${domain.name}` });
        expect(parsed.to).toEqual([{ name: 'Ada Lovelace', address: 'ada@example.org' }]);
        expect(parsed.cc).toEqual([{ name: '', address: 'carol@example.org' }]);
        expect(parsed.replyTo).toEqual([{ name: '', address: 'replies@example.org' }]);
        expect(parsed.inReplyTo).toBe('<parent@example.org>');
        expect(parsed.references).toBe('<root@example.org> <parent@example.org>');
        expect(parsed.headers.find((h) => h.key === 'x-campaign-ref')?.value).toBe('spring-2026');
        expect(parsed.subject).toBe('Quarterly report');
        expect(parsed.text?.trim()).toBe('Hello Ada, the report is attached.');
        expect(parsed.html?.trim()).toBe(html);
        const parts = parsed.attachments.map((a) => ({
          filename: a.filename,
          mimeType: a.mimeType,
          disposition: a.disposition,
          contentId: a.contentId ?? null,
          content: Buffer.from(a.content as ArrayBuffer),
        }));
        expect(parts).toEqual(
          expect.arrayContaining([
            { filename: 'logo.png', mimeType: 'image/png', disposition: 'inline', contentId: '<logo@mailroom.test>', content: PNG },
            { filename: 'report.pdf', mimeType: 'application/pdf', disposition: 'attachment', contentId: null, content: PDF },
          ]),
        );
        expect(parts).toHaveLength(2);

        const listed = await server.call('GET', '/v1/emails', { key });
        expect(listed.status).toBe(200);
        expect(listed.body.count).toBe(4);
        expect(listed.body.data.map((e: { id: string }) => e.id).sort()).toEqual([emailId, ...otherIds].sort());
      } finally {
        transport.close();
      }
    });
  });

  describe('a raw client', () => {
    it('EHLO, STARTTLS, EHLO, AUTH PLAIN, MAIL, RCPT, DATA: a hand-written MIME message is queued; a Bcc header it carries never leaves, its envelope-only recipient is Bcc', async () => {
      const { key, domain } = await teamWithDomain(server, 'raw', dns);
      const client = await SubmissionClient.connect(server.submissionPort!);
      expect(client.greeting.code).toBe(220);
      const plainHello = await client.command('EHLO client.test');
      expect(plainHello.code).toBe(250);
      expect(plainHello.lines).toContain('STARTTLS');
      expect((await client.startTls()).code).toBe(220);
      const hello = await client.command('EHLO client.test');
      expect(hello.lines).toContain('AUTH PLAIN LOGIN');
      expect(hello.lines).toContain('PIPELINING');
      expect(hello.lines).toContain(`SIZE ${server.deps.config.submissionMaxBytes}`);
      expect((await client.authPlain(key, 'any-user-name')).code).toBe(235);

      const message = [
        `From: Raw Sender <raw@${domain.name}>`,
        'To: Reader <reader@example.org>',
        'Bcc: hidden@example.org',
        'Subject: Hand-written',
        'X-Order-Id: 4711',
        'MIME-Version: 1.0',
        'Content-Type: multipart/alternative; boundary="b1"',
        '',
        '--b1',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'Plain body.',
        '.a line starting with a dot',
        '--b1',
        'Content-Type: text/html; charset=utf-8',
        '',
        '<p>HTML body.</p>',
        '--b1--',
        '',
      ].join('\r\n');
      const reply = await client.send(`raw@${domain.name}`, ['reader@example.org', 'hidden@example.org'], message);
      expect(reply.text).toMatch(/^2\.0\.0 Queued as \S+$/);
      const emailId = queuedId(reply);
      await client.quit();

      const email = await waitForEmail(server, key, emailId, settled);
      expect(email).toMatchObject({ subject: 'Hand-written', to: '"Reader" <reader@example.org>', bcc: 'hidden@example.org', cc: null });
      expect(email.to).toContain('reader@example.org');
      expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
      const [delivered] = sink.forEmail(emailId);
      expect([...delivered!.rcptTo].sort()).toEqual(['hidden@example.org', 'reader@example.org']);
      const raw = delivered!.raw.toString('latin1');
      expect(raw.slice(0, raw.indexOf('\r\n\r\n'))).not.toMatch(/^bcc:/im);
      expect(raw).not.toContain('hidden@example.org');
      const parsed = await PostalMime.parse(delivered!.raw);
      expect(parsed.text).toContain('.a line starting with a dot');
      expect(parsed.html).toContain('<p>HTML body.</p>');
      expect(parsed.headers.find((h) => h.key === 'x-order-id')?.value).toBe('4711');
      expect((await verifyDkim(dns, delivered!.raw))[0]!.status.result).toBe('pass');
    });

    it('AUTH LOGIN with an API key as the password signs in and sends', async () => {
      const { key, domain } = await teamWithDomain(server, 'login');
      const client = await SubmissionClient.connect(server.submissionPort!);
      await client.secureHello();
      expect((await client.authLogin(key, 'usesend')).code).toBe(235);
      const reply = await client.send(`app@${domain.name}`, ['reader@example.org'], plainMessage({ from: `app@${domain.name}`, to: 'reader@example.org' }));
      const emailId = queuedId(reply);
      await client.quit();
      expect((await server.call('GET', `/v1/emails/${emailId}`, { key })).status).toBe(200);
    });
  });

  it('the implicit TLS port takes mail from nodemailer with secure: true', async () => {
    const { key, domain } = await teamWithDomain(server, 'implicit');
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.submissionTlsPort!,
      secure: true,
      auth: { user: 'usesend', pass: key },
      tls: { rejectUnauthorized: false },
    });
    try {
      const info = await transport.sendMail({ from: `app@${domain.name}`, to: 'reader@example.org', subject: 'Over TLS', text: 'Hi' });
      const email = await waitForEmail(server, key, idOf(info.response), () => true);
      expect(email).toMatchObject({ subject: 'Over TLS', to: 'reader@example.org' });
    } finally {
      transport.close();
    }
  });

  describe('refusals name what is wrong', () => {
    let team: { teamId: number; key: string; domain: { id: number; name: string } };
    let otherDomain: { id: number; name: string };
    let foreignDomain: string;

    beforeAll(async () => {
      team = await teamWithDomain(server, 'rules');
      otherDomain = await verifiedDomain(server, team.key, unique('rules-b'));
      const other = await teamWithDomain(server, 'foreign');
      foreignDomain = other.domain.name;
    });

    const attempt = async (key: string, from: string) => {
      const client = await signedIn(server.submissionPort!, key);
      try {
        return await client.send(from, ['reader@example.org'], plainMessage({ from, to: 'reader@example.org' }));
      } finally {
        await client.quit();
      }
    };

    it('a wrong key is 535, by AUTH PLAIN and AUTH LOGIN', async () => {
      const client = await SubmissionClient.connect(server.submissionPort!);
      await client.secureHello();
      const plain = await client.authPlain('mr_not_a_real_key');
      expect(plain.code).toBe(535);
      expect(plain.text).toMatch(/API key/);
      expect((await client.authLogin('not even the shape of a key')).code).toBe(535);
      // Still unauthenticated: mail is refused.
      expect((await client.command(`MAIL FROM:<app@${team.domain.name}>`)).code).toBe(530);
      await client.quit();
    });

    it('AUTH before STARTTLS on the plain port is 538, and MAIL before AUTH is 530', async () => {
      const client = await SubmissionClient.connect(server.submissionPort!);
      await client.command('EHLO client.test');
      expect((await client.authPlain(team.key)).code).toBe(538);
      expect((await client.command(`MAIL FROM:<app@${team.domain.name}>`)).code).toBe(530);
      await client.startTls();
      await client.command('EHLO client.test');
      expect((await client.command(`MAIL FROM:<app@${team.domain.name}>`)).code).toBe(530);
      await client.quit();
    });

    it('From on an unverified domain of the team, or on a domain it never registered, is 553 naming the domain', async () => {
      const pending = await createDomain(server, team.key, unique('pending'));
      const unverified = await attempt(team.key, `app@${pending.name}`);
      expect(unverified.code).toBe(553);
      expect(unverified.text).toContain(pending.name);
      expect(unverified.text).toMatch(/not verified/);

      const unknown = await attempt(team.key, 'app@never-registered.example');
      expect(unknown.code).toBe(553);
      expect(unknown.text).toContain('never-registered.example');
    });

    it("another team's verified domain is 553 naming the domain", async () => {
      const reply = await attempt(team.key, `app@${foreignDomain}`);
      expect(reply.code).toBe(553);
      expect(reply.text).toContain(foreignDomain);
    });

    it('a key with the sending permission can submit', async () => {
      const key = await server.key(team.teamId, 'sending');
      const emailId = queuedId(await attempt(key, `app@${team.domain.name}`));
      expect((await server.call('GET', `/v1/emails/${emailId}`, { key })).status).toBe(200);
    });

    it('a key scoped to one domain sends from it, and from another domain of the team gets 550 5.7.1', async () => {
      const scoped = await server.key(team.teamId, 'sending', team.domain.id);
      queuedId(await attempt(scoped, `app@${team.domain.name}`));
      const refused = await attempt(scoped, `app@${otherDomain.name}`);
      expect(refused.code).toBe(550);
      expect(refused.text).toMatch(/^5\.7\.1 .*scoped/);
    });

    it('garbage commands get 5xx and the session still works; too many close it; the server stays up', async () => {
      const client = await SubmissionClient.connect(server.submissionPort!);
      await client.command('EHLO client.test');
      for (const garbage of ['HELLO WORLD', 'GIVE ME MAIL', '\x00\x01\xfe\xff', 'X'.repeat(400)]) {
        expect((await client.command(garbage)).code).toBeGreaterThanOrEqual(500);
      }
      expect((await client.command('MAIL FROM:<<<not an address>>>')).code).toBeGreaterThanOrEqual(500);
      expect((await client.command('NOOP')).code).toBe(250);
      await client.startTls();
      await client.command('EHLO client.test');
      expect((await client.authPlain(team.key)).code).toBe(235);
      expect((await client.command('RCPT TO:<reader@example.org>')).code).toBe(503);
      expect((await client.command('DATA')).code).toBe(503);
      const from = `app@${team.domain.name}`;
      queuedId(await client.send(from, ['reader@example.org'], plainMessage({ from, to: 'reader@example.org' })));
      await client.quit();

      const noisy = await SubmissionClient.connect(server.submissionPort!);
      const codes: number[] = [];
      for (let i = 0; i < 30; i++) {
        try {
          codes.push((await noisy.command(`NONSENSE ${i}`)).code);
        } catch {
          break;
        }
      }
      expect(codes.at(-1)).toBe(421);
      expect(codes.slice(0, -1).every((code) => code === 500)).toBe(true);
      await noisy.closed;

      expect((await server.call('GET', '/health')).status).toBe(200);
      const after = await signedIn(server.submissionPort!, team.key);
      queuedId(await after.send(from, ['reader@example.org'], plainMessage({ from, to: 'reader@example.org' })));
      await after.quit();
    });

    it('a client that disconnects in the middle of DATA leaves nothing stored, and that is not logged as a fault of the server', async () => {
      const { key, domain } = await teamWithDomain(server, 'dropper');
      const from = `app@${domain.name}`;
      const logsBefore = logs.length;
      const before = await emailCount(server, key);
      const client = await signedIn(server.submissionPort!, key);
      expect((await client.command(`MAIL FROM:<${from}>`)).code).toBe(250);
      expect((await client.command('RCPT TO:<reader@example.org>')).code).toBe(250);
      expect((await client.command('DATA')).code).toBe(354);
      client.write(plainMessage({ from, to: 'reader@example.org', body: 'This message is cut off in the mid' }));
      client.destroy();
      await client.closed;

      // A complete message afterwards, on a new connection: once it is stored, the dropped one had its chance.
      const next = await signedIn(server.submissionPort!, key);
      const emailId = queuedId(await next.send(from, ['reader@example.org'], plainMessage({ from, to: 'reader@example.org' })));
      await next.quit();
      await sleep(200);
      expect(await emailCount(server, key)).toBe(before + 1);
      const listed = await server.call('GET', '/v1/emails', { key });
      expect(listed.body.data.map((e: { id: string }) => e.id)).toEqual([emailId]);
      expect(logs.slice(logsBefore).filter((entry) => entry.level === 'error')).toEqual([]);
    });
  });

  describe('volume', () => {
    it('50 messages through one pooled connection are each accepted exactly once', async () => {
      const { key, domain } = await teamWithDomain(server, 'one-connection');
      const transport = starttlsTransport(server, key, 1);
      try {
        const infos = await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            transport.sendMail({ from: `bulk@${domain.name}`, to: `reader${i}@example.org`, subject: `Message ${i}`, text: `Body ${i}` }),
          ),
        );
        const ids = infos.map((info) => idOf(info.response));
        expect(new Set(ids).size).toBe(50);
        expect(await emailCount(server, key)).toBe(50);
        const stored = await server.deps.db.selectFrom('emails').select(['id', 'subject']).where('id', 'in', ids).execute();
        expect(stored.map((row) => row.subject).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `Message ${i}`).sort());
      } finally {
        transport.close();
      }
    });

    it('a client that pipelines (another Mailroom relaying through SMTP_URL) has each message answered for itself: 50 over 2 sessions each stored once with its own id, the one with a foreign From refused alone', async () => {
      const { key, domain } = await teamWithDomain(server, 'pipelining');
      const relay = smtpTransport({
        url: `smtp://usesend:${encodeURIComponent(key)}@127.0.0.1:${server.submissionPort}/?requireTLS=true&tls.rejectUnauthorized=false`,
        poolSize: 2, maxMessagesPerConnection: 1000, timeoutMs: 10_000,
      });
      const FOREIGN = 17;
      try {
        const results = await Promise.all(
          Array.from({ length: 50 }, (_, i) => {
            const from = i === FOREIGN ? 'bulk@not-ours.example' : `bulk@${domain.name}`;
            const message = buildMessage({
              id: `p${i}`, from, to: [`reader${i}@example.org`], cc: [], bcc: [], replyTo: [], subject: `Pipelined ${i}`, text: `Body ${i}`,
              html: null, headers: {}, attachments: [], messageId: `<p${i}@relay.example>`,
            }, new Date());
            return relay.send(`p${i}`, message, { from: `bounces@${domain.name}`, to: [`reader${i}@example.org`] });
          }),
        );
        expect(results[FOREIGN]).toMatchObject({ kind: 'permanent', code: 553 });
        const accepted = results.filter((_, i) => i !== FOREIGN);
        expect(accepted.every((result) => result.kind === 'sent')).toBe(true);
        const ids = accepted.map((result) => idOf((result as { response: string }).response));
        expect(new Set(ids).size).toBe(49);
        expect(await emailCount(server, key)).toBe(49);
        const stored = await server.deps.db.selectFrom('emails').select(['id', 'subject']).where('id', 'in', ids).execute();
        // Each reply names the email of its own message, not a neighbour's in the pipeline.
        const subjectOf = new Map(stored.map((row) => [row.id, row.subject]));
        expect(ids.map((id) => subjectOf.get(id))).toEqual(Array.from({ length: 50 }, (_, i) => `Pipelined ${i}`).filter((_, i) => i !== FOREIGN));
      } finally {
        await relay.close();
      }
    });

    it('20 connections at once each have their message accepted exactly once', async () => {
      const { key, domain } = await teamWithDomain(server, 'many-connections');
      const transports = Array.from({ length: 20 }, () => starttlsTransport(server, key));
      try {
        const infos = await Promise.all(
          transports.map((transport, i) =>
            transport.sendMail({ from: `app@${domain.name}`, to: `reader${i}@example.org`, subject: `Parallel ${i}`, text: `Body ${i}` }),
          ),
        );
        const ids = infos.map((info) => idOf(info.response));
        expect(new Set(ids).size).toBe(20);
        expect(await emailCount(server, key)).toBe(20);
      } finally {
        for (const transport of transports) transport.close();
      }
    });
  });

  it("a message sent with one team's key is invisible to another team's key", async () => {
    const a = await teamWithDomain(server, 'isolated-a');
    const b = await teamWithDomain(server, 'isolated-b');
    const client = await signedIn(server.submissionPort!, a.key);
    const from = `app@${a.domain.name}`;
    const emailId = queuedId(await client.send(from, ['reader@example.org'], plainMessage({ from, to: 'reader@example.org' })));
    await client.quit();
    expect((await server.call('GET', `/v1/emails/${emailId}`, { key: a.key })).status).toBe(200);
    expect((await server.call('GET', `/v1/emails/${emailId}`, { key: b.key })).status).toBe(404);
    const listed = await server.call('GET', '/v1/emails', { key: b.key });
    expect(listed.body.count).toBe(0);
  });
});

describe('SMTP submission limits', () => {
  const MAX_BYTES = 20_000;
  const FAILURES = 3;
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ SMTP_SUBMISSION_MAX_BYTES: String(MAX_BYTES), AUTH_FAILURES_PER_MINUTE: String(FAILURES) }, { submission: true });
  });
  afterAll(() => server?.stop());

  it(`a message over SMTP_SUBMISSION_MAX_BYTES is 552 and nothing is stored; EHLO announces SIZE ${MAX_BYTES}`, async () => {
    const { key, domain } = await teamWithDomain(server, 'size');
    const from = `app@${domain.name}`;
    const client = await SubmissionClient.connect(server.submissionPort!);
    const hello = await client.secureHello();
    expect(hello.lines).toContain(`SIZE ${MAX_BYTES}`);
    expect((await client.authPlain(key)).code).toBe(235);

    const big = plainMessage({ from, to: 'reader@example.org', body: 'x'.repeat(70).concat('\r\n').repeat(400) });
    expect(big.length).toBeGreaterThan(MAX_BYTES);
    const refused = await client.send(from, ['reader@example.org'], big);
    expect(refused.code).toBe(552);
    expect(refused.text).toContain(String(MAX_BYTES));
    // Declared up front, it is refused at MAIL.
    expect((await client.command(`MAIL FROM:<${from}> SIZE=${MAX_BYTES + 1}`)).code).toBe(552);
    expect(await emailCount(server, key)).toBe(0);

    // The session goes on, and a message under the limit is taken.
    const fits = plainMessage({ from, to: 'reader@example.org', body: 'x'.repeat(70).concat('\r\n').repeat(200) });
    expect(fits.length).toBeLessThan(MAX_BYTES);
    queuedId(await client.send(from, ['reader@example.org'], fits));
    await client.quit();
    expect(await emailCount(server, key)).toBe(1);
  });

  it(`after ${FAILURES} wrong keys from one address, its next AUTH (even with a right key) and its new connections get 421; other addresses are not affected`, async () => {
    const { apiKey: key } = await server.team('throttled');
    const address = '127.0.0.9';
    // Connected and through STARTTLS before the address is refused.
    const waiting = await SubmissionClient.connect(server.submissionPort!, { localAddress: address });
    await waiting.secureHello();

    const guesser = await SubmissionClient.connect(server.submissionPort!, { localAddress: address });
    await guesser.secureHello();
    const answers = [];
    const started = Date.now();
    for (let i = 0; i < FAILURES; i++) answers.push(await guesser.authPlain(`mr_guess_${i}`));
    // Each failure after the first is answered later than the one before: 250 ms, then 500 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(700);
    expect(answers.slice(0, FAILURES - 1).map((a) => a.code)).toEqual(Array(FAILURES - 1).fill(535));
    // The failure that reaches the limit already says so, and the connection is closed.
    expect(answers[FAILURES - 1]!.code).toBe(421);
    await guesser.closed;

    const blocked = await waiting.authPlain(key);
    expect(blocked.code).toBe(421);
    expect(blocked.text).toMatch(/failed logins/);
    await waiting.closed;

    const again = await SubmissionClient.connect(server.submissionPort!, { localAddress: address });
    expect(again.greeting.code).toBe(421);
    expect(again.greeting.text).toMatch(/failed logins/);
    await again.closed;
    const overTls = await SubmissionClient.connect(server.submissionTlsPort!, { tls: true, localAddress: address });
    expect(overTls.greeting.code).toBe(421);
    await overTls.closed;

    const elsewhere = await signedIn(server.submissionPort!, key, { localAddress: '127.0.0.10' });
    await elsewhere.quit();
  });
});

describe('SMTP submission rate limit', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_PER_SECOND: '2' }, { submission: true });
  });
  afterAll(() => server?.stop());

  it('a burst over the team rate limit gets 451 naming the limit, and the session sends again once the second is over', async () => {
    const { key, domain } = await teamWithDomain(server, 'burst');
    const from = `app@${domain.name}`;
    const client = await signedIn(server.submissionPort!, key);
    const replies = [];
    for (let i = 0; i < 6; i++) replies.push(await client.send(from, ['reader@example.org'], plainMessage({ from, to: 'reader@example.org', subject: `Burst ${i}` })));
    const limited = replies.filter((reply) => reply.code === 451);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]!.text).toMatch(/^4\.7\.0 Rate limit of 2 messages per second exceeded/);
    const accepted = replies.filter((reply) => reply.code === 250);
    expect(accepted.length + limited.length).toBe(6);

    await sleep(1_100);
    const later = await client.send(from, ['reader@example.org'], plainMessage({ from, to: 'reader@example.org', subject: 'Later' }));
    queuedId(later);
    await client.quit();
    const stored = await server.deps.db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('n')).where('domain_id', '=', domain.id).executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(accepted.length + 1);
  });
});
