import { rm } from 'node:fs/promises';
import { expect } from 'vitest';
import { createTestDatabase, usingPostgres } from './database.js';
import { startDnsServer, type TestDnsServer } from './dns-server.js';
import { childEnv, cli, killAll, seededDataDir, type ServerProcess } from './processes.js';
import { apiAt, call, expectOk } from './server.js';
import { messageIdOf, startSmtpSink, type SmtpSink } from './smtp-sink.js';
import { waitFor } from './wait.js';

/** Emails a dispatcher claims at once, and batches it sends at the same time, in every rig's processes. */
export const DISPATCH_BATCH_SIZE = 50;
export const DISPATCH_CONCURRENCY = 4;
/** The most mail one dispatcher has claimed and not yet recorded: all a crash may send twice. */
export const IN_FLIGHT_BOUND = DISPATCH_BATCH_SIZE * DISPATCH_CONCURRENCY;
/**
 * After a kill -9, how soon a restarted service (or a surviving worker) has sent everything, with
 * the default lease: what a dead process claimed is taken over at once, not when its lease ends.
 */
export const RECOVERY_MS = 30_000;

export type ProcessRig = {
  dns: TestDnsServer;
  sink: SmtpSink;
  dataDir: string;
  /** The environment of a `npm start` child that uses all of the above. */
  env(extra?: Record<string, string>): NodeJS.ProcessEnv;
  /** A new team (through the CLI) whose domain passed verification against the loopback DNS server. */
  sendingTeam(server: ServerProcess, domain: string): Promise<{ key: string; from: string; domainId: number }>;
  /**
   * A sending team with a book of `contacts` contacts (c0@example.org, …) and the body of a campaign
   * to them, sent now in batches of 500: everything but the POST /v1/campaigns that starts it.
   */
  campaignReady(server: ServerProcess, domain: string, contacts: number): Promise<{ key: string; body: Record<string, unknown> }>;
  /**
   * Waits until no client has a session open at the sink: every process that sent has hung up (or
   * died), so every message that will ever arrive has. Counting copies belongs after this.
   */
  quiet(): Promise<void>;
  /** How often the sink got each message, by what `keyOf` says it is (its email id, its recipient). */
  copies(keyOf: (message: SmtpSink['received'][number]) => string[]): Map<string, number>;
  /** Kills what is left of the children, then removes everything. */
  close(): Promise<void>;
};

export const byEmailId = (message: SmtpSink['received'][number]) => [messageIdOf(message.raw)!.split('@')[0]!];
export const byRecipient = (message: SmtpSink['received'][number]) => message.rcptTo;

/**
 * What the tests of real `npm start` processes share: a loopback DNS server that verifies their
 * domains, an SMTP sink that answers after `replyDelayMs` (so mail stays in flight a while, as over
 * a network), a fresh database of this run's kind (on PGlite, migrated in the data directory), a data
 * directory, and the child environment that points at them.
 */
export async function startProcessRig(options: { replyDelayMs: number }): Promise<ProcessRig> {
  const dns = await startDnsServer();
  const sink = await startSmtpSink({ closeTimeout: 50, replyDelayMs: options.replyDelayMs });
  // On PGlite the children find their database in the data directory.
  const database = usingPostgres() ? await createTestDatabase() : null;
  const dataDir = await seededDataDir();

  const env = (extra: Record<string, string> = {}) =>
    childEnv({
      DATA_DIR: dataDir,
      DATABASE_URL: database?.url,
      SMTP_URL: sink.url,
      SMTP_POOL_SIZE: '4',
      DNS_SERVERS: dns.address,
      RATE_LIMIT_PER_SECOND: '100000',
      DISPATCH_BATCH_SIZE: String(DISPATCH_BATCH_SIZE),
      DISPATCH_CONCURRENCY: String(DISPATCH_CONCURRENCY),
      DISPATCH_POLL_MS: '50',
      CAMPAIGN_POLL_MS: '50',
      ...extra,
    });

  const rig: ProcessRig = {
    dns,
    sink,
    dataDir,
    env,
    async sendingTeam(server, domain) {
      const { apiKey: key } = await cli(['team', 'create', '--name', domain], env());
      const created = await call(server.url, 'POST', '/v1/domains', { key, body: { name: domain } });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      dns.serve(created.body);
      expect((await call(server.url, 'PUT', `/v1/domains/${created.body.id}/verify`, { key })).status).toBe(200);
      await waitFor(
        `${domain} verified`,
        async () => (await call(server.url, 'GET', `/v1/domains/${created.body.id}`, { key })).body.status,
        (status) => status === 'SUCCESS',
      );
      return { key, from: `news@${domain}`, domainId: created.body.id };
    },
    async campaignReady(server, domain, contacts) {
      const { key, from } = await rig.sendingTeam(server, domain);
      const post = (path: string, body: unknown) => expectOk(apiAt(server.url), key, 'POST', path, body);
      const book = await post('/v1/contactBooks', { name: 'Campaign readers' });
      for (let start = 0; start < contacts; start += 5000) {
        const rows = Array.from({ length: Math.min(5000, contacts - start) }, (_, i) => ({ email: `c${start + i}@example.org`, firstName: `C${start + i}` }));
        await post(`/v1/contactBooks/${book.id}/contacts/bulk`, rows);
      }
      return { key, body: { name: 'Readers', from, subject: 'Hi {{firstName}}', contactBookId: book.id, html: '<p>x</p>{{unsubscribeUrl}}', batchSize: 500, sendNow: true } };
    },
    quiet: () => waitFor('every session at the sink closed', async () => sink.openSessions(), (open) => open === 0, 30_000).then(() => {}),
    copies(keyOf) {
      const copies = new Map<string, number>();
      for (const message of sink.received) for (const key of keyOf(message)) copies.set(key, (copies.get(key) ?? 0) + 1);
      return copies;
    },
    async close() {
      killAll();
      await sink.close();
      await dns.close();
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return rig;
}
