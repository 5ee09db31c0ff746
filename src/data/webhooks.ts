import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { WebhooksTable, WebhookStatus } from '../db/schema.js';

export type WebhookRow = Selectable<WebhooksTable>;

/** What a team sets on a webhook; `secret` is sealed by the key vault. */
export type WebhookFields = {
  url: string;
  description: string | null;
  /** Empty: every event type. */
  events: string[];
  /** Empty: email events of every domain. */
  domainIds: number[];
  secret: string;
};

/** What a change may set; `failedInARow` and `disabledReason` go with a change of status. */
export type WebhookChanges = Partial<Omit<WebhookFields, 'secret'>> & {
  secret?: string;
  status?: WebhookStatus;
  failedInARow?: number;
  disabledReason?: string | null;
};

export async function insertWebhook(db: Db, teamId: number, id: string, fields: WebhookFields, now: Date): Promise<WebhookRow> {
  return db
    .insertInto('webhooks')
    .values({
      team_id: teamId,
      id,
      url: fields.url,
      description: fields.description,
      events: fields.events,
      domain_ids: fields.domainIds,
      secret: fields.secret,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Holds the team's row until the transaction ends, so that webhooks created at the same time are
 * counted one after the other. FOR NO KEY UPDATE leaves the team's other writes (rows that
 * reference the team take a key-share lock) unblocked.
 */
export async function lockTeamWebhooks(db: Db, teamId: number): Promise<void> {
  await db.selectFrom('teams').select('id').where('id', '=', teamId).forNoKeyUpdate().executeTakeFirst();
}

/** Uses the webhooks primary key. */
export async function countWebhooks(db: Db, teamId: number): Promise<number> {
  const row = await db.selectFrom('webhooks').select((eb) => eb.fn.countAll<number>().as('count')).where('team_id', '=', teamId).executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Uses the webhooks primary key; `forUpdate` holds the row until the transaction ends. */
export async function findWebhook(db: Db, teamId: number, id: string, forUpdate = false): Promise<WebhookRow | undefined> {
  let query = db.selectFrom('webhooks').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** Newest first (a team has at most a few dozen). */
export async function listWebhooks(db: Db, teamId: number, page: { offset: number; limit: number }) {
  const query = db.selectFrom('webhooks').where('team_id', '=', teamId);
  const [rows, total] = await Promise.all([
    query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').offset(page.offset).limit(page.limit).execute(),
    query.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow(),
  ]);
  return { rows, count: Number(total.count) };
}

/** Undefined when the team has no such webhook. */
export async function updateWebhook(db: Db, teamId: number, id: string, changes: WebhookChanges, now: Date): Promise<WebhookRow | undefined> {
  return db
    .updateTable('webhooks')
    .set({
      ...(changes.url !== undefined ? { url: changes.url } : {}),
      ...(changes.description !== undefined ? { description: changes.description } : {}),
      ...(changes.events !== undefined ? { events: changes.events } : {}),
      ...(changes.domainIds !== undefined ? { domain_ids: changes.domainIds } : {}),
      ...(changes.secret !== undefined ? { secret: changes.secret } : {}),
      ...(changes.status !== undefined ? { status: changes.status } : {}),
      ...(changes.failedInARow !== undefined ? { failed_in_a_row: changes.failedInARow } : {}),
      ...(changes.disabledReason !== undefined ? { disabled_reason: changes.disabledReason } : {}),
      updated_at: now,
    })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Whether the team had such a webhook; its calls go with it, in the same statement. */
export async function deleteWebhook(db: Db, teamId: number, id: string): Promise<boolean> {
  const { rows } = await sql<{ deleted: number }>`
    WITH gone AS (DELETE FROM webhooks WHERE team_id = ${teamId} AND id = ${id} RETURNING id),
    calls AS (DELETE FROM webhook_calls WHERE team_id = ${teamId} AND webhook_id IN (SELECT id FROM gone))
    SELECT count(*)::int AS deleted FROM gone`.execute(db);
  return rows[0]!.deleted > 0;
}

/** Which of these domain ids the team has (the domains primary key, one probe each). */
export async function teamDomainIds(db: Db, teamId: number, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('domains').select('id').where('team_id', '=', teamId).where('id', 'in', ids).execute();
  return new Set(rows.map((row) => row.id));
}
