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
