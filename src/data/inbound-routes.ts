import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { InboundAction, InboundRoutesTable } from '../db/schema.js';

export type InboundRouteRow = Selectable<InboundRoutesTable>;

export type InboundRouteFields = {
  match: string;
  domain: string;
  localPart: string | null;
  action: InboundAction;
  forwardTo: string[];
  webhookIds: string[] | null;
};

const columns = (fields: InboundRouteFields) => ({
  match: fields.match,
  domain: fields.domain,
  local_part: fields.localPart,
  action: fields.action,
  forward_to: JSON.stringify(fields.forwardTo),
  webhook_ids: fields.webhookIds === null ? null : JSON.stringify(fields.webhookIds),
});

/**
 * Holds, until the transaction ends, the right to route `domain`: two teams adding routes of one
 * domain at once are taken one after the other, so the second sees the first's route.
 */
export async function lockRoutedDomain(db: Db, domain: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${`inbound-route:${domain}`}))`.execute(db);
}

/** Whether another team routes any address of `domain` (inbound_routes_address). */
export async function domainRoutedByOtherTeam(db: Db, teamId: number, domain: string): Promise<boolean> {
  const row = await db.selectFrom('inbound_routes').select('team_id').where('domain', '=', domain).where('team_id', '<>', teamId).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Undefined when a route of the same match exists already. */
export async function insertRoute(db: Db, teamId: number, id: string, fields: InboundRouteFields): Promise<InboundRouteRow | undefined> {
  return db
    .insertInto('inbound_routes')
    .values({ team_id: teamId, id, ...columns(fields) })
    .onConflict((oc) => oc.doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function listRoutes(db: Db, teamId: number): Promise<InboundRouteRow[]> {
  return db.selectFrom('inbound_routes').selectAll().where('team_id', '=', teamId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

export async function findRoute(db: Db, teamId: number, id: string, forUpdate = false): Promise<InboundRouteRow | undefined> {
  let query = db.selectFrom('inbound_routes').selectAll().where('team_id', '=', teamId).where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** Undefined when another route has that match already. */
export async function updateRoute(db: Db, teamId: number, id: string, fields: InboundRouteFields): Promise<InboundRouteRow | undefined> {
  return db
    .updateTable('inbound_routes')
    .set({ ...columns(fields), updated_at: new Date() })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('inbound_routes as other').select('other.id').where('other.domain', '=', fields.domain).where(sql`coalesce(other.local_part, '*')`, '=', fields.localPart ?? '*').where('other.id', '<>', id))),
    )
    .returningAll()
    .executeTakeFirst();
}

/** Deletes the route; the mail it took stays, without a route. */
export async function deleteRoute(db: Db, teamId: number, id: string): Promise<boolean> {
  const deleted = await db.deleteFrom('inbound_routes').where('team_id', '=', teamId).where('id', '=', id).executeTakeFirst();
  await db.updateTable('inbound_emails').set({ route_id: null }).where('team_id', '=', teamId).where('route_id', '=', id).execute();
  return deleted.numDeletedRows > 0n;
}

/**
 * The route that claims an address, whatever its team: the address's own, else its domain's
 * wildcard (inbound_routes_address).
 */
export async function routeForAddress(db: Db, domain: string, localPart: string): Promise<InboundRouteRow | undefined> {
  return db
    .selectFrom('inbound_routes')
    .selectAll()
    .where('domain', '=', domain)
    .where(sql<string>`coalesce(local_part, '*')`, 'in', [localPart, '*'])
    .orderBy(sql`local_part IS NULL`)
    .limit(1)
    .executeTakeFirst();
}
