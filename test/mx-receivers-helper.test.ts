import { once } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import { UDPClient } from 'dns2';
import { afterEach, describe, expect, it } from 'vitest';
import { RCODE, startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { startMxReceivers, type MxReceivers } from './helpers/mx-receivers.js';
import { sleep, waitFor } from './helpers/wait.js';

/** The source address of every test client: not the 127.0.0.1 a socket gets by default. */
const CLIENT = '127.0.0.9';

type Dialogue = {
  /** The next whole reply, every line of a multi-line one, e.g. `250-… \r\n250 SIZE 52428800`. */
  reply(): Promise<string>;
  /** Sends a line and answers the reply to it. */
  say(line: string): Promise<string>;
  /** STARTTLS, then a TLS handshake that does not verify the certificate, as most MTAs do. */
  starttls(): Promise<void>;
  /** Resolves once the connection is closed. */
  closed: Promise<void>;
  end(): void;
};

/** A raw SMTP client, to see each reply exactly as the receiver sends it. */
async function dial(address: string, port: number): Promise<Dialogue> {
  const raw = net.connect({ host: address, port, localAddress: CLIENT });
  await once(raw, 'connect');
  // A receiver that closes on us may reset the connection: `closed` tells it.
  raw.on('error', () => {});
  let socket: net.Socket = raw;
  let text = '';
  let ended = false;
  let wake = () => {};
  const read = (chunk: Buffer) => {
    text += chunk.toString('latin1');
    wake();
  };
  raw.on('data', read);
  const closed = new Promise<void>((resolve) =>
    raw.once('close', () => {
      ended = true;
      wake();
      resolve();
    }),
  );
  const reply = async () => {
    for (;;) {
      const whole = /^(?:\d{3}-[^\r\n]*\r\n)*\d{3}(?: [^\r\n]*)?\r\n/.exec(text);
      if (whole) {
        text = text.slice(whole[0].length);
        return whole[0].trimEnd();
      }
      if (ended) throw new Error(`Connection closed before a reply; unread: ${JSON.stringify(text)}`);
      await new Promise<void>((resolve) => (wake = resolve));
    }
  };
  const say = (line: string) => {
    socket.write(`${line}\r\n`);
    return reply();
  };
  return {
    reply,
    say,
    closed,
    end: () => socket.end(),
    async starttls() {
      expect(await say('STARTTLS')).toMatch(/^220 /);
      raw.off('data', read);
      const secure = tls.connect({ socket: raw, rejectUnauthorized: false });
      secure.on('data', read);
      await once(secure, 'secureConnect');
      socket = secure;
    },
  };
}

const body = (subject: string) => `Subject: ${subject}\r\n\r\nHello\r\n.`;

/** EHLO, MAIL FROM, every RCPT TO, and DATA if a recipient was taken: answers the replies that matter. */
async function mail(session: Dialogue, envelope: { helo: string; from: string; to: string[]; subject?: string }) {
  expect(await session.say(`EHLO ${envelope.helo}`)).toMatch(/^250 /m);
  expect(await session.say(`MAIL FROM:<${envelope.from}>`)).toMatch(/^250 /);
  const rcpt: string[] = [];
  for (const to of envelope.to) rcpt.push(await session.say(`RCPT TO:<${to}>`));
  if (!rcpt.some((r) => r.startsWith('250'))) return { rcpt, data: null };
  expect(await session.say('DATA')).toMatch(/^354 /);
  return { rcpt, data: await session.say(body(envelope.subject ?? 'hi')) };
}

/** Opens a session and reads the greeting. */
async function greeted(address: string, port: number) {
  const session = await dial(address, port);
  expect(await session.reply()).toMatch(/^220 /);
  return session;
}

describe('MX receivers', () => {
  let mx: MxReceivers | undefined;
  afterEach(async () => {
    await mx?.close();
    mx = undefined;
  });
  const start = async (options?: { starttls?: boolean }) => (mx = await startMxReceivers(['127.0.0.2', '127.0.0.3'], options));

  it('share one port across addresses, and each message lands at the receiver dialled, with the client source address and HELO name', async () => {
    const { port, byAddress, all } = await start();
    for (const [address, n] of [['127.0.0.2', 2], ['127.0.0.3', 3]] as const) {
      const session = await greeted(address, port);
      const { data } = await mail(session, { helo: `Out${n}.mailroom.test`, from: 'bounce@mailroom.test', to: [`user${n}@example.org`], subject: `to ${n}` });
      expect(data).toMatch(/^250 /);
      expect(await session.say('QUIT')).toMatch(/^221 /);
    }
    for (const n of [2, 3]) {
      const receiver = byAddress(`127.0.0.${n}`);
      expect(receiver.received).toHaveLength(1);
      expect(receiver.received[0]).toMatchObject({
        receiver: `127.0.0.${n}`,
        mailFrom: 'bounce@mailroom.test',
        rcptTo: [`user${n}@example.org`],
        secure: false,
        helo: `out${n}.mailroom.test`,
        remoteAddress: CLIENT,
      });
      expect(receiver.received[0]!.raw.toString()).toContain(`Subject: to ${n}`);
      expect(receiver.helos).toEqual([`out${n}.mailroom.test`]);
      expect(receiver.remoteAddresses).toEqual([CLIENT]);
    }
    expect(all().map((m) => m.receiver)).toEqual(['127.0.0.2', '127.0.0.3']);
  });

  it('offer STARTTLS with a certificate clients take unverified, and mark what came over TLS secure; starttls: false offers none', async () => {
    const { port, byAddress } = await start();
    const session = await greeted('127.0.0.2', port);
    expect(await session.say('EHLO out.mailroom.test')).toMatch(/^250[- ]STARTTLS$/m);
    await session.starttls();
    const { data } = await mail(session, { helo: 'out.mailroom.test', from: 'a@mailroom.test', to: ['b@example.org'] });
    expect(data).toMatch(/^250 /);
    expect(byAddress('127.0.0.2').received.map((m) => m.secure)).toEqual([true]);
    await mx!.close();

    const plain = await start({ starttls: false });
    const other = await greeted('127.0.0.3', plain.port);
    const ehlo = await other.say('EHLO out.mailroom.test');
    expect(ehlo).toMatch(/^250 /m);
    expect(ehlo).not.toContain('STARTTLS');
  });

  it('refuse one recipient of two with a 550 and take the message for the other', async () => {
    const { port, byAddress } = await start();
    const receiver = byAddress('127.0.0.2');
    receiver.behaviour = { rcpt: (address) => (address.startsWith('gone') ? { code: 550, message: '5.1.1 No such user' } : null) };
    const { rcpt, data } = await mail(await greeted('127.0.0.2', port), { helo: 'out.mailroom.test', from: 'a@mailroom.test', to: ['gone@example.org', 'here@example.org'] });
    expect(rcpt[0]).toBe('550 5.1.1 No such user');
    expect(rcpt[1]).toMatch(/^250 /);
    expect(data).toMatch(/^250 /);
    expect(receiver.received.map((m) => m.rcptTo)).toEqual([['here@example.org']]);
    expect(receiver.refusals).toEqual(['550 5.1.1 No such user']);
  });

  it('greylist with the tries count: 451 for the first RCPT of an address, 250 when it is tried again', async () => {
    const { port, byAddress } = await start();
    const receiver = byAddress('127.0.0.2');
    receiver.behaviour = { rcpt: (_address, tries) => (tries === 0 ? { code: 451, message: '4.7.1 Greylisted, try again later' } : null) };
    const first = await mail(await greeted('127.0.0.2', port), { helo: 'out.mailroom.test', from: 'a@mailroom.test', to: ['b@example.org'] });
    expect(first).toEqual({ rcpt: ['451 4.7.1 Greylisted, try again later'], data: null });
    const again = await mail(await greeted('127.0.0.2', port), { helo: 'out.mailroom.test', from: 'a@mailroom.test', to: ['b@example.org'] });
    expect(again.rcpt[0]).toMatch(/^250 /);
    expect(again.data).toMatch(/^250 /);
    expect(receiver.received).toHaveLength(1);
    // Counted per receiver: the other one has not seen the address.
    byAddress('127.0.0.3').behaviour = receiver.behaviour;
    const elsewhere = await mail(await greeted('127.0.0.3', port), { helo: 'out.mailroom.test', from: 'a@mailroom.test', to: ['b@example.org'] });
    expect(elsewhere.rcpt[0]).toMatch(/^451 /);
  });

  it('answer a 421 instead of the greeting and close, having told the connect rule the client address', async () => {
    const { port, byAddress } = await start();
    const seen: string[] = [];
    byAddress('127.0.0.2').behaviour = {
      connect: ({ remoteAddress }) => {
        seen.push(remoteAddress);
        return { code: 421, message: 'mx.example.org Too busy, try later' };
      },
    };
    const session = await dial('127.0.0.2', port);
    expect(await session.reply()).toBe('421 mx.example.org Too busy, try later');
    await session.closed;
    expect(seen).toEqual([CLIENT]);
    expect(byAddress('127.0.0.2').refusals).toEqual(['421 mx.example.org Too busy, try later']);
  });

  it("never greet on 'hang', and close without a word on 'close'", async () => {
    const { port, byAddress } = await start();
    byAddress('127.0.0.2').behaviour = { connect: () => 'hang' };
    byAddress('127.0.0.3').behaviour = { connect: () => 'close' };
    const hung = await dial('127.0.0.2', port);
    const dropped = await dial('127.0.0.3', port);
    await dropped.closed;
    await expect(dropped.reply()).rejects.toThrow('Connection closed before a reply; unread: ""');
    // Well past the 100 ms after which smtp-server greets.
    await sleep(300);
    expect(byAddress('127.0.0.2').openSessions()).toBe(1);
    hung.end();
    await hung.closed;
    await expect(hung.reply()).rejects.toThrow('unread: ""');
  });

  it('close the connection after a 421 at RCPT or at the final dot, and keep a refused message out of received', async () => {
    const { port, byAddress } = await start();
    const receiver = byAddress('127.0.0.2');
    receiver.behaviour = { rcpt: () => ({ code: 421, message: '4.3.2 Shutting down' }) };
    const atRcpt = await greeted('127.0.0.2', port);
    expect((await mail(atRcpt, { helo: 'out.mailroom.test', from: 'a@mailroom.test', to: ['b@example.org'] })).rcpt).toEqual(['421 4.3.2 Shutting down']);
    await atRcpt.closed;

    receiver.behaviour = { data: () => ({ code: 421, message: '4.3.2 Out of disk' }) };
    const atData = await greeted('127.0.0.2', port);
    expect((await mail(atData, { helo: 'out.mailroom.test', from: 'a@mailroom.test', to: ['b@example.org'] })).data).toBe('421 4.3.2 Out of disk');
    await atData.closed;
    expect(receiver.received).toEqual([]);
    expect(receiver.refusals).toEqual(['421 4.3.2 Shutting down', '421 4.3.2 Out of disk']);
  });

  it('wait replyDelayMs before answering the final dot', async () => {
    const { port, byAddress } = await start();
    byAddress('127.0.0.2').behaviour = { replyDelayMs: 300 };
    const session = await greeted('127.0.0.2', port);
    await session.say('EHLO out.mailroom.test');
    await session.say('MAIL FROM:<a@mailroom.test>');
    await session.say('RCPT TO:<b@example.org>');
    await session.say('DATA');
    const sent = Date.now();
    expect(await session.say(body('slow'))).toMatch(/^250 /);
    expect(Date.now() - sent).toBeGreaterThanOrEqual(290);
  });

  it('refuse TCP on a stopped address only, tell its open sessions 421, and listen again on the same port after start()', async () => {
    const { port, byAddress } = await start();
    const open = await greeted('127.0.0.2', port);
    await byAddress('127.0.0.2').stop();
    expect(await open.reply()).toBe('421 Server shutting down');
    await open.closed;
    await expect(dial('127.0.0.2', port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    (await greeted('127.0.0.3', port)).end();

    await byAddress('127.0.0.2').start();
    const back = await greeted('127.0.0.2', port);
    expect((await mail(back, { helo: 'out.mailroom.test', from: 'a@mailroom.test', to: ['b@example.org'] })).data).toMatch(/^250 /);
    expect(byAddress('127.0.0.2').received).toHaveLength(1);
  });

  it('count open sessions per receiver, keep the peak after they close, and restart it on resetPeak()', async () => {
    const { port, byAddress } = await start();
    const receiver = byAddress('127.0.0.2');
    const sessions = await Promise.all([greeted('127.0.0.2', port), greeted('127.0.0.2', port)]);
    expect(receiver.openSessions()).toBe(2);
    expect(byAddress('127.0.0.3').openSessions()).toBe(0);
    for (const session of sessions) session.end();
    await waitFor('both sessions closed', async () => receiver.openSessions(), (open) => open === 0, 2_000);
    expect(receiver.peakSessions).toBe(2);
    expect(byAddress('127.0.0.3').peakSessions).toBe(0);
    receiver.resetPeak();
    expect(receiver.peakSessions).toBe(0);
    (await greeted('127.0.0.2', port)).end();
    expect(receiver.peakSessions).toBe(1);
  });
});

describe('the test DNS server', () => {
  let dns: TestDnsServer | undefined;
  afterEach(async () => {
    await dns?.close();
    dns = undefined;
  });
  const query = (server: TestDnsServer, name: string, type: string) => {
    const [host, port] = server.address.split(':');
    return UDPClient({ dns: host, port: Number(port), timeout: 2_000 })(name, type);
  };

  it('puts the ttl of each record on the wire, 60 seconds when it has none', async () => {
    dns = await startDnsServer();
    dns.set('long.test', [{ type: 'A', address: '127.0.0.2', ttl: 3600 }]);
    dns.set('default.test', [{ type: 'A', address: '127.0.0.3' }]);
    dns.set('mail.test', [{ type: 'MX', exchange: 'mx1.mail.test', priority: 10, ttl: 300 }, { type: 'MX', exchange: 'mx2.mail.test', priority: 20 }]);
    expect(await dns.resolver.resolve4('long.test', { ttl: true })).toEqual([{ address: '127.0.0.2', ttl: 3600 }]);
    expect(await dns.resolver.resolve4('default.test', { ttl: true })).toEqual([{ address: '127.0.0.3', ttl: 60 }]);
    const mx = await query(dns, 'mail.test', 'MX');
    expect(mx.answers.map(({ exchange, priority, ttl }) => ({ exchange, priority, ttl }))).toEqual([
      { exchange: 'mx1.mail.test', priority: 10, ttl: 300 },
      { exchange: 'mx2.mail.test', priority: 20, ttl: 60 },
    ]);
  });

  it("serves a null MX (exchange '' or '.') as the root name with preference 0, which node reads as exchange ''", async () => {
    dns = await startDnsServer();
    dns.set('empty.test', [{ type: 'MX', exchange: '', priority: 0 }]);
    dns.set('dot.test', [{ type: 'MX', exchange: '.', priority: 0 }]);
    for (const name of ['empty.test', 'dot.test']) {
      expect(await dns.resolver.resolveMx(name)).toEqual([{ exchange: '', priority: 0 }]);
      // dns2 decodes a name label by label: no label at all is the root.
      const answer = await query(dns, name, 'MX');
      expect(answer.answers.map(({ exchange, priority }) => ({ exchange, priority }))).toEqual([{ exchange: '', priority: 0 }]);
    }
  });

  it('answers NODATA (NOERROR, no answers) for a type a name lacks, and NXDOMAIN for a name it lacks', async () => {
    dns = await startDnsServer();
    dns.set('a-only.test', [{ type: 'A', address: '127.0.0.2' }]);
    await expect(dns.resolver.resolveMx('a-only.test')).rejects.toMatchObject({ code: 'ENODATA' });
    const nodata = await query(dns, 'a-only.test', 'MX');
    expect({ rcode: nodata.header.rcode, answers: nodata.answers }).toEqual({ rcode: RCODE.NOERROR, answers: [] });
    await expect(dns.resolver.resolveMx('missing.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    expect((await query(dns, 'missing.test', 'MX')).header.rcode).toBe(RCODE.NXDOMAIN);
  });
});
