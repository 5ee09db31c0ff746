import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimDueEmails } from '../src/data/emails.js';
import { beat, silentWorkers } from '../src/data/workers.js';
import { SILENT_AFTER_SECONDS, startWorkerRegistry, type WorkerRegistry } from '../src/workers/registry.js';
import { usingPostgres } from './helpers/database.js';
import { verifiedDomain } from './helpers/domains.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { sleep, waitFor } from './helpers/wait.js';

const LEASE_MS = 300_000;

let server: TestServer;
const registries: WorkerRegistry[] = [];

beforeEach(async () => {
  // No workers of its own: only this test claims.
  server = await startTestServer({ ROLE: 'api' });
});
afterEach(async () => {
  for (const registry of registries.splice(0)) await registry.stop();
  await server.stop();
});

async function queuedEmails(count: number): Promise<string[]> {
  const { apiKey: key } = await server.team();
  const domain = await verifiedDomain(server, key, 'takeover.test');
  const res = await server.call('POST', '/v1/emails/batch', {
    key,
    body: Array.from({ length: count }, (_, i) => ({ from: `a@${domain.name}`, to: `r${i}@example.org`, subject: 'Hi', text: 'Hi' })),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.map((d: { emailId: string }) => d.emailId);
}

/** Claims every due email with a lease of five minutes, as a dispatcher would; answers the ids it got. */
async function claim(token: string, silent: readonly string[] = []): Promise<string[]> {
  const now = new Date();
  const rows = await claimDueEmails(server.deps.db, { now, leaseUntil: new Date(now.getTime() + LEASE_MS), token, limit: 1000, silent });
  return rows.map((row) => row.id).sort();
}

async function registry(): Promise<WorkerRegistry> {
  const started = await startWorkerRegistry(server.deps);
  registries.push(started);
  return started;
}

describe.skipIf(!usingPostgres())('claims of a silent worker, on PostgreSQL', () => {
  it('are taken over at once by another worker, long before their lease runs out', async () => {
    const ids = await queuedEmails(5);
    // A worker that beat once, claimed, and died.
    await beat(server.deps.db, { id: 'dead-worker', host: 'gone', pid: 1 });
    expect(await claim('dead-worker.claim')).toEqual([...ids].sort());
    expect(await claim('someone.else'), 'a live lease holds').toEqual([]);
    await sql`UPDATE workers SET beat_at = now() - make_interval(secs => ${SILENT_AFTER_SECONDS + 1}) WHERE id = 'dead-worker'`.execute(server.deps.db);

    const survivor = await registry();
    expect(survivor.silent()).toContain('dead-worker');
    expect(survivor.token().startsWith(`${survivor.id}.`)).toBe(true);
    expect(await claim(survivor.token(), survivor.silent())).toEqual([...ids].sort());
  });

  it('are never taken from a worker that still beats, nor by a worker from itself', async () => {
    const ids = await queuedEmails(3);
    const alive = await registry();
    const other = await registry();
    expect(await claim(alive.token(), other.silent())).toEqual([...ids].sort());
    // Beats go on past the silence threshold: the claims stay where they are.
    await sleep((SILENT_AFTER_SECONDS + 1) * 1000);
    expect(other.silent()).not.toContain(alive.id);
    expect(await claim(other.token(), other.silent())).toEqual([]);
    expect(alive.silent()).not.toContain(alive.id);
  });

  it('a worker that stopped cleanly is silent at once: whatever it still held is taken over without waiting', async () => {
    const ids = await queuedEmails(2);
    const leaving = await registry();
    const staying = await registry();
    expect(await claim(leaving.token())).toEqual([...ids].sort());
    await leaving.stop();
    registries.splice(registries.indexOf(leaving), 1);
    // Silent from the stop on, not once its last beat has aged: even counting silence as long as the lease.
    expect(await silentWorkers(server.deps.db, LEASE_MS / 1000)).toContain(leaving.id);
    await waitFor('the stopped worker seen as silent', async () => staying.silent(), (silent) => silent.includes(leaving.id));
    expect(await claim(staying.token(), staying.silent())).toEqual([...ids].sort());
  });
});

describe.skipIf(usingPostgres())('claims found at the start, on the embedded database', () => {
  it('are all let go: the process that made them is gone, since one process holds the data', async () => {
    const ids = await queuedEmails(4);
    expect(await claim('earlier-run.claim')).toEqual([...ids].sort());
    expect(await claim('someone.else')).toEqual([]);
    const started = await registry();
    expect(started.silent()).toEqual([]);
    expect(await claim(started.token())).toEqual([...ids].sort());
  });
});
