/**
 * Emails end to end: N emails accepted through POST /v1/emails, then delivered with DKIM through
 * the SMTP transport to a loopback smtp-server sink running in its own process on the same cores.
 *
 *   npx tsx bench/emails.ts [postgres://…/db]   (no URL: embedded PGlite)
 *
 * The two phases are measured apart: the API with no dispatcher running (accept rate, latency),
 * then a dispatcher draining the queue (delivery rate).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import autocannon from 'autocannon';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import type { DatabaseSource } from '../src/db/connection.js';
import { createLogger } from '../src/log.js';
import { startDispatcher } from '../src/sending/dispatcher.js';
import { startServer } from '../src/server.js';
import { createTeam } from '../src/services/teams.js';

export type EmailsBenchResult = {
  database: 'postgres' | 'pglite';
  emails: number;
  accept: { requestsPerSecond: number; p50Ms: number; p99Ms: number; errors: number };
  delivery: { messagesPerSecond: number; seconds: number; receivedBySink: number };
  peakRssMb: number;
};

const TSX = path.resolve('node_modules/.bin/tsx');

export async function startSink() {
  const child = spawn(TSX, ['bench/emails/sink.ts'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiters: Array<(line: string) => void> = [];
  let buffer = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      const waiter = waiters.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    }
  });
  const next = () => new Promise<string>((resolve) => (lines.length > 0 ? resolve(lines.shift()!) : waiters.push(resolve)));
  const port = Number((await next()).split(' ')[1]);
  return {
    port,
    async count() {
      child.stdin!.write('?\n');
      return Number((await next()).split(' ')[1]);
    },
    stop: () => new Promise<void>((resolve) => {
      child.once('close', () => resolve());
      child.stdin!.end();
    }),
  };
}

export async function databaseFor(url: string | undefined): Promise<{ source: DatabaseSource; drop(): Promise<void> }> {
  if (!url) return { source: { pglite: await PGlite.create() }, drop: async () => {} };
  const name = `mailroom_bench_emails_${process.pid}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return {
    source: { url: parsed.toString(), poolSize: 10 },
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

export async function benchEmails(options: { databaseUrl?: string; emails?: number; connections?: number } = {}): Promise<EmailsBenchResult> {
  const total = options.emails ?? 10_000;
  const sink = await startSink();
  const database = await databaseFor(options.databaseUrl);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-bench-'));
  let peakRss = 0;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const config = loadConfig({
    PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'error', ROLE: 'api', DATA_DIR: dataDir, RATE_LIMIT_PER_SECOND: '1000000',
    SMTP_URL: `smtp://127.0.0.1:${sink.port}`, SMTP_POOL_SIZE: '8', DISPATCH_BATCH_SIZE: '200', DISPATCH_CONCURRENCY: '4', DISPATCH_POLL_MS: '50',
  });
  const server = await startServer(config, { database: database.source, log: createLogger('error') });
  try {
    const { db } = server.deps;
    const { teamId, apiKey } = await createTeam(db, 'bench');
    const created = await fetch(`${server.url}/v1/domains`, {
      method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench.example.com' }),
    }).then((res) => res.json() as Promise<{ id: number }>);
    // Verified by hand: DNS is not what this measures.
    await db.updateTable('domains').set({ status: 'SUCCESS' }).where('team_id', '=', teamId).where('id', '=', created.id).execute();

    const body = JSON.stringify({
      from: 'Bench <news@bench.example.com>', to: 'reader@example.org', subject: 'Your weekly digest',
      html: '<h1>Hello</h1><p>This is the <b>weekly</b> digest with a <a href="https://example.com">link</a>.</p>',
    });
    const accept = await autocannon({
      url: `${server.url}/v1/emails`, method: 'POST', connections: options.connections ?? 32, amount: total, body,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    });

    const started = performance.now();
    const dispatcher = startDispatcher(server.deps);
    for (;;) {
      const { pending } = await db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('pending')).where('send_at', 'is not', null).executeTakeFirstOrThrow();
      if (Number(pending) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (performance.now() - started) / 1000;
    await dispatcher.stop();
    const sent = await db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('n')).where('status', '=', 'SENT').executeTakeFirstOrThrow();
    return {
      database: server.deps.dbKind,
      emails: total,
      accept: {
        requestsPerSecond: Math.round(total / (accept.duration || 1)),
        p50Ms: accept.latency.p50,
        p99Ms: accept.latency.p99,
        errors: accept.non2xx + accept.errors,
      },
      delivery: { messagesPerSecond: Math.round(Number(sent.n) / seconds), seconds: Number(seconds.toFixed(2)), receivedBySink: await sink.count() },
      peakRssMb: Math.round(peakRss / 1024 / 1024),
    };
  } finally {
    clearInterval(sampler);
    await server.close();
    await database.drop();
    await sink.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchEmails({ databaseUrl: process.argv[2] }), null, 2));
}
