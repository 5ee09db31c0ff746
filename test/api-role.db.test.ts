import net, { type AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { usingPostgres } from './helpers/database.js';
import { statusesOf } from './helpers/emails.js';
import { logLines, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { byEmailId, startProcessRig, type ProcessRig } from './helpers/process-rig.js';
import { call } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

let rig: ProcessRig;

beforeEach(async () => {
  rig = await startProcessRig({ replyDelayMs: 0 });
});
afterEach(() => rig.close());

/** A loopback port this test listens on: a process that tried to listen there too could not start. */
async function heldPort(): Promise<{ port: number; release(): Promise<void> }> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
  return { port: (holder.address() as AddressInfo).port, release: () => new Promise((resolve) => holder.close(() => resolve())) };
}

/** A team with a verified domain. A ROLE=api process verifies nothing, so a ROLE=all one does it, and is stopped. */
async function verifiedTeam() {
  const setup = await startServerProcess(rig.env());
  const team = await rig.sendingTeam(setup, 'api-role.test');
  expect((await setup.stop()).code).toBe(0);
  return team;
}

async function accept(api: ServerProcess, team: { key: string; from: string }): Promise<string> {
  const res = await call(api.url, 'POST', '/v1/emails', { key: team.key, body: { from: team.from, to: 'reader@example.org', subject: 'Hello', text: 'Hi' } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.emailId;
}

const logged = (server: ServerProcess) => logLines(server.stderr()).map((line) => line.msg as string);

describe('ROLE=api', () => {
  it('serves the API and accepts mail, but sends nothing and runs no inbound listener', async () => {
    const team = await verifiedTeam();
    const inbound = await heldPort();
    try {
      const api = await startServerProcess(rig.env({ ROLE: 'api', INBOUND_SMTP_PORT: String(inbound.port) }));
      const id = await accept(api, team);
      const email = await call(api.url, 'GET', `/v1/emails/${id}`, { key: team.key });
      expect(email.body).toMatchObject({ latestStatus: 'QUEUED' });
      // A dispatcher here would have been woken by that send, and a clean stop waits for what it sends.
      expect(await api.stop()).toEqual({ code: 0, signal: null });
      expect(logged(api)).toContain('listening');
      expect(logged(api)).not.toContain('dispatcher stopped');
      expect(logged(api)).not.toContain('inbound SMTP listening');
    } finally {
      await inbound.release();
    }
    await rig.quiet();
    expect(rig.sink.received).toEqual([]);
  });

  it.skipIf(!usingPostgres())('on PostgreSQL, a ROLE=worker process on the same database sends what it accepted, exactly once', async () => {
    // PGlite is one process per data directory: there is no worker to run beside it.
    const team = await verifiedTeam();
    const api = await startServerProcess(rig.env({ ROLE: 'api' }));
    const id = await accept(api, team);
    const worker = await startServerProcess(rig.env({ ROLE: 'worker' }));
    const email = await waitFor(
      'the email DELIVERED',
      async () => (await call(api.url, 'GET', `/v1/emails/${id}`, { key: team.key })).body,
      (e) => e.latestStatus === 'DELIVERED',
    );
    expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    for (const server of [api, worker]) expect((await server.stop()).code).toBe(0);
    await rig.quiet();
    expect(rig.copies(byEmailId)).toEqual(new Map([[id, 1]]));
    expect(logged(api)).not.toContain('dispatcher stopped');
    expect(logLines(worker.stderr()).find((line) => line.msg === 'dispatcher stopped')).toMatchObject({ sent: 1 });
  });
});

describe('ROLE=worker', () => {
  it('serves only /health on its port: no API, no pages, no reference; /health names the role and what it depends on', async () => {
    const worker = await startServerProcess(rig.env({ ROLE: 'worker' }));
    const health = await call(worker.url, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok', role: 'worker', database: usingPostgres() ? 'postgres' : 'pglite', checks: { database: 'ok', relay: 'ok' } });
    for (const [method, path] of [['GET', '/v1/domains'], ['POST', '/v1/emails'], ['GET', '/api/v1/contactBooks'], ['GET', '/v1/openapi.json'], ['GET', '/docs'], ['GET', '/unsubscribe']]) {
      const res = await call(worker.url, method!, path!, { key: 'any', body: method === 'POST' ? {} : undefined });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code, `${method} ${path}`).toBe('NOT_FOUND');
    }
    expect((await worker.stop()).code).toBe(0);
  });

  it('/health answers 200 "degraded" while the SMTP relay does not answer: the worker still keeps mail and retries it', async () => {
    const closed = await heldPort();
    await closed.release();
    const worker = await startServerProcess(rig.env({ ROLE: 'worker', SMTP_URL: `smtp://127.0.0.1:${closed.port}` }));
    const health = await call(worker.url, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'degraded', role: 'worker', checks: { database: 'ok', relay: 'unavailable' } });
    expect((await worker.stop()).code).toBe(0);
  });

  it.skipIf(!usingPostgres())('on PostgreSQL, two workers beside one API process send every email exactly once', async () => {
    const team = await verifiedTeam();
    const api = await startServerProcess(rig.env({ ROLE: 'api' }));
    // Both wait for the mail, and claim little at a time: neither can take it all before the other starts.
    const workerEnv = rig.env({ ROLE: 'worker', DISPATCH_BATCH_SIZE: '10' });
    const workers = await Promise.all([startServerProcess(workerEnv), startServerProcess(workerEnv)]);
    const ids = await Promise.all(Array.from({ length: 300 }, () => accept(api, team)));
    await waitFor('every email at the sink', async () => rig.sink.received.length, (n) => n >= ids.length, 30_000);
    for (const server of [api, ...workers]) expect((await server.stop()).code).toBe(0);
    await rig.quiet();
    expect(rig.copies(byEmailId)).toEqual(new Map(ids.map((id) => [id, 1])));
    // Both took part: the test would prove nothing if one worker had sent everything.
    const sentBy = workers.map((worker) => logLines(worker.stderr()).find((line) => line.msg === 'dispatcher stopped')?.sent ?? 0);
    expect(sentBy.every((sent) => sent > 0), JSON.stringify(sentBy)).toBe(true);
  });
});

