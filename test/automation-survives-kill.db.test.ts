import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usingPostgres } from './helpers/database.js';
import { killGroup, startServerProcess, type ServerProcess } from './helpers/processes.js';
import { IN_FLIGHT_BOUND, RECOVERY_MS, startProcessRig, type ProcessRig } from './helpers/process-rig.js';
import { apiAt, expectOk } from './helpers/server.js';
import { messageIdOf } from './helpers/smtp-sink.js';
import { waitFor } from './helpers/wait.js';

const CONTACTS = 1500;
const BATCH = 500;

let rig: ProcessRig;

beforeAll(async () => {
  rig = await startProcessRig({ replyDelayMs: 2 });
});
afterAll(() => rig.close());

const ok = (server: ServerProcess, key: string, method: string, path: string, body?: unknown) => expectOk(apiAt(server.url), key, method, path, body);

/**
 * On PostgreSQL, a session of the test's own that holds the step counters in SHARE mode: a runner's
 * batch then stops at its last write, with its emails inserted and its runs moved but not
 * committed, until the session lets go. Answers a wait for a batch to stand there, and the release.
 */
async function holdBatchesBeforeCommit(url: string) {
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE automation_step_counts IN SHARE MODE');
  return {
    stoppedBeforeCommit: () =>
      waitFor(
        'a runner batch waiting to commit its emails and runs',
        async () => {
          // Inside a transaction the activity view is a snapshot taken once: take it anew each time.
          await holder.query('SELECT pg_stat_clear_snapshot()');
          const { rows } = await holder.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%automation_step_counts%' AND pid <> pg_backend_pid()`,
          );
          return rows[0].n as number;
        },
        (n) => n > 0,
      ),
    release: async () => {
      await holder.query('ROLLBACK');
      await holder.end();
    },
  };
}

describe('an automation survives a kill -9', () => {
  it(`a runner killed between creating a batch's emails and committing its runs' advance leaves each send step of each of ${CONTACTS} runs exactly one email`, async () => {
    const env = rig.env({ AUTOMATION_POLL_MS: '50', AUTOMATION_BATCH_SIZE: String(BATCH) });
    const first = await startServerProcess(env);
    const { key, from } = await rig.sendingTeam(first, 'automation-crash.test');
    const template = await ok(first, key, 'POST', '/v1/templates', { name: 'Hello', subject: '{{step}} {{email}}', html: '<p>Hello</p>' });
    const book = await ok(first, key, 'POST', '/v1/contactBooks', { name: 'Walkers' });
    const automation = await ok(first, key, 'POST', '/v1/automations', {
      name: 'Two mails', status: 'ACTIVE', trigger: { type: 'contact.added', contactBookId: book.id },
      steps: [
        { id: 'hello', type: 'send', templateId: template.id, from, subject: 'hello {{email}}' },
        { id: 'rest', type: 'wait', duration: '1 second' },
        { id: 'again', type: 'send', templateId: template.id, from, subject: 'again {{email}}' },
      ],
    });
    const hold = usingPostgres() ? await holdBatchesBeforeCommit(env.DATABASE_URL!) : null;
    const rows = Array.from({ length: CONTACTS }, (_, i) => ({ email: `w${i}@example.org` }));
    await ok(first, key, 'POST', `/v1/contactBooks/${book.id}/contacts/bulk`, rows);
    // On PGlite the test cannot hold the database: the kill lands wherever the runner is once mail flows.
    if (hold) await hold.stoppedBeforeCommit();
    else await waitFor('the automation under way', async () => rig.sink.received.length, (n) => n >= 100, 60_000);
    killGroup(first.child);
    await first.exit;
    await hold?.release();

    const second = await startServerProcess(env);
    await waitFor(
      'every run COMPLETED',
      async () => (await ok(second, key, 'GET', `/v1/automations/${automation.id}`)).runs,
      (runs) => runs.completed === CONTACTS,
      RECOVERY_MS * 2,
    );
    const emails = await waitFor('every email sent', () => ok(second, key, 'GET', '/v1/emails?limit=1'), (list) => list.count === 2 * CONTACTS, RECOVERY_MS);
    expect(emails.count, 'one email per send step of each run, none made twice').toBe(2 * CONTACTS);
    const counters = (await ok(second, key, 'GET', `/v1/automations/${automation.id}`)).counters;
    expect(counters.map((c: { stepId: string; completed: number }) => [c.stepId, c.completed])).toEqual([['hello', CONTACTS], ['rest', CONTACTS], ['again', CONTACTS]]);
    await waitFor('every message delivered', async () => new Set(rig.sink.received.map((m) => messageIdOf(m.raw))).size, (n) => n === 2 * CONTACTS, RECOVERY_MS);
    expect((await second.stop()).code).toBe(0);
    await rig.quiet();

    const copies = new Map<string, number>();
    for (const message of rig.sink.received) {
      const subject = /^Subject: (.*)$/m.exec(message.raw.toString('latin1'))![1]!.trim();
      copies.set(subject, (copies.get(subject) ?? 0) + 1);
    }
    const expected = rows.flatMap(({ email }) => [`hello ${email}`, `again ${email}`]);
    expect(expected.filter((subject) => !copies.has(subject)), 'mail never delivered').toEqual([]);
    const extra = [...copies.values()].reduce((sum, n) => sum + n - 1, 0);
    console.info(`automation kill -9 (${hold ? 'batch held before commit' : 'while mail flowed'}): ${extra} messages delivered twice (bound ${IN_FLIGHT_BOUND})`);
    expect(extra).toBeLessThanOrEqual(IN_FLIGHT_BOUND);
    expect(copies.size).toBe(2 * CONTACTS);
  }, 240_000);
});
