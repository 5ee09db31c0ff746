import * as routes from '../data/inbound-routes.js';
import type { InboundRouteFields, InboundRouteRow } from '../data/inbound-routes.js';
import { listDomains } from '../data/domains.js';
import { findWebhook } from '../data/webhooks.js';
import type { InboundAction } from '../db/schema.js';
import type { Deps } from '../deps.js';
import { audit } from '../events/audit.js';
import { conflict, notFound, type ErrorDetail } from '../errors.js';
import { newSortableId } from '../ids.js';
import { asciiHostname, domainOf, parseMailbox } from '../mail/address.js';
import { isSandbox } from '../sending/sandbox.js';
import { validationError } from '../validation.js';
import { assertTeamWide, type Caller } from './caller.js';
import { mailboxes } from './emails.js';

export type InboundRouteDeps = Pick<Deps, 'db' | 'config'>;

export type InboundRouteInput = { match: string; action: InboundAction; forwardTo?: string | string[]; webhookIds?: string[] | null };

const SCOPE = 'inbound routes take mail for the whole team';

/** A route as the API shows it, with the MX record its domain needs to receive mail. */
function toRoute(row: InboundRouteRow, config: InboundRouteDeps['config'], zone: string | null) {
  const relative = zone && row.domain !== zone ? row.domain.slice(0, row.domain.length - zone.length - 1) : '@';
  return {
    id: row.id,
    match: row.match,
    action: row.action,
    forwardTo: row.forward_to,
    webhookIds: row.webhook_ids,
    dnsRecords: [
      { type: 'MX' as const, name: relative, value: config.inboundMxHost, ttl: 'Auto', priority: '10', zone: zone ?? row.domain },
    ],
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export type InboundRoute = ReturnType<typeof toRoute>;

/** The team's verified domain a routed domain is, or is under (the zone its MX record goes in). */
async function verifiedZones(deps: InboundRouteDeps, teamId: number): Promise<string[]> {
  const rows = await listDomains(deps.db, teamId, null);
  return rows.filter((row) => row.status === 'SUCCESS' && !isSandbox(row.name)).map((row) => row.name);
}

const zoneOf = (domain: string, zones: string[]) =>
  zones.filter((zone) => domain === zone || domain.endsWith(`.${zone}`)).sort((a, b) => b.length - a.length)[0] ?? null;

/**
 * What a route asks, checked: an address or `*@domain` on a verified domain of the team or a
 * subdomain of one; forwardTo (1 to 50 addresses) for a forward, sent From the route's address,
 * which must then be on a verified domain of the team itself; webhookIds, webhooks of the team.
 */
async function checked(deps: InboundRouteDeps, caller: Caller, input: InboundRouteInput): Promise<InboundRouteFields & { zone: string }> {
  const problems: ErrorDetail[] = [];
  const raw = input.match.trim().toLowerCase();
  const wildcard = raw.startsWith('*@');
  const address = wildcard ? `postmaster${raw.slice(1)}` : raw;
  const mailbox = parseMailbox(address);
  const domain = mailbox ? asciiHostname(domainOf(mailbox.address)) : null;
  const zones = await verifiedZones(deps, caller.teamId);
  let zone: string | null = null;
  if (!mailbox || mailbox.name !== null || !domain) {
    problems.push({ path: 'match', message: `must be an address (support@example.com) or every address of a domain (*@in.example.com), not "${input.match}"` });
  } else {
    zone = zoneOf(domain, zones);
    if (!zone) problems.push({ path: 'match', message: `${domain} is not a verified domain of the team nor under one; add and verify it (or its parent) first` });
  }
  const forwardTo = mailboxes(input.forwardTo, 'forwardTo', problems, input.action === 'forward');
  if (input.action === 'forward' && domain && !zones.includes(domain)) {
    problems.push({ path: 'action', message: `a forward is sent From ${wildcard ? `an address of ${domain}` : raw}, so ${domain} itself must be a verified domain of the team` });
  }
  for (const [index, id] of (input.webhookIds ?? []).entries()) {
    const webhook = await findWebhook(deps.db, caller.teamId, id);
    if (!webhook) problems.push({ path: `webhookIds[${index}]`, message: `no webhook ${id} in this team` });
    else if (webhook.events.length > 0 && !webhook.events.includes('email.received')) {
      problems.push({ path: `webhookIds[${index}]`, message: `webhook ${id} does not take email.received; add it to the webhook's events first` });
    }
  }
  if (problems.length > 0) throw validationError(problems);
  const localPart = wildcard ? null : mailbox!.address.slice(0, mailbox!.address.lastIndexOf('@'));
  return {
    match: wildcard ? `*@${domain}` : `${localPart}@${domain}`,
    domain: domain!,
    localPart,
    action: input.action,
    forwardTo: input.action === 'forward' ? forwardTo : [],
    webhookIds: input.webhookIds ?? null,
    zone: zone!,
  };
}

/** One team per routed domain: another team's route of it, or of this very address, is a 409. */
async function assertRoutable(deps: InboundRouteDeps, caller: Caller, fields: InboundRouteFields) {
  await routes.lockRoutedDomain(deps.db, fields.domain);
  if (await routes.domainRoutedByOtherTeam(deps.db, caller.teamId, fields.domain)) {
    throw conflict(`${fields.domain} is routed by another team: a domain takes mail for one team only`);
  }
}

export async function createRoute(deps: InboundRouteDeps, caller: Caller, input: InboundRouteInput) {
  assertTeamWide(caller, SCOPE);
  const fields = await checked(deps, caller, input);
  const row = await deps.db.transaction().execute(async (tx) => {
    await assertRoutable({ ...deps, db: tx }, caller, fields);
    const inserted = await routes.insertRoute(tx, caller.teamId, newSortableId(), fields);
    if (!inserted) throw conflict(`A route for ${fields.match} exists already`);
    await audit(tx, caller, { action: 'inboundRoute.created', targetType: 'inboundRoute', targetId: inserted.id });
    return inserted;
  });
  return toRoute(row, deps.config, fields.zone);
}

export async function listRoutes(deps: InboundRouteDeps, caller: Caller) {
  assertTeamWide(caller, SCOPE);
  const [rows, zones] = await Promise.all([routes.listRoutes(deps.db, caller.teamId), verifiedZones(deps, caller.teamId)]);
  return { data: rows.map((row) => toRoute(row, deps.config, zoneOf(row.domain, zones))) };
}

export async function getRoute(deps: InboundRouteDeps, caller: Caller, { id }: { id: string }) {
  assertTeamWide(caller, SCOPE);
  const row = await routes.findRoute(deps.db, caller.teamId, id);
  if (!row) throw notFound('Inbound route');
  return toRoute(row, deps.config, zoneOf(row.domain, await verifiedZones(deps, caller.teamId)));
}

export async function updateRoute(deps: InboundRouteDeps, caller: Caller, { id, ...changes }: { id: string } & Partial<InboundRouteInput>) {
  assertTeamWide(caller, SCOPE);
  const current = await routes.findRoute(deps.db, caller.teamId, id);
  if (!current) throw notFound('Inbound route');
  const fields = await checked(deps, caller, {
    match: changes.match ?? current.match,
    action: changes.action ?? current.action,
    forwardTo: changes.forwardTo ?? current.forward_to,
    webhookIds: changes.webhookIds === undefined ? current.webhook_ids : changes.webhookIds,
  });
  const row = await deps.db.transaction().execute(async (tx) => {
    await assertRoutable({ ...deps, db: tx }, caller, fields);
    if (!(await routes.findRoute(tx, caller.teamId, id, true))) throw notFound('Inbound route');
    const updated = await routes.updateRoute(tx, caller.teamId, id, fields);
    if (!updated) throw conflict(`A route for ${fields.match} exists already`);
    await audit(tx, caller, { action: 'inboundRoute.updated', targetType: 'inboundRoute', targetId: id });
    return updated;
  });
  return toRoute(row, deps.config, fields.zone);
}

export async function deleteRoute(deps: InboundRouteDeps, caller: Caller, { id }: { id: string }) {
  assertTeamWide(caller, SCOPE);
  await deps.db.transaction().execute(async (tx) => {
    if (!(await routes.deleteRoute(tx, caller.teamId, id))) throw notFound('Inbound route');
    await audit(tx, caller, { action: 'inboundRoute.deleted', targetType: 'inboundRoute', targetId: id });
  });
  return { id, success: true };
}
