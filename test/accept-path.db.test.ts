import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey as revokeInDatabase } from '../src/data/api-keys.js';
import { GroupedWrites } from '../src/db/grouped-writes.js';
import { revokeApiKey } from '../src/services/api-keys.js';
import { RECENT_READ_TTL_MS } from '../src/services/recent-reads.js';
import { verifiedDomain } from './helpers/domains.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { sleep } from './helpers/wait.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ ROLE: 'api' });
});
afterAll(() => server.stop());

const send = (key: string, from: string, to = 'reader@example.org') =>
  server.call('POST', '/v1/emails', { key, body: { from, to, subject: 'Hi', text: 'Hi' } });

describe('keys and sender domains read once a second', () => {
  it('a key revoked by another process stops working within a second', async () => {
    const { teamId, apiKey } = await server.team();
    const domain = await verifiedDomain(server, apiKey, 'revoked-elsewhere.test');
    expect((await send(apiKey, `a@${domain.name}`)).status).toBe(200);
    const { id } = (await server.deps.db.selectFrom('api_keys').select('id').where('team_id', '=', teamId).executeTakeFirstOrThrow());
    // As another process would: straight in the database, so this one's recent reads know nothing of it.
    await revokeInDatabase(server.deps.db, id);
    // Once a second has passed since, however slowly, the very next request reads the key again.
    await sleep(RECENT_READ_TTL_MS + 10);
    expect((await send(apiKey, `a@${domain.name}`)).status).toBe(401);
  });

  it('a key revoked in this process (the CLI, through the control socket) is refused at once', async () => {
    const { teamId, apiKey } = await server.team();
    const domain = await verifiedDomain(server, apiKey, 'revoked-here.test');
    expect((await send(apiKey, `a@${domain.name}`)).status).toBe(200);
    const { id } = (await server.deps.db.selectFrom('api_keys').select('id').where('team_id', '=', teamId).executeTakeFirstOrThrow());
    await revokeApiKey(server.deps, { id });
    expect((await send(apiKey, `a@${domain.name}`)).status).toBe(401);
  });

  it('a domain deleted in this process stops sending at once; one verified is used at once', async () => {
    const { apiKey } = await server.team();
    const created = await server.call('POST', '/v1/domains', { key: apiKey, body: { name: 'late.test' } });
    expect((await send(apiKey, 'a@late.test')).status).toBe(400);
    await server.deps.db.updateTable('domains').set({ status: 'SUCCESS' }).where('id', '=', created.body.id).execute();
    expect((await send(apiKey, 'a@late.test')).status).toBe(200);
    expect((await server.call('DELETE', `/v1/domains/${created.body.id}`, { key: apiKey })).status).toBe(200);
    expect((await send(apiKey, 'a@late.test')).status).toBe(400);
  });
});

describe('group commit of accepted mail', () => {
  it('concurrent requests are each stored once, each answered with its own id', async () => {
    const { apiKey } = await server.team();
    const domain = await verifiedDomain(server, apiKey, 'concurrent.test');
    const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => send(apiKey, `a@${domain.name}`, `r${i}@example.org`)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const ids = answers.map((a) => a.body.emailId as string);
    expect(new Set(ids).size).toBe(64);
    for (const [i, id] of ids.entries()) {
      const email = await server.call('GET', `/v1/emails/${id}`, { key: apiKey });
      expect(email.body).toMatchObject({ id, to: `r${i}@example.org`, latestStatus: 'QUEUED' });
    }
  });

  it("joins writes that arrive together, and one caller's failing rows never fail another's", async () => {
    const statements: number[][] = [];
    const writes = new GroupedWrites<number>(async (rows) => {
      statements.push(rows);
      await sleep(20);
      if (rows.includes(13)) throw new Error('row 13 refused');
    }, 1);
    const first = writes.add([1]);
    // The first statement is under way (one at a time here): the next ones queue behind it.
    await new Promise((resolve) => setImmediate(resolve));
    const rest = [writes.add([2, 3]), writes.add([13]), writes.add([4])];
    await first;
    const outcomes = await Promise.allSettled(rest);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    // The first went alone; the three queued behind it went as one statement, then, that failing, each alone.
    expect(statements).toEqual([[1], [2, 3, 13, 4], [2, 3], [13], [4]]);
  });
});

