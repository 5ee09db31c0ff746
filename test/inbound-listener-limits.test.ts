import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFeedbackServer } from './helpers/feedback.js';
import { waitFor } from './helpers/wait.js';

/** The inbound listener faces the internet: one client must not be able to take it from the others. */
let env: Awaited<ReturnType<typeof startFeedbackServer>>;

beforeAll(async () => {
  env = await startFeedbackServer();
}, 30_000);
afterAll(() => env.stop());

type Session = { socket: net.Socket; replies: string[]; closed: Promise<void> };

/** A raw SMTP session from `localAddress` (any of 127.0.0.0/8 is loopback), once its greeting arrived. */
async function open(localAddress: string): Promise<Session> {
  const socket = net.connect({ host: '127.0.0.1', port: env.server.inboundPort!, localAddress });
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
  await waitFor('the greeting', async () => replies.length, (n) => n > 0, 5_000);
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
    }, (greeting) => greeting.startsWith('220'), 5_000);
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
