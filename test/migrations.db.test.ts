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

    expect(await migrate(db, { through: '080_lean_email_writes.sql' })).toEqual(['080_lean_email_writes.sql']);

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

describe('090_event_contract on calls stored by the version before', () => {
  it('gives every email call its whole payload, built from its email and the details it kept, and leaves other calls as they were', async () => {
    const db = await databaseAt('080_lean_email_writes.sql');
    const { rows: [team] } = await sql<{ id: number }>`INSERT INTO teams (name) VALUES ('Old') RETURNING id`.execute(db);
    const teamId = team!.id;
    await sql`
      INSERT INTO emails (team_id, id, domain_id, from_address, to_addresses, subject, message_id, status, campaign_id, created_at)
      VALUES (${teamId}, 'e1', 7, 'news@old.example', '["reader@example.org"]', 'Hello', '<e1@old.example>', 'BOUNCED', 'launch', '2026-02-01T00:00:00Z')`.execute(db);
    await sql`INSERT INTO webhooks (team_id, id, url, secret) VALUES (${teamId}, 'w1', 'https://hooks.example.com/', 'sealed')`.execute(db);
    const call = (id: string, type: string, subject: string, data: object) => sql`
      INSERT INTO webhook_calls (team_id, webhook_id, id, type, subject_key, data, next_attempt_at, created_at, updated_at)
      VALUES (${teamId}, 'w1', ${id}, ${type}, ${subject}, ${JSON.stringify(data)}::jsonb, ${T1}::timestamptz, ${T1}::timestamptz, ${T1}::timestamptz)`.execute(db);
    // What the version before kept of each: the event's details, or the whole payload of a domain call.
    await call('c1', 'email.sent', 'e1', { response: '250 ok' });
    await call('c2', 'email.bounced', 'e1', { bounceType: 'Permanent', diagnostic: '550 5.1.1 no such user', recipients: ['reader@example.org'], code: 550 });
    await call('c3', 'domain.created', 'domain:7', { id: 7, name: 'old.example' });

    expect(await migrate(db, { through: '090_event_contract.sql' })).toEqual(['090_event_contract.sql']);

    const data = async (id: string) => (await sql<{ data: unknown }>`SELECT data FROM webhook_calls WHERE id = ${id}`.execute(db)).rows[0]!.data;
    const email = { id: 'e1', from: 'news@old.example', to: ['reader@example.org'], subject: 'Hello', occurredAt: T1, campaignId: 'launch', domainId: 7 };
    expect(await data('c1')).toEqual({ ...email, status: 'SENT' });
    expect(await data('c2')).toEqual({
      ...email,
      status: 'BOUNCED',
      bounce: { type: 'Permanent', subType: 'General', message: '550 5.1.1 no such user', status: '550', remoteMta: null, recipients: ['reader@example.org'] },
    });
    expect(await data('c3')).toEqual({ id: 7, name: 'old.example' });
  });

  it('leaves no trigger behind: every rule an event follows is in the events module', async () => {
    const db = await databaseAt('090_event_contract.sql');
    const { rows } = await sql<{ tgname: string }>`SELECT tgname FROM pg_trigger WHERE NOT tgisinternal`.execute(db);
    expect(rows).toEqual([]);
  });
});

describe('091_sandbox_domain on domains stored by the version before', () => {
  it('makes a domain a team added under the sandbox name its sandbox, verified and never checked, and leaves other domains as they were', async () => {
    const db = await databaseAt('090_event_contract.sql');
    const { rows: [team] } = await sql<{ id: number }>`INSERT INTO teams (name) VALUES ('Old') RETURNING id`.execute(db);
    const domain = (name: string) => sql`
      INSERT INTO domains (team_id, name, region, dkim_selector, dkim_private_key, dkim_public_key, status, is_verifying, next_check_at, verification_started_at)
      VALUES (${team!.id}, ${name}, 'us-east-1', 'mrold', 'sealed', 'public', 'PENDING', true, now(), now())`.execute(db);
    await domain('sandbox.mailroom.localhost');
    await domain('news.old.example');

    expect(await migrate(db, { through: '091_sandbox_domain.sql' })).toEqual(['091_sandbox_domain.sql']);
    const { rows } = await sql<Record<string, unknown>>`
      SELECT name, status, dkim_status, spf_status, mx_status, dmarc_status, is_verifying, next_check_at IS NULL AS unplanned
      FROM domains ORDER BY name`.execute(db);
    expect(rows).toEqual([
      { name: 'news.old.example', status: 'PENDING', dkim_status: 'NOT_STARTED', spf_status: 'NOT_STARTED', mx_status: 'NOT_STARTED', dmarc_status: 'NOT_STARTED', is_verifying: true, unplanned: false },
      { name: 'sandbox.mailroom.localhost', status: 'SUCCESS', dkim_status: 'SUCCESS', spf_status: 'SUCCESS', mx_status: 'SUCCESS', dmarc_status: 'SUCCESS', is_verifying: false, unplanned: true },
    ]);
  });
});

describe('113_contact_engagement on mail stored by the version before', () => {
  it("gives each contact the time its book's campaign mail was last first opened and clicked, and nothing for other mail", async () => {
    const db = await databaseAt('112_segments.sql');
    const { rows: [team] } = await sql<{ id: number }>`INSERT INTO teams (name) VALUES ('Old') RETURNING id`.execute(db);
    const teamId = team!.id;
    await sql`INSERT INTO contact_books (team_id, id, name, emoji) VALUES (${teamId}, 'book', 'Readers', '📙')`.execute(db);
    for (const id of ['reader', 'idle', 'confirming']) {
      await sql`INSERT INTO contacts (team_id, contact_book_id, id, email) VALUES (${teamId}, 'book', ${id}, ${`${id}@old.example`})`.execute(db);
    }
    for (const id of ['spring', 'summer']) {
      await sql`
        INSERT INTO campaigns (team_id, id, name, from_address, subject, html, status, batch_size, batch_window_minutes, contact_book_id)
        VALUES (${teamId}, ${id}, ${id}, 'news@old.example', 'News', '<p>News</p>', 'SENT', 100, 1, 'book')`.execute(db);
    }
    const email = async (id: string, contactId: string, campaignId: string | null, events: Array<[string, string]>) => {
      await sql`
        INSERT INTO emails (team_id, id, from_address, to_addresses, subject, message_id, status, campaign_id, contact_id)
        VALUES (${teamId}, ${id}, 'news@old.example', '[]'::jsonb, 'News', ${`<${id}@old.example>`}, 'DELIVERED', ${campaignId}, ${contactId})`.execute(db);
      for (const [status, at] of events) {
        await sql`INSERT INTO email_events (team_id, email_id, status, created_at) VALUES (${teamId}, ${id}, ${status}, ${at}::timestamptz)`.execute(db);
      }
    };
    await email('e1', 'reader', 'spring', [['DELIVERED', T1], ['OPENED', T1], ['CLICKED', T1]]);
    await email('e2', 'reader', 'summer', [['DELIVERED', T2], ['OPENED', T2]]);
    await email('e3', 'idle', 'summer', [['DELIVERED', T2]]);
    // A double opt-in confirmation is no campaign's mail: opening it is no engagement with the book's campaigns.
    await email('e4', 'confirming', null, [['DELIVERED', T2], ['OPENED', T2]]);

    expect(await migrate(db, { through: '113_contact_engagement.sql' })).toEqual(['113_contact_engagement.sql']);
    const { rows } = await sql<{ id: string; opened: string | null; clicked: string | null }>`
      SELECT id, to_char(last_opened_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS opened,
        to_char(last_clicked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS clicked
      FROM contacts ORDER BY id`.execute(db);
    expect(rows).toEqual([
      { id: 'confirming', opened: null, clicked: null },
      { id: 'idle', opened: null, clicked: null },
      { id: 'reader', opened: T2, clicked: T1 },
    ]);
  });
});
