import { readFile } from 'node:fs/promises';
import path from 'node:path';
import PostalMime from 'postal-mime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyDkim } from './helpers/dkim.js';
import { DIRECT_TEST_SETTINGS } from './helpers/direct-delivery.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { dnsVerifiedDomain } from './helpers/domains.js';
import { statusesOf, waitForEmail, settled } from './helpers/emails.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startMxReceivers, type MxReceivers } from './helpers/mx-receivers.js';
import { messageIdOf, startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';

/**
 * One spec, every transport: what a recipient gets is the same whichever way the message left.
 * Each driver says how to read back what went out.
 */
type Driver = {
  name: string;
  env(): Record<string, string>;
  /** The raw message sent for the email, and its envelope where the driver keeps one. */
  sent(server: TestServer, emailId: string): Promise<{ raw: Buffer; envelope: { from: string; to: string[] } | null }>;
  /** The events after QUEUED when the message is accepted. */
  acceptedEvents: string[];
};

let sink: SmtpSink;
const drivers: Driver[] = [
  {
    name: 'smtp',
    env: () => ({ SMTP_URL: sink.url }),
    async sent(_server, emailId) {
      const [message] = sink.forEmail(emailId);
      return { raw: message!.raw, envelope: { from: message!.mailFrom, to: message!.rcptTo } };
    },
    acceptedEvents: ['SENT', 'DELIVERED'],
  },
  {
    name: 'direct',
    env: () => ({ ...DIRECT_TEST_SETTINGS, DIRECT_MX_PORT: String(mx.port) }),
    async sent(_server, emailId) {
      const [message] = mx.all().filter((m) => messageIdOf(m.raw)?.startsWith(`${emailId}@`));
      return { raw: message!.raw, envelope: { from: message!.mailFrom, to: message!.rcptTo } };
    },
    acceptedEvents: ['SENT', 'DELIVERED'],
  },
  {
    name: 'capture',
    env: () => ({}),
    async sent(server, emailId) {
      return { raw: await readFile(path.join(server.deps.config.dataDir, 'outbox', `${emailId}.eml`)), envelope: null };
    },
    acceptedEvents: ['SENT', 'DELIVERED'],
  },
];

let dns: TestDnsServer;
let mx: MxReceivers;
beforeAll(async () => {
  dns = await startDnsServer();
  sink = await startSmtpSink({ closeTimeout: 100 });
  // Recipients' mail servers for the direct transport: example.org's MX on loopback.
  mx = await startMxReceivers(['127.0.0.2']);
  dns.set('mx.example-mail.test', [{ type: 'A', address: '127.0.0.2' }]);
  dns.set('example.org', [{ type: 'MX', exchange: 'mx.example-mail.test', priority: 10 }]);
});
afterAll(async () => {
  await sink.close();
  await mx.close();
  await dns.close();
});

const PDF = Buffer.from('%PDF-1.4\n% a tiny but binary \x00\x01\x02\xff attachment\n');
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, ...Array.from({ length: 300 }, (_, i) => i % 256)]);

describe.each(drivers)('the $name transport', (driver) => {
  let server: TestServer;
  let key: string;
  let domainName: string;

  beforeAll(async () => {
    server = await startTestServer({ DNS_SERVERS: dns.address, DISPATCH_POLL_MS: '50', ...driver.env() });
    key = (await server.team()).apiKey;
    domainName = (await dnsVerifiedDomain(server, key, dns, `${driver.name}-send.test`)).name;
  });
  afterAll(() => server.stop());

  it('delivers exactly the mail asked for: headers, text and html, attachments, DKIM-signed, Bcc only in the envelope', async () => {
    const html = '<html><head><style>p{color:red}</style></head><body><h1>Grüße</h1><p>Hello <b>Ada</b>,<br>see <a href="https://example.com/x?a=1&amp;b=2">the link</a>.</p></body></html>';
    const res = await server.call('POST', '/v1/emails', {
      key,
      body: {
        from: `Café Ünïcode <news@${domainName}>`,
        to: ['Ada Lovelace <ada@example.org>', 'bob@example.org'],
        cc: 'carol@example.org',
        bcc: ['secret@example.org'],
        replyTo: 'replies@example.org',
        subject: 'Grüße aus Köln — a subject long enough to need more than one encoded word, surely 🎉',
        html,
        headers: { 'X-Campaign': 'spring', 'X-Note': 'naïve' },
        attachments: [
          { filename: 'report.pdf', content: PDF.toString('base64') },
          { filename: 'bild ö.png', content: PNG.toString('base64').replace(/.{60}/g, '$&\n') },
        ],
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const { emailId } = res.body;
    const email = await waitForEmail(server, key, emailId, settled);
    expect(statusesOf(email)).toEqual(['QUEUED', ...driver.acceptedEvents]);

    const { raw, envelope } = await driver.sent(server, emailId);
    const [dkim] = await verifyDkim(dns, raw);
    expect(dkim).toMatchObject({ signingDomain: domainName, status: { result: 'pass' } });

    const text = raw.toString('latin1');
    const headerBlock = text.slice(0, text.indexOf('\r\n\r\n'));
    expect(headerBlock).not.toMatch(/^bcc:/im);
    expect(text).not.toContain('secret@example.org');
    expect(headerBlock).toMatch(new RegExp(`^Message-ID: <${emailId}@${domainName}>$`, 'm'));
    expect(headerBlock).toMatch(/^MIME-Version: 1\.0$/m);
    expect(headerBlock).toMatch(/^Date: \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d \+0000$/m);
    for (const line of text.split('\r\n')) expect(line.length).toBeLessThanOrEqual(998);

    const parsed = await PostalMime.parse(raw);
    expect(parsed.from).toMatchObject({ name: 'Café Ünïcode', address: `news@${domainName}` });
    expect(parsed.to).toEqual([{ name: 'Ada Lovelace', address: 'ada@example.org' }, { name: '', address: 'bob@example.org' }]);
    expect(parsed.cc).toEqual([{ name: '', address: 'carol@example.org' }]);
    expect(parsed.replyTo).toEqual([{ name: '', address: 'replies@example.org' }]);
    expect(parsed.subject).toBe('Grüße aus Köln — a subject long enough to need more than one encoded word, surely 🎉');
    expect(parsed.headers.find((h) => h.key === 'x-campaign')?.value).toBe('spring');
    // Non-ASCII values travel as RFC 2047 encoded words (the parser leaves custom headers as they came).
    const note = /^=\?UTF-8\?B\?([^?]+)\?=$/.exec(parsed.headers.find((h) => h.key === 'x-note')!.value)!;
    expect(Buffer.from(note[1]!, 'base64').toString()).toBe('naïve');
    expect(parsed.html?.trim()).toBe(html);
    expect(parsed.text).toContain('Grüße');
    expect(parsed.text).toContain('Hello Ada,\nsee the link (https://example.com/x?a=1&b=2).');
    expect(parsed.text).not.toContain('color:red');
    expect(parsed.attachments.map((a) => ({ filename: a.filename, mimeType: a.mimeType, content: Buffer.from(a.content as ArrayBuffer) }))).toEqual([
      { filename: 'report.pdf', mimeType: 'application/pdf', content: PDF },
      { filename: 'bild ö.png', mimeType: 'image/png', content: PNG },
    ]);

    if (envelope) {
      expect(envelope.from).toMatch(new RegExp(`^bounces\\+${emailId}\\.[0-9a-f]{16}@mail\\.${domainName.replaceAll('.', '\\.')}$`));
      expect(envelope.to.sort()).toEqual(['ada@example.org', 'bob@example.org', 'carol@example.org', 'secret@example.org']);
    }
  });

  it('a text-only email goes out as a single text/plain part, DKIM-signed', async () => {
    const res = await server.call('POST', '/v1/emails', {
      key,
      body: { from: `news@${domainName}`, to: 'reader@example.org', subject: 'Plain', text: 'Line one\nLine two with = sign and a long line '.repeat(10) },
    });
    const { emailId } = res.body;
    await waitForEmail(server, key, emailId, settled);
    const { raw } = await driver.sent(server, emailId);
    expect((await verifyDkim(dns, raw))[0]!.status.result).toBe('pass');
    const parsed = await PostalMime.parse(raw);
    expect(parsed.html).toBeUndefined();
    expect(parsed.text?.trim()).toBe('Line one\nLine two with = sign and a long line '.repeat(10).trim());
  });
});
