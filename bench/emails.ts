/**
 * Emails end to end: N emails accepted through POST /v1/emails, then delivered with DKIM through
 * the SMTP transport to a loopback smtp-server sink running in its own process on the same cores.
 *
 *   npx tsx bench/emails.ts [postgres://…/db]   (no URL: embedded PGlite)
 *
 * The two phases are measured apart: the API with no dispatcher running (accept rate, latency),
 * then a dispatcher draining the queue (delivery rate).
 */
import { SENDER, startBenchHarness } from './harness.js';
import { loadBatch } from './load.js';

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
    // The load generator runs in a process of its own (autocannon's CLI), so the peak RSS is the service's alone.
    const accept = await loadBatch({
      url: `${bench.server.url}/v1/emails`, body, count: total, connections: options.connections ?? 32,
      headers: { authorization: `Bearer ${bench.apiKey}`, 'content-type': 'application/json' },
    });
    const delivery = await bench.deliver();
    return {
      database: bench.server.deps.dbKind,
      emails: total,
      accept: {
        // Only what was accepted counts; anything else is printed as errors.
        requestsPerSecond: Math.round(accept.accepted / (accept.seconds || 1)),
        p50Ms: accept.p50,
        p99Ms: accept.p99,
        errors: accept.errors,
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
