import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { dataBlock } from '../src/sending/transports/relay-session.js';
import { parseRelayUrl } from '../src/sending/transports/relay-url.js';
import { smtpTransport } from '../src/sending/transports/smtp.js';
import type { Transport } from '../src/sending/transports/types.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';

const message = (id: string, body = 'Hello') =>
  Buffer.from(`Message-ID: <${id}@relay.test>\r\nFrom: a@relay.test\r\nTo: b@example.org\r\nSubject: Hi\r\n\r\n${body}\r\n`);

let sink: SmtpSink | undefined;
let transport: Transport | undefined;

afterEach(async () => {
  await transport?.close();
  await sink?.close();
  transport = undefined;
  sink = undefined;
});

const relay = (url: string, poolSize = 1) =>
  (transport = smtpTransport({ url, poolSize, maxMessagesPerConnection: 1000, timeoutMs: 5000 }));

describe('the SMTP relay client', () => {
  it('pipelines many messages over one connection: each arrives once, and a refused recipient of one never touches the one behind it', async () => {
    sink = await startSmtpSink();
    sink.rule = { rcpt: (address) => (address.startsWith('refused') ? { code: 550, message: '5.1.1 no such user' } : null) };
    const client = relay(sink.url, 1);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const to = i % 3 === 0 ? [`refused${i}@example.org`] : i % 3 === 1 ? [`ok${i}@example.org`, `refused${i}@example.org`] : [`ok${i}@example.org`];
        return client.send(`m${i}`, message(`m${i}`), { from: 'bounce@relay.test', to });
      }),
    );
    results.forEach((result, i) => {
      if (i % 3 === 0) expect(result).toMatchObject({ kind: 'permanent', code: 550, rejected: [{ address: `refused${i}@example.org`, code: 550 }] });
      else if (i % 3 === 1) expect(result).toMatchObject({ kind: 'sent', rejected: [{ address: `refused${i}@example.org`, code: 550 }] });
      else expect(result).toMatchObject({ kind: 'sent', rejected: [] });
    });
    for (let i = 0; i < 60; i++) {
      expect(sink.forEmail(`m${i}`).map((received) => received.rcptTo)).toEqual(i % 3 === 0 ? [] : [[`ok${i}@example.org`]]);
    }
    expect(sink.openSessions()).toBe(1);
  });

  it('a relay without PIPELINING gets one command at a time, with the same answers', async () => {
    sink = await startSmtpSink({ hidePIPELINING: true });
    sink.rule = { rcpt: (address) => (address.startsWith('later') ? { code: 451, message: '4.2.0 try later' } : null) };
    const client = relay(sink.url, 2);
    const [sent, deferred, mixed] = await Promise.all([
      client.send('p1', message('p1'), { from: 'bounce@relay.test', to: ['one@example.org'] }),
      client.send('p2', message('p2'), { from: 'bounce@relay.test', to: ['later@example.org'] }),
      client.send('p3', message('p3'), { from: 'bounce@relay.test', to: ['two@example.org', 'later@example.org'] }),
    ]);
    expect(sent).toMatchObject({ kind: 'sent' });
    expect(deferred).toMatchObject({ kind: 'temporary', code: 451 });
    expect(mixed).toMatchObject({ kind: 'sent', rejected: [{ address: 'later@example.org', code: 451 }] });
    expect(sink.received.map((received) => received.rcptTo).sort()).toEqual([['one@example.org'], ['two@example.org']]);
  });

  it('a line that starts with a dot, and bare line feeds, arrive as they were written', async () => {
    sink = await startSmtpSink();
    const client = relay(sink.url);
    const body = '.hidden line\n..two dots\nlast line without an ending';
    const raw = Buffer.from(`Message-ID: <dots@relay.test>\nSubject: Dots\n\n${body}`);
    expect(await client.send('dots', raw, { from: 'bounce@relay.test', to: ['b@example.org'] })).toMatchObject({ kind: 'sent' });
    const [received] = sink.forEmail('dots');
    expect(received!.raw.toString()).toBe(`Message-ID: <dots@relay.test>\r\nSubject: Dots\r\n\r\n${body.replaceAll('\n', '\r\n')}\r\n`);
  });

  it('logs in with AUTH LOGIN over STARTTLS when the relay offers only LOGIN', async () => {
    sink = await startSmtpSink({ auth: { user: 'relay', pass: 'secret' }, authMethods: ['LOGIN'] });
    const client = relay(`${sink.url}/?tls.rejectUnauthorized=false`);
    expect(await client.send('login', message('login'), { from: 'bounce@relay.test', to: ['b@example.org'] })).toMatchObject({ kind: 'sent' });
    expect(sink.forEmail('login')).toMatchObject([{ secure: true, user: 'relay' }]);
  });

  it('wrong credentials are a temporary failure with the relay\'s answer, never a bounce', async () => {
    sink = await startSmtpSink({ auth: { user: 'relay', pass: 'secret' } });
    const client = relay(`smtp://relay:wrong@127.0.0.1:${sink.port}/?tls.rejectUnauthorized=false`);
    const result = await client.send('denied', message('denied'), { from: 'bounce@relay.test', to: ['b@example.org'] });
    expect(result).toMatchObject({ kind: 'temporary', code: 535, response: expect.stringContaining('Authentication failed') });
    await expect(client.check()).rejects.toThrow(/535 Authentication failed/);
    expect(sink.received).toEqual([]);
  });

  it('with requireTLS, a relay that offers no STARTTLS gets nothing', async () => {
    sink = await startSmtpSink();
    const client = relay(`${sink.url}/?requireTLS=true`);
    const result = await client.send('clear', message('clear'), { from: 'bounce@relay.test', to: ['b@example.org'] });
    expect(result).toMatchObject({ kind: 'temporary', code: null, response: expect.stringMatching(/requires TLS/) });
    expect(sink.received).toEqual([]);
  });

  it('an envelope address that would end its command line early is refused, and nothing reaches the relay', async () => {
    sink = await startSmtpSink();
    const client = relay(sink.url);
    const smuggled = await client.send('smuggle', message('smuggle'), { from: 'bounce@relay.test', to: ['a@example.org>\r\nRCPT TO:<b@example.org'] });
    expect(smuggled).toMatchObject({ kind: 'permanent', response: expect.stringMatching(/line break/) });
    expect(sink.received).toEqual([]);
    expect(sink.openSessions()).toBe(0);
  });

  it('a relay that answers with an endless line is cut off: the attempt is temporary and memory stays bounded', async () => {
    const endless = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.write(`220-${'x'.repeat(200_000)}`);
    });
    await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
    try {
      const client = relay(`smtp://127.0.0.1:${(endless.address() as AddressInfo).port}`);
      const result = await client.send('endless', message('endless'), { from: 'bounce@relay.test', to: ['b@example.org'] });
      expect(result).toMatchObject({ kind: 'temporary', code: null, response: expect.stringMatching(/longer than 65536/) });
    } finally {
      await new Promise<void>((resolve) => endless.close(() => resolve()));
    }
  });

  it('SMTP_URL settings are read, and one it does not know stops the start', () => {
    expect(parseRelayUrl('smtps://u%40x:p%20w@relay.example.com')).toMatchObject({
      host: 'relay.example.com', port: 465, secure: true, auth: { user: 'u@x', pass: 'p w' }, servername: 'relay.example.com',
    });
    expect(parseRelayUrl('smtp://127.0.0.1:2525/?requireTLS=true&tls.rejectUnauthorized=false&name=mail.example.com')).toMatchObject({
      port: 2525, secure: false, requireTLS: true, rejectUnauthorized: false, clientName: 'mail.example.com', servername: undefined, auth: null,
    });
    expect(() => parseRelayUrl('smtp://relay.example.com/?requireTSL=true')).toThrow(/unknown setting "requireTSL"/);
    expect(() => parseRelayUrl('smtp://relay.example.com/?secure=yes')).toThrow(/secure must be true or false/);
    expect(() => parseRelayUrl('http://relay.example.com')).toThrow(/smtp:\/\/ or smtps:\/\//);
  });

  it('DATA carries a built message as it is, without a copy', () => {
    const built = message('plain');
    const [first, end] = dataBlock(built);
    expect(first).toBe(built);
    expect(end!.toString()).toBe('.\r\n');
  });
});
