/**
 * Emails end to end: N emails accepted through POST /v1/emails, then delivered with DKIM through
 * the SMTP transport to a loopback smtp-server sink running in its own process on the same cores.
 *
 *   npx tsx bench/emails.ts [postgres://…/db]   (no URL: embedded PGlite)
 *
 * The two phases are measured apart: the API with no dispatcher running (accept rate, latency),
 * then a dispatcher draining the queue (delivery rate).
 */
import autocannon from 'autocannon';
import { SENDER, startBenchHarness } from './harness.js';

export type EmailsBenchResult = {
  database: 'postgres' | 'pglite';
  emails: number;
  accept: { requestsPerSecond: number; p50Ms: number; p99Ms: number; errors: number };
  delivery: { messagesPerSecond: number; seconds: number; receivedBySink: number };
  peakRssMb: number;
};

export async function benchEmails(options: { databaseUrl?: string; emails?: number; connections?: number } = {}): Promise<EmailsBenchResult> {
  const total = options.emails ?? 10_000;
  const bench = await startBenchHarness(options.databaseUrl);
  try {
    const body = JSON.stringify({
      from: SENDER, to: 'reader@example.org', subject: 'Your weekly digest',
      html: '<h1>Hello</h1><p>This is the <b>weekly</b> digest with a <a href="https://example.com">link</a>.</p>',
    });
    const accept = await autocannon({
      // Sampled every 10 ms: a run ends on a sample tick, and at a second its time is rounded up.
      url: `${bench.server.url}/v1/emails`, method: 'POST', connections: options.connections ?? 32, amount: total, body, sampleInt: 10,
      headers: { authorization: `Bearer ${bench.apiKey}`, 'content-type': 'application/json' },
    });
    const delivery = await bench.deliver();
    return {
      database: bench.server.deps.dbKind,
      emails: total,
      accept: {
        // Only what was accepted counts; anything else is printed as errors.
        requestsPerSecond: Math.round(accept['2xx'] / (accept.duration || 1)),
        p50Ms: accept.latency.p50,
        p99Ms: accept.latency.p99,
        errors: accept.non2xx + accept.errors,
      },
      delivery,
      peakRssMb: bench.peakRssMb(),
    };
  } finally {
    await bench.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchEmails({ databaseUrl: process.argv[2] || undefined }), null, 2));
}
