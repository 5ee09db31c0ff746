import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedDomain } from './helpers/domains.js';
import { dispatcherDone } from './helpers/emails.js';
import { recordingLogger } from './helpers/log.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { waitFor } from './helpers/wait.js';

const BATCH_SIZE = 40;
const EMAILS = 400;

describe('the dispatcher under a full queue', () => {
  let sink: SmtpSink;
  let server: TestServer;
  const recorded = recordingLogger();

  beforeAll(async () => {
    sink = await startSmtpSink();
    server = await startTestServer(
      { SMTP_URL: sink.url, DISPATCH_POLL_MS: '20', DISPATCH_BATCH_SIZE: String(BATCH_SIZE), DISPATCH_CONCURRENCY: '2', LOG_LEVEL: 'debug' },
      { log: recorded.log },
    );
  });
  afterAll(async () => {
    await server.stop();
    await sink.close();
  });

  // Claiming each email's place as it is freed would split the queue into batches of an email or
  // two, each paying a claim, its lookups and an outcome write of its own.
  it('claims due mail in batches of at least half the batch size, not an email at a time', async () => {
    const { apiKey } = await server.team();
    const from = `news@${(await verifiedDomain(server, apiKey, 'batches.test')).name}`;
    // All due at once, a moment after they are all accepted.
    const scheduledAt = new Date(Date.now() + 1500).toISOString();
    for (let start = 0; start < EMAILS; start += 100) {
      const body = Array.from({ length: 100 }, (_, i) => ({ from, to: `reader${start + i}@example.org`, subject: 'Batch', text: 'Hello', scheduledAt }));
      const res = await server.call('POST', '/v1/emails/batch', { key: apiKey, body });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    await waitFor('every email at the sink', async () => sink.received.length, (n) => n >= EMAILS, 30_000);
    await dispatcherDone(server);
    const batches = () => recorded.entries.filter((entry) => entry.msg === 'batch dispatched').map((entry) => entry.fields.claimed as number);
    // A batch is logged once its outcome write has resolved, a moment after the write is visible.
    const claimed = await waitFor('every batch logged', async () => batches().reduce((sum, n) => sum + n, 0), (n) => n >= EMAILS, 10_000);
    expect(claimed).toBe(EMAILS);
    // Only the claims that found the queue's last emails may be smaller.
    const small = batches().filter((n) => n < BATCH_SIZE / 2);
    expect(small.length, `batches of ${batches().join(', ')}`).toBeLessThanOrEqual(2);
  });
});
