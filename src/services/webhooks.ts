import type { Config } from '../config.js';
import * as calls from '../data/webhook-calls.js';
import type { CallRow } from '../data/webhook-calls.js';
import * as webhooks from '../data/webhooks.js';
import type { WebhookChanges, WebhookRow } from '../data/webhooks.js';
import type { WebhookCallStatus } from '../db/schema.js';
import { audit } from '../events/audit.js';
import { EVENT_TYPES, type Event, type EventType } from '../events/contract.js';
import type { Deps } from '../deps.js';
import { conflict, notFound, type ErrorDetail } from '../errors.js';
import { newSortableId } from '../ids.js';
import { validationError } from '../validation.js';
import { AllowList, checkWebhookUrl, PortList, systemLookup, type Guard } from '../webhooks/address-guard.js';
import { callBody } from '../webhooks/payload.js';
import { newWebhookSecret } from '../webhooks/signing.js';
import { assertTeamWide, type Caller } from './caller.js';

export type WebhookDeps = Pick<Deps, 'db' | 'config' | 'keyVault' | 'signals'>;

export type WebhookInput = {
  url: string;
  /** Omitted, null: every event type, including those added later. */
  events?: EventType[] | null;
  /** Omitted, null or empty: email events of every domain. */
  domainIds?: number[] | null;
  description?: string | null;
};
export type WebhookUpdate = Partial<WebhookInput> & { status?: 'ACTIVE' | 'PAUSED' };

/** A team's webhooks at most; each one costs every event of the team a call. */
export const MAX_WEBHOOKS_PER_TEAM = 50;

// A webhook hears events of every domain of the team (or of the domains it names): only a key for
// the whole team may see or change one.
const TEAM_WIDE = 'webhooks carry the events of every domain of the team, so only a key for the whole team may use them';

const TEST_CALL_MESSAGE = 'This is a test call from Mailroom';

// The guard reads the allow-list and the resolver from the config: built once per config.
const guards = new WeakMap<Config, Guard>();
function guardOf(config: Config): Guard {
  let guard = guards.get(config);
  if (!guard) {
    guard = { allow: new AllowList(config.webhookAllowedHosts), lookup: systemLookup(config), ports: new PortList(config.webhookAllowedPorts) };
    guards.set(config, guard);
  }
  return guard;
}

const secretOwner = (id: string) => `The signing secret of webhook ${id}`;

/** A webhook as answered: `events` in full when it hears every type. Never with its secret. */
export function toWebhook(row: WebhookRow) {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events.length > 0 ? row.events : [...EVENT_TYPES],
    domainIds: row.domain_ids,
    status: row.status,
    disabledReason: row.disabled_reason,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** A webhook with its signing secret in clear: for create, GET of one webhook and rotate only. */
function withSecret(deps: WebhookDeps, row: WebhookRow, secret?: string) {
  return { ...toWebhook(row), secret: secret ?? deps.keyVault.openText(row.secret, secretOwner(row.id)) };
}

/** A call as the log shows it, with the body the receiver gets (of its latest attempt, or its first). */
export function toCall(row: CallRow) {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    type: row.type,
    status: row.status,
    attempt: row.attempt,
    responseStatus: row.response_status,
    responseTimeMs: row.response_time_ms,
    lastError: row.last_error,
    nextAttemptAt: row.status === 'PENDING' ? row.next_attempt_at.toISOString() : null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    payload: callBody(row, Math.max(row.attempt, 1)),
  };
}

const unique = <T>(values: T[]) => [...new Set(values)];

/**
 * The fields as they will be stored, each checked: the URL against the SSRF guard (it may resolve
 * the host), the domains against the team's. Every problem is named in one 400.
 */
async function checkedFields(deps: WebhookDeps, caller: Caller, input: Partial<WebhookInput>) {
  const problems: ErrorDetail[] = [];
  const fields: Partial<Pick<WebhookChanges, 'url' | 'events' | 'domainIds' | 'description'>> = {};
  if (input.url !== undefined) {
    const check = await checkWebhookUrl(input.url, guardOf(deps.config));
    if (check.ok) fields.url = check.url.href;
    else problems.push({ path: 'url', message: check.reason });
  }
  if (input.events !== undefined) fields.events = input.events === null ? [] : unique(input.events);
  if (input.domainIds !== undefined) {
    const wanted = input.domainIds ?? [];
    const owned = await webhooks.teamDomainIds(deps.db, caller.teamId, unique(wanted));
    wanted.forEach((id, index) => {
      if (!owned.has(id)) problems.push({ path: `domainIds[${index}]`, message: `domain ${id} not found` });
    });
    fields.domainIds = unique(wanted);
  }
  if (input.description !== undefined) fields.description = input.description === null || input.description === '' ? null : input.description;
  if (problems.length > 0) throw validationError(problems);
  return fields;
}

export async function createWebhook(deps: WebhookDeps, caller: Caller, input: WebhookInput) {
  assertTeamWide(caller, TEAM_WIDE);
  const fields = await checkedFields(deps, caller, { events: null, domainIds: null, description: null, ...input });
  const secret = newWebhookSecret();
  const row = await deps.db.transaction().execute(async (tx) => {
    await webhooks.lockTeamWebhooks(tx, caller.teamId);
    if ((await webhooks.countWebhooks(tx, caller.teamId)) >= MAX_WEBHOOKS_PER_TEAM) {
      throw conflict(`A team may have at most ${MAX_WEBHOOKS_PER_TEAM} webhooks; delete one first`);
    }
    const created = await webhooks.insertWebhook(
      tx,
      caller.teamId,
      newSortableId(),
      { url: fields.url!, description: fields.description ?? null, events: fields.events ?? [], domainIds: fields.domainIds ?? [], secret: deps.keyVault.sealText(secret) },
      new Date(),
    );
    await audit(tx, caller, { action: 'webhook.created', targetType: 'webhook', targetId: created.id });
    return created;
  });
  return withSecret(deps, row, secret);
}

export async function listWebhooks(deps: WebhookDeps, caller: Caller, query: { page: number; limit: number }) {
  assertTeamWide(caller, TEAM_WIDE);
  const { rows, count } = await webhooks.listWebhooks(deps.db, caller.teamId, { offset: (query.page - 1) * query.limit, limit: query.limit });
  return { data: rows.map(toWebhook), count };
}

async function existing(deps: WebhookDeps, caller: Caller, webhookId: string): Promise<WebhookRow> {
  const row = await webhooks.findWebhook(deps.db, caller.teamId, webhookId);
  if (!row) throw notFound('Webhook');
  return row;
}

export async function getWebhook(deps: WebhookDeps, caller: Caller, { webhookId }: { webhookId: string }) {
  assertTeamWide(caller, TEAM_WIDE);
  return withSecret(deps, await existing(deps, caller, webhookId));
}

export async function updateWebhook(deps: WebhookDeps, caller: Caller, { webhookId, status, ...input }: { webhookId: string } & WebhookUpdate) {
  assertTeamWide(caller, TEAM_WIDE);
  // Checked before the row is locked: the URL check may wait for DNS.
  await existing(deps, caller, webhookId);
  const fields = await checkedFields(deps, caller, input);
  return deps.db.transaction().execute(async (tx) => {
    const current = await webhooks.findWebhook(tx, caller.teamId, webhookId, true);
    if (!current) throw notFound('Webhook');
    const changes: WebhookChanges = { ...fields };
    if (status !== undefined && status !== current.status) {
      changes.status = status;
      changes.disabledReason = null;
      // Re-activated: its run of failed calls starts again.
      if (status === 'ACTIVE') changes.failedInARow = 0;
    }
    const updated = (await webhooks.updateWebhook(tx, caller.teamId, webhookId, changes, new Date()))!;
    await audit(tx, caller, { action: 'webhook.updated', targetType: 'webhook', targetId: webhookId });
    return toWebhook(updated);
  });
}

export async function deleteWebhook(deps: WebhookDeps, caller: Caller, { webhookId }: { webhookId: string }) {
  assertTeamWide(caller, TEAM_WIDE);
  return deps.db.transaction().execute(async (tx) => {
    if (!(await webhooks.deleteWebhook(tx, caller.teamId, webhookId))) throw notFound('Webhook');
    await audit(tx, caller, { action: 'webhook.deleted', targetType: 'webhook', targetId: webhookId });
    return { id: webhookId, success: true };
  });
}

export async function rotateWebhookSecret(deps: WebhookDeps, caller: Caller, { webhookId }: { webhookId: string }) {
  assertTeamWide(caller, TEAM_WIDE);
  const secret = newWebhookSecret();
  const row = await deps.db.transaction().execute(async (tx) => {
    const rotated = await webhooks.updateWebhook(tx, caller.teamId, webhookId, { secret: deps.keyVault.sealText(secret) }, new Date());
    if (!rotated) throw notFound('Webhook');
    await audit(tx, caller, { action: 'webhook.secretRotated', targetType: 'webhook', targetId: webhookId });
    return rotated;
  });
  return withSecret(deps, row, secret);
}

export async function testWebhook(deps: WebhookDeps, caller: Caller, { webhookId }: { webhookId: string }) {
  assertTeamWide(caller, TEAM_WIDE);
  const webhook = await existing(deps, caller, webhookId);
  if (webhook.status !== 'ACTIVE') {
    throw conflict(`Webhook ${webhookId} is ${webhook.status}; only an ACTIVE webhook is called: set its status to ACTIVE first`);
  }
  const event: Event = { type: 'webhook.test', data: { webhookId, message: TEST_CALL_MESSAGE } };
  const call = await deps.db.transaction().execute(async (tx) => {
    const inserted = await calls.insertCall(tx, { teamId: caller.teamId, webhookId, subjectKey: null, ...event }, new Date());
    await audit(tx, caller, { action: 'webhook.tested', targetType: 'webhook', targetId: webhookId });
    return inserted;
  });
  deps.signals.emit('webhookCallsDue');
  return toCall(call);
}

export async function listWebhookCalls(
  deps: WebhookDeps,
  caller: Caller,
  query: { webhookId: string; page: number; limit: number; status?: WebhookCallStatus },
) {
  assertTeamWide(caller, TEAM_WIDE);
  await existing(deps, caller, query.webhookId);
  const { rows, count } = await calls.listCalls(deps.db, caller.teamId, query.webhookId, {
    offset: (query.page - 1) * query.limit,
    limit: query.limit,
    ...(query.status ? { status: query.status } : {}),
  });
  return { data: rows.map(toCall), count };
}

/** The 404 for a call that is not there: of the webhook when that is missing too. */
async function callNotFound(deps: WebhookDeps, caller: Caller, webhookId: string) {
  await existing(deps, caller, webhookId);
  return notFound('Webhook call');
}

export async function getWebhookCall(deps: WebhookDeps, caller: Caller, { webhookId, callId }: { webhookId: string; callId: string }) {
  assertTeamWide(caller, TEAM_WIDE);
  const row = await calls.findCall(deps.db, caller.teamId, webhookId, callId);
  if (!row) throw await callNotFound(deps, caller, webhookId);
  return toCall(row);
}

export async function retryWebhookCall(deps: WebhookDeps, caller: Caller, { webhookId, callId }: { webhookId: string; callId: string }) {
  assertTeamWide(caller, TEAM_WIDE);
  const retried = await deps.db.transaction().execute(async (tx) => {
    const call = await calls.retryCall(tx, caller.teamId, webhookId, callId, new Date());
    if (call) await audit(tx, caller, { action: 'webhookCall.retried', targetType: 'webhookCall', targetId: callId });
    return call;
  });
  if (retried) {
    deps.signals.emit('webhookCallsDue');
    return toCall(retried);
  }
  // PENDING already (it goes out on its own), or not there.
  const row = await calls.findCall(deps.db, caller.teamId, webhookId, callId);
  if (!row) throw await callNotFound(deps, caller, webhookId);
  return toCall(row);
}
