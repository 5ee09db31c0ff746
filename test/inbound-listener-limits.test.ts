import net from 'node:net';
import os from 'node:os';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientLimits } from '../src/smtp/client-limits.js';
import { listen } from '../src/smtp/listener-parts.js';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { postfixDsn } from './helpers/reports.js';
import { waitFor } from './helpers/wait.js';

/** The inbound listener faces the internet: one client must not be able to take it from the others. */
let env: Awaited<ReturnType<typeof startFeedbackServer>>;

beforeAll(async () => {
  env = await startFeedbackServer();
}, 30_000);
afterAll(() => env.stop());

type Session = { socket: net.Socket; replies: string[]; closed: Promise<void> };

/**
 * A raw SMTP session from `localAddress` (any of 127.0.0.0/8 is loopback; an IPv6 one connects to
 * ::1), once its greeting arrived. With `proxyFrom`, it first sends a PROXY protocol header saying
 * it comes from that address, for a listener that takes one.
 */
async function open(localAddress: string, port = env.server.inboundPort!, proxyFrom?: string): Promise<Session> {
  const socket = net.connect({ host: net.isIPv6(localAddress) ? '::1' : '127.0.0.1', port, localAddress });
  if (proxyFrom) socket.write(`PROXY TCP6 ${proxyFrom} 2001:db8::25 40000 25\r\n`);
  const replies: string[] = [];
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\r\n');
    buffered = lines.pop()!;
    replies.push(...lines);
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await waitFor('the greeting', async () => replies.length, (n) => n > 0);
  return { socket, replies, closed };
}

describe('the inbound listener shares itself fairly', () => {
  it('one client address gets at most 10 sessions at once; the next is refused with 421 while other clients are still served', async () => {
    const held = await Promise.all(Array.from({ length: 10 }, () => open('127.0.0.1')));
    expect(held.map((s) => s.replies[0]!.slice(0, 3))).toEqual(Array(10).fill('220'));
    const refused = await open('127.0.0.1');
    expect(refused.replies[0]).toMatch(/^421 /);
    await refused.closed;
    const other = await open('127.0.0.2');
    expect(other.replies[0]).toMatch(/^220 /);

    for (const session of [...held, other]) session.socket.end('QUIT\r\n');
    await Promise.all(held.map((s) => s.closed));
    // Closed sessions give their places back.
    await waitFor('a place for 127.0.0.1 again', async () => {
      const again = await open('127.0.0.1');
      again.socket.end('QUIT\r\n');
      return again.replies[0]!;
    }, (greeting) => greeting.startsWith('220'));
  });

  it('one network (an IPv4 /24) gets at most 20 sessions at once, however many addresses it uses; the next is refused with 421 while another /24 is served', async () => {
    const held = await Promise.all(['127.0.1.1', '127.0.1.2'].flatMap((address) => Array.from({ length: 10 }, () => open(address))));
    expect(held.map((s) => s.replies[0]!.slice(0, 3))).toEqual(Array(20).fill('220'));
    const refused = await open('127.0.1.3');
    expect(refused.replies[0]).toMatch(/^421 4\.7\.0 Too many connections from your network/);
    await refused.closed;
    const other = await open('127.0.2.1');
    expect(other.replies[0]).toMatch(/^220 /);

    for (const session of [...held, other]) session.socket.end('QUIT\r\n');
    await Promise.all(held.map((s) => s.closed));
    await waitFor('a place for 127.0.1.3 again', async () => {
      const again = await open('127.0.1.3');
      again.socket.end('QUIT\r\n');
      return again.replies[0]!;
    }, (greeting) => greeting.startsWith('220'));
  });

  it('a session that loops on NOOP is answered 421 and closed after 1,000 commands', async () => {
    const session = await open('127.0.0.3');
    session.socket.write('NOOP\r\n'.repeat(1_005));
    await session.closed;
    const answers = session.replies.slice(1);
    expect(answers.slice(0, 1_000).every((line) => line.startsWith('250'))).toBe(true);
    expect(answers[1_000]).toMatch(/^421 /);
    expect(answers).toHaveLength(1_001);
  });
});

/**
 * IPv6: one host can take any address of its /64 at will, so the listener counts a /64 as one
 * client (src/smtp/client-keys.ts). Over real sockets, from ::1 (of ::/64) and, where this machine
 * has one, an address of another /64, to a listener on ::1.
 */
describe('the inbound listener counts an IPv6 /64 as one client', () => {
  let v6: Awaited<ReturnType<typeof startFeedbackServer>>;
  const port = () => v6.server.inboundPort!;
  // An address of this machine outside ::/64 (where ::1 is), if it has one: another network.
  const otherNetwork = Object.values(os.networkInterfaces()).flat()
    .find((address) => address?.family === 'IPv6' && !address.internal && !address.address.startsWith('fe80:'))?.address;

  beforeAll(async () => {
    v6 = await startFeedbackServer({ INBOUND_SMTP_HOST: '::1' });
  }, 30_000);
  afterAll(() => v6.stop());

  async function fillFromLoopback(): Promise<Session[]> {
    const held = await Promise.all(Array.from({ length: 10 }, () => open('::1', port())));
    expect(held.map((s) => s.replies[0]!.slice(0, 3))).toEqual(Array(10).fill('220'));
    const refused = await open('::1', port());
    expect(refused.replies[0]).toMatch(/^421 4\.7\.0 Too many connections from your /);
    await refused.closed;
    return held;
  }

  async function closeAll(sessions: Session[]) {
    for (const session of sessions) session.socket.end('QUIT\r\n');
    await Promise.all(sessions.map((s) => s.closed));
  }

  it('one IPv6 /64 gets at most 10 sessions at once; the next is refused with 421 until one closes', async () => {
    const held = await fillFromLoopback();
    await closeAll(held);
    await waitFor('a place for ::1 again', async () => {
      const again = await open('::1', port());
      again.socket.end('QUIT\r\n');
      await again.closed;
      return again.replies[0]!;
    }, (greeting) => greeting.startsWith('220'));
  });

  it.skipIf(!otherNetwork)('while one IPv6 /64 holds all its places, a client of another /64 is served', async () => {
    const held = await fillFromLoopback();
    const other = await open(otherNetwork!, port());
    expect(other.replies[0]).toMatch(/^220 /);
    await closeAll([...held, other]);
  });
});

/**
 * Every address of one /64 is the same client: this machine cannot take two addresses of one /64
 * as source addresses, so here the limiter both listeners use (ClientLimits) runs in a listener
 * that reads each client's address from a PROXY protocol header, as smtp-server takes one; the
 * sockets are real, their addresses are what the headers say.
 */
describe('the listeners\' limiter counts every address of an IPv6 /64 as one client', () => {
  let proxied: SMTPServer;
  let port: number;

  beforeAll(async () => {
    const limits = new ClientLimits({ perClient: 10, perNetwork: 20, commandsPerSession: 1_000, commandMs: 60_000, sessionMs: 300_000, maxMessageBytes: 1024 * 1024 });
    proxied = new SMTPServer({
      useProxy: true, logger: false, authOptional: true, disabledCommands: ['AUTH', 'STARTTLS'],
      onConnect: (session, callback) => limits.admit(proxied, session, callback),
      onClose: (session) => limits.release(session),
    });
    port = (await listen(proxied, '127.0.0.1', 0)).port;
  });
  afterAll(() => new Promise<void>((resolve) => proxied.close(() => resolve())));

  it('sessions from ten addresses of one /64 take all its places; an eleventh address of it is refused with 421 while another /64 is served', async () => {
    const held = await Promise.all(Array.from({ length: 10 }, (_, n) => open('127.0.0.1', port, `2001:db8:1:2::${(n + 1).toString(16)}`)));
    expect(held.map((s) => s.replies[0]!.slice(0, 3))).toEqual(Array(10).fill('220'));
    const refused = await open('127.0.0.1', port, '2001:db8:1:2:ffff:ffff:ffff:fffe');
    expect(refused.replies[0]).toMatch(/^421 4\.7\.0 Too many connections from your /);
    await refused.closed;
    const other = await open('127.0.0.1', port, '2001:db8:1:3::1');
    expect(other.replies[0]).toMatch(/^220 /);
    for (const session of [...held, other]) session.socket.end('QUIT\r\n');
    await Promise.all(held.map((s) => s.closed));
  });
});

/**
 * Deadlines: a client that sends a byte now and then holds a place for as long as it likes unless
 * time is counted per step and per session. Here the session deadline is 10 s, so the command
 * deadline is 2 s (a fifth of it) and the message deadline is the session's.
 */
describe('the inbound listener lets no session outlive its deadlines', () => {
  let timed: Awaited<ReturnType<typeof startFeedbackServer>>;
  let team: FeedbackTeam;
  const port = () => timed.server.inboundPort!;
  // The deadlines close the sessions below within seconds; without them they would last for good.
  const GIVE_UP_MS = 30_000;

  beforeAll(async () => {
    timed = await startFeedbackServer({ SMTP_LISTENER_SESSION_TIMEOUT_MS: '10000' });
    team = await feedbackTeam(timed.server, timed.sink, 'deadlines.test');
  }, 30_000);
  afterAll(() => timed.stop());

  /** Sends a byte on every session every 100 ms until the server closed them all. */
  async function trickleUntilClosed(sessions: Session[]) {
    let left = sessions.length;
    for (const session of sessions) void session.closed.then(() => left--);
    const trickle = setInterval(() => {
      for (const session of sessions) if (!session.socket.destroyed) session.socket.write('x');
    }, 100);
    try {
      await waitFor('the server closing the trickling sessions', async () => left, (n) => n === 0, GIVE_UP_MS);
    } finally {
      clearInterval(trickle);
      // Left open, they would hold the listener for the tests after this one.
      for (const session of sessions) session.socket.destroy();
    }
  }

  it('ten addresses holding all 100 places by trickling their messages a byte at a time are answered 421 4.4.2 and closed at the session deadline; then new clients are served', async () => {
    const { sent } = await team.send('attacked@receiver.example');
    // Ten addresses in ten networks, so that neither the per-address nor the per-network cap stops them.
    const attackers = await Promise.all(Array.from({ length: 100 }, (_, n) => open(`127.0.${10 + (n % 10)}.1`, port())));
    for (const attacker of attackers) attacker.socket.write(`EHLO attacker.test\r\nMAIL FROM:<>\r\nRCPT TO:<${sent.returnPath}>\r\nDATA\r\n`);
    await waitFor('every attacker in its message', async () => attackers.filter((a) => a.replies.some((line) => line.startsWith('354'))).length, (n) => n === 100);
    const turnedAway = await open('127.0.9.1', port());
    expect(turnedAway.replies[0]).toMatch(/^421 /);

    await trickleUntilClosed(attackers);
    expect(attackers.map((a) => a.replies.at(-1))).toEqual(Array(100).fill('421 4.4.2 Session timeout; closing'));
    const served = await open('127.0.9.1', port());
    expect(served.replies[0]).toMatch(/^220 /);
    served.socket.end('QUIT\r\n');
  });

  it('a client that sends half a command line and then trickles a byte at a time is answered 421 4.4.2 and closed at the command deadline', async () => {
    const session = await open('127.0.3.1', port());
    expect(session.replies[0]).toMatch(/^220 /);
    session.socket.write('EHLO half');
    await trickleUntilClosed([session]);
    expect(session.replies.slice(1)).toEqual(['421 4.4.2 Command timeout; closing']);
  });

  it('a report from a prompt client is still accepted and applied under the deadlines', async () => {
    const recipient = 'prompt@receiver.example';
    const { emailId, sent } = await team.send(recipient);
    const bounce = postfixDsn(sent, { recipient, action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' });
    expect(await timed.report(sent.returnPath, bounce)).toMatchObject({ accepted: true, code: 250 });
    expect((await team.email(emailId)).latestStatus).toBe('BOUNCED');
  });
});
