import type { Db } from '../db/connection.js';

/** Every webhook's sealed signing secret, locked until the transaction ends (in key order: no deadlock). */
export async function lockWebhookSecrets(db: Db) {
  return db.selectFrom('webhooks').select(['team_id', 'id', 'secret']).orderBy('team_id').orderBy('id').forUpdate().execute();
}

export async function storeWebhookSecret(db: Db, key: { teamId: number; id: string }, sealed: string): Promise<void> {
  await db.updateTable('webhooks').set({ secret: sealed }).where('team_id', '=', key.teamId).where('id', '=', key.id).execute();
}
