import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../src/db/connection.js';
import { migrate } from '../src/db/migrate.js';
import { listEvents } from '../src/data/emails.js';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';

let database: TestDatabase | undefined;
let handle: DatabaseHandle | undefined;
afterEach(async () => {
  await handle?.close();
  await database?.drop();
});

/** A database migrated through `last`, as the version that ended with that migration left it. */
async function databaseAt(last: string) {
  database = await createTestDatabase({ empty: true });
  handle = await openDatabase(database.source);
  expect((await migrate(handle.db, { through: last })).at(-1)).toBe(last);
  return handle.db;
}

const T1 = '2026-03-01T09:00:00.000Z';
const T2 = '2026-03-08T09:00:00.000Z';

describe('080_lean_email_writes on mail stored by the version before', () => {
  it("keeps every email's history, each event once, the first now read off the row with the schedule the email was accepted with", async () => {
    const db = await databaseAt('070_dashboard_users.sql');

    const { rows: [team] } = await sql<{ id: number }>`INSERT INTO teams (name) VALUES ('Old') RETURNING id`.execute(db);
    const teamId = team!.id;
    const email = (id: string, status: string, scheduledAt: string | null, campaignId: string | null = null) => sql`
      INSERT INTO emails (team_id, id, from_address, to_addresses, subject, message_id, status, scheduled_at, campaign_id, created_at)
      VALUES (${teamId}, ${id}, 'news@old.example', '["reader@example.org"]', 'Hello', ${`<${id}@old.example>`}, ${status},
        ${scheduledAt}::timestamptz, ${campaignId}, '2026-02-01T00:00:00Z')`.execute(db);
    const event = (emailId: string, status: string, data: object | null, at: string) => sql`
      INSERT INTO email_events (team_id, email_id, status, data, created_at)
      VALUES (${teamId}, ${emailId}, ${status}, ${data === null ? null : JSON.stringify(data)}::jsonb, ${at}::timestamptz)`.execute(db);

    // Scheduled for T1, moved to T2, then cancelled: the version before stored all three events.
    await email('rescheduled', 'CANCELLED', T2);
    await event('rescheduled', 'SCHEDULED', { scheduledAt: T1 }, '2026-02-01T00:00:00Z');
    await event('rescheduled', 'SCHEDULED', { scheduledAt: T2 }, '2026-02-02T00:00:00Z');
    await event('rescheduled', 'CANCELLED', null, '2026-02-03T00:00:00Z');
    // Sent at once and delivered.
    await email('delivered', 'DELIVERED', null);
    await event('delivered', 'QUEUED', null, '2026-02-01T00:00:00Z');
    await event('delivered', 'SENT', null, '2026-02-01T00:00:01Z');
    await event('delivered', 'DELIVERED', null, '2026-02-01T00:00:02Z');
    // Campaign mail: its QUEUED was already read off the row, so its first stored event is its send.
    await email('campaign', 'SENT', null, 'launch');
    await event('campaign', 'SENT', null, '2026-02-01T00:00:01Z');

    expect(await migrate(db)).toEqual(['080_lean_email_writes.sql']);

    const history = async (id: string) =>
      (await listEvents(db, teamId, id)).map((e) => [e.status, (e.data as { scheduledAt?: string } | null)?.scheduledAt ?? null]);
    expect(await history('rescheduled')).toEqual([['SCHEDULED', T1], ['SCHEDULED', T2], ['CANCELLED', null]]);
    expect(await history('delivered')).toEqual([['QUEUED', null], ['SENT', null], ['DELIVERED', null]]);
    expect(await history('campaign')).toEqual([['QUEUED', null], ['SENT', null]]);
    // The row keeps where the reschedule moved it.
    const { rows: [row] } = await sql<{ scheduled_at: Date }>`SELECT scheduled_at FROM emails WHERE id = 'rescheduled'`.execute(db);
    expect(row!.scheduled_at.toISOString()).toBe(T2);
  });
});
