import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/server.js';
import { SubmissionClient } from './helpers/submission-client.js';
import { waitFor } from './helpers/wait.js';

/**
 * The submission listener shares the inbound listener's limits (src/smtp/client-limits.ts): a
 * client that trickles its message holds its place only until the session deadline, 10 s here.
 */
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ SMTP_LISTENER_SESSION_TIMEOUT_MS: '10000' }, { submission: true });
}, 30_000);
afterAll(() => server.stop());

describe('the submission listener lets no session outlive its deadline', () => {
  it('a signed-in client that keeps sending its message a byte at a time is answered 421 4.4.2 and closed at the session deadline', async () => {
    const { apiKey } = await server.team('Trickler');
    const client = await SubmissionClient.connect(server.submissionPort!);
    await client.secureHello();
    expect((await client.authPlain(apiKey)).code).toBe(235);
    expect((await client.command('MAIL FROM:<hello@trickler.test>')).code).toBe(250);
    expect((await client.command('RCPT TO:<reader@receiver.example>')).code).toBe(250);
    expect((await client.command('DATA')).code).toBe(354);

    const last = client.read();
    let closed = false;
    void client.closed.then(() => (closed = true));
    const trickle = setInterval(() => client.write('x'), 100);
    try {
      // Without the deadline the session would last for good.
      await waitFor('the server closing the trickling session', async () => closed, (done) => done, 30_000);
    } finally {
      clearInterval(trickle);
    }
    expect(await last).toMatchObject({ code: 421, text: '4.4.2 Session timeout; closing' });
  });
});

/**
 * Places per network: an application may keep a pool of connections from each of many addresses,
 * but one network (an IPv4 /24: every 127.x.y.z can be a source address here) cannot take more
 * than 100 sessions of the listener, whatever addresses of it they come from. Default deadlines
 * here, so that no session closes on its own while the places are counted.
 */
describe('the submission listener shares itself between networks', () => {
  let shared: TestServer;

  beforeAll(async () => {
    shared = await startTestServer({}, { submission: true });
  }, 30_000);
  afterAll(() => shared.stop());

  const connect = (localAddress: string) => SubmissionClient.connect(shared.submissionPort!, { localAddress });

  it('one network (an IPv4 /24) cannot hold more than 100 submission sessions, however many addresses it uses; the next is refused with 421 while another /24 is served', async () => {
    // Four addresses of 127.0.5.0/24 with 25 sessions each: none near its own cap of 50.
    const held = await Promise.all(['127.0.5.1', '127.0.5.2', '127.0.5.3', '127.0.5.4'].flatMap((address) => Array.from({ length: 25 }, () => connect(address))));
    expect(held.map((client) => client.greeting.code)).toEqual(Array(100).fill(220));
    const refused = await connect('127.0.5.5');
    expect(refused.greeting).toMatchObject({ code: 421, text: expect.stringMatching(/^4\.7\.0 Too many connections from your network/) });
    await refused.closed;
    const other = await connect('127.0.6.1');
    expect(other.greeting.code).toBe(220);

    await Promise.all([...held, other].map((client) => client.quit()));
    // Closed sessions give their places back.
    await waitFor('a place for 127.0.5.5 again', async () => {
      const again = await connect('127.0.5.5');
      await again.quit();
      return again.greeting.code;
    }, (code) => code === 220);
  });
});
