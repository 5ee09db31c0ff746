import { setTimeout as delay } from 'node:timers/promises';
import { hasUnsubscribePlaceholder, UNSUBSCRIBE_PLACEHOLDERS } from '../campaigns/template.js';
import { renderEditorContent } from '../campaigns/editor-content.js';
import type { Db } from '../db/connection.js';
import type { CampaignStatus } from '../db/schema.js';
import * as campaigns from '../data/campaigns.js';
import type { CampaignRow } from '../data/campaigns.js';
import { findBookForContacts } from '../data/contacts.js';
import type { Deps } from '../deps.js';
import { audit, type AuditAction } from '../events/audit.js';
import { reportCampaignStatuses } from '../events/campaigns.js';
import { cancelCampaignMail } from '../events/email-changes.js';
import { ApiError, conflict, notFound, type ErrorDetail } from '../errors.js';
import { newId } from '../ids.js';
import { formatMailbox } from '../mail/address.js';
import { parseSchedule } from '../scheduling/parse-schedule.js';
import { validationError } from '../validation.js';
import { assertDomainInScope, type Caller } from './caller.js';
import { mailboxes } from './emails.js';
import { segmentForCampaign } from './segments.js';
import { assertVerifiedSender } from './verified-sender.js';

export type CampaignDeps = Pick<Deps, 'db' | 'config' | 'keyVault' | 'signals' | 'metrics'>;

export const PAGE_SIZE = 30;
// Pause and delete wait this long at most for mail a dispatcher is handing to SMTP right now.
const IN_FLIGHT_WAIT_MS = 30_000;

export type CreateCampaignInput = {
  name: string;
  from: string;
  subject: string;
  contactBookId: string;
  segmentId?: string;
  previewText?: string;
  content?: string;
  html?: string;
  replyTo?: string | string[];
  cc?: string | string[];
  bcc?: string | string[];
  sendNow?: boolean;
  scheduledAt?: string;
  batchSize: number;
  batchWindowMinutes: number;
};

export function toCampaign(row: CampaignRow) {
  return {
    id: row.id,
    name: row.name,
    from: row.from_address,
    subject: row.subject,
    previewText: row.preview_text,
    contactBookId: row.contact_book_id,
    segmentId: row.segment_id,
    html: row.html,
    content: row.content,
    status: row.status,
    pausedReason: row.paused_reason,
    scheduledAt: row.scheduled_at?.toISOString() ?? null,
    batchSize: row.batch_size,
    batchWindowMinutes: row.batch_window_minutes,
    total: row.total,
    sent: row.sent,
    delivered: row.delivered,
    opened: row.opened,
    clicked: row.clicked,
    unsubscribed: row.unsubscribed,
    bounced: row.bounced,
    hardBounced: row.hard_bounced,
    complained: row.complained,
    replyTo: row.reply_to_addresses,
    cc: row.cc_addresses,
    bcc: row.bcc_addresses,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function scheduleOf(input: { scheduledAt?: string }, deps: CampaignDeps, now: Date, problems: ErrorDetail[]): Date | null {
  if (input.scheduledAt === undefined) return null;
  try {
    return parseSchedule(input.scheduledAt, { now, timeZone: deps.config.scheduleTimeZone });
  } catch (error) {
    if (!(error instanceof ApiError) || !error.details) throw error;
    problems.push(...error.details);
    return null;
  }
}

/** The body that is sent: the html given, or the editor content rendered; either way with an unsubscribe link. */
function bodyOf(input: CreateCampaignInput, problems: ErrorDetail[]): string | null {
  if (!input.html && !input.content) {
    problems.push({ path: 'html', message: 'is required unless content is given' });
    return null;
  }
  let html: string;
  try {
    html = input.html || renderEditorContent(input.content!);
  } catch (error) {
    if (!(error instanceof ApiError) || !error.details) throw error;
    problems.push(...error.details);
    return null;
  }
  if (!hasUnsubscribePlaceholder(html)) {
    problems.push({
      path: input.html ? 'html' : 'content',
      message: `must contain an unsubscribe link placeholder: ${UNSUBSCRIBE_PLACEHOLDERS.map((name) => `{{${name}}}`).join(', ')}`,
    });
  }
  return html;
}

/** Validates every field, then stores the campaign, scheduled when asked, in one transaction. */
export async function createCampaign(deps: CampaignDeps, caller: Caller, input: CreateCampaignInput) {
  const { teamId } = caller;
  const now = new Date();
  const problems: ErrorDetail[] = [];
  if (input.sendNow && input.scheduledAt !== undefined) {
    problems.push({ path: 'scheduledAt', message: 'cannot be given together with sendNow: choose one' });
  }
  const html = bodyOf(input, problems);
  const replyTo = mailboxes(input.replyTo, 'replyTo', problems);
  const cc = mailboxes(input.cc, 'cc', problems);
  const bcc = mailboxes(input.bcc, 'bcc', problems);
  const scheduledAt = input.sendNow ? now : scheduleOf(input, deps, now, problems);
  let sender: Awaited<ReturnType<typeof assertVerifiedSender>> | null = null;
  try {
    sender = await assertVerifiedSender(deps, teamId, input.from);
  } catch (error) {
    if (!(error instanceof ApiError) || !error.details) throw error;
    problems.push(...error.details);
  }
  if (problems.length > 0 || !sender || html === null) throw validationError(problems);
  const { mailbox, domain } = sender;
  assertDomainInScope(caller, domain.id, `send from ${domain.name}`);

  const id = newId();
  await deps.db.transaction().execute(async (tx) => {
    // The book's key-share lock keeps it from being deleted until the campaign that uses it exists.
    const book = await findBookForContacts(tx, teamId, input.contactBookId, 'keyShare');
    if (!book) throw validationError([{ path: 'contactBookId', message: `contact book ${input.contactBookId} not found in this team` }]);
    // Its key-share lock keeps the segment until the campaign that goes to it exists.
    const segment = input.segmentId === undefined ? null : await segmentForCampaign(tx, teamId, book.id, input.segmentId);
    const created = await campaigns.insertCampaign(tx, {
      teamId,
      id,
      name: input.name,
      domainId: domain.id,
      from: formatMailbox(mailbox),
      subject: input.subject,
      previewText: input.previewText ?? null,
      contactBookId: book.id,
      segmentId: segment?.id ?? null,
      html,
      content: input.content ?? null,
      replyTo,
      cc,
      bcc,
      status: scheduledAt ? 'SCHEDULED' : 'DRAFT',
      scheduledAt,
      batchSize: input.batchSize,
      batchWindowMinutes: input.batchWindowMinutes,
      now,
    });
    await reportCampaignStatuses(tx, [{ row: created, previous: null }]);
    await audit(tx, caller, { action: 'campaign.created', targetType: 'campaign', targetId: id });
  });
  if (scheduledAt) deps.signals.emit('campaignsDue');
  return getCampaign(deps, caller, { campaignId: id });
}

/** The team's campaign, within the key's domain scope. */
export function inScope(caller: Caller, row: CampaignRow | undefined): CampaignRow {
  if (!row) throw notFound('Campaign');
  assertDomainInScope(caller, row.domain_id, 'access campaigns of another domain');
  return row;
}

export async function getCampaign(deps: CampaignDeps, caller: Caller, { campaignId }: { campaignId: string }) {
  return toCampaign(inScope(caller, await campaigns.findCampaign(deps.db, caller.teamId, campaignId)));
}

export async function listCampaigns(deps: CampaignDeps, { teamId, domainId }: Caller, query: { page: number; status?: CampaignStatus; search?: string }) {
  const { rows, count } = await campaigns.listCampaigns(deps.db, teamId, { ...query, domainId }, { offset: (query.page - 1) * PAGE_SIZE, limit: PAGE_SIZE });
  return { campaigns: rows.map(toCampaign), totalPage: Math.ceil(count / PAGE_SIZE) };
}

/**
 * Renames the campaign, or points it at another segment of its book (null: the whole book). A
 * release finishes with the segment it started with (its total was counted from it), so the
 * segment changes only before (409 after).
 */
export async function updateCampaign(
  deps: CampaignDeps,
  caller: Caller,
  { campaignId: id, name, segmentId }: { campaignId: string; name?: string; segmentId?: string | null },
) {
  await deps.db.transaction().execute(async (tx) => {
    const row = inScope(caller, await campaigns.findCampaign(tx, caller.teamId, id, true));
    if (segmentId !== undefined && row.started_at !== null) {
      throw conflict(`Campaign ${id} is ${row.status} and its release has started; its segment can only change before`);
    }
    // Its key-share lock keeps the segment until the campaign that goes to it points at it.
    const segment = segmentId ? await segmentForCampaign(tx, caller.teamId, row.contact_book_id ?? '', segmentId) : null;
    await campaigns.updateCampaign(tx, caller.teamId, id, {
      ...(name === undefined ? {} : { name }),
      ...(segmentId === undefined ? {} : { segment_id: segment?.id ?? null }),
      updated_at: new Date(),
    });
    await audit(tx, caller, { action: 'campaign.updated', targetType: 'campaign', targetId: id });
  });
  return getCampaign(deps, caller, { campaignId: id });
}

/** Runs `move` on the campaign locked, after checking its status allows it (409 naming it otherwise). */
async function move<T>(
  deps: CampaignDeps,
  caller: Caller,
  id: string,
  action: { verb: string; from: CampaignStatus[] },
  work: (tx: Db, row: CampaignRow, now: Date) => Promise<T>,
): Promise<T> {
  return deps.db.transaction().execute(async (tx) => {
    const row = inScope(caller, await campaigns.findCampaign(tx, caller.teamId, id, true));
    if (!action.from.includes(row.status)) {
      throw conflict(`Campaign ${id} is ${row.status}; it can only be ${action.verb} while ${action.from.join(' or ')}`);
    }
    return work(tx, row, new Date());
  });
}

/** Changes the campaign as `action` says, reporting campaign.status_changed when its status moved. */
async function change(tx: Db, caller: Caller, row: CampaignRow, action: AuditAction, set: Parameters<typeof campaigns.updateCampaign>[3]) {
  const changed = await campaigns.updateCampaign(tx, row.team_id, row.id, set);
  await reportCampaignStatuses(tx, [{ row: changed, previous: row.status }]);
  await audit(tx, caller, { action, targetType: 'campaign', targetId: row.id });
}

/** Waits until no dispatcher holds mail of the campaign, so none leaves after the caller returns. */
async function settleInFlight(deps: CampaignDeps, teamId: number, id: string) {
  const deadline = Date.now() + Math.min(IN_FLIGHT_WAIT_MS, deps.config.dispatchLeaseMs);
  while (Date.now() < deadline && (await campaigns.countClaimedEmails(deps.db, teamId, id, new Date())) > 0) await delay(20);
}

export async function scheduleCampaign(
  deps: CampaignDeps,
  caller: Caller,
  { campaignId: id, ...input }: { campaignId: string; scheduledAt?: string; batchSize?: number },
) {
  const problems: ErrorDetail[] = [];
  const now = new Date();
  const scheduledAt = scheduleOf(input, deps, now, problems) ?? now;
  if (problems.length > 0) throw validationError(problems);
  await move(deps, caller, id, { verb: 'scheduled', from: ['DRAFT', 'SCHEDULED', 'PAUSED'] }, async (tx, row, at) => {
    await change(tx, caller, row, 'campaign.scheduled', {
      // A campaign whose recipients are all out stays RUNNING until its last mail goes, then SENT.
      status: row.released_all ? 'RUNNING' : 'SCHEDULED',
      scheduled_at: scheduledAt,
      batch_size: input.batchSize ?? row.batch_size,
      next_release_at: row.released_all ? null : scheduledAt,
      paused_reason: null,
      updated_at: at,
    });
    if (row.status === 'PAUSED') await campaigns.releaseHeldEmails(tx, caller.teamId, id, scheduledAt);
  });
  deps.signals.emit('campaignsDue');
  return { success: true };
}

export async function pauseCampaign(deps: CampaignDeps, caller: Caller, { campaignId: id }: { campaignId: string }) {
  const paused = await move(deps, caller, id, { verb: 'paused', from: ['SCHEDULED', 'RUNNING', 'PAUSED'] }, async (tx, row, now) => {
    if (row.status === 'PAUSED') return false;
    await change(tx, caller, row, 'campaign.paused', { status: 'PAUSED', next_release_at: null, paused_reason: null, updated_at: now });
    await campaigns.holdCampaignEmails(tx, caller.teamId, id, now);
    return true;
  });
  if (paused) await settleInFlight(deps, caller.teamId, id);
  return { success: true };
}

export async function resumeCampaign(deps: CampaignDeps, caller: Caller, { campaignId: id }: { campaignId: string }) {
  await move(deps, caller, id, { verb: 'resumed', from: ['PAUSED'] }, async (tx, row, now) => {
    const due = row.scheduled_at && row.scheduled_at > now ? row.scheduled_at : now;
    await change(tx, caller, row, 'campaign.resumed', {
      status: row.started_at ? 'RUNNING' : 'SCHEDULED',
      next_release_at: row.released_all ? null : due,
      paused_reason: null,
      updated_at: now,
    });
    await campaigns.releaseHeldEmails(tx, caller.teamId, id, due);
  });
  deps.signals.emit('campaignsDue');
  deps.signals.emit('emailsDue');
  return { success: true };
}

/** Deletes in any state; mail not yet handed to SMTP is cancelled in the same transaction. */
export async function deleteCampaign(deps: CampaignDeps, caller: Caller, { campaignId: id }: { campaignId: string }) {
  const { deleted, cancelled } = await move(deps, caller, id, { verb: 'deleted', from: ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'SENT'] }, async (tx, row, now) => {
    const cancelled = await cancelCampaignMail(tx, row, now);
    await campaigns.deleteCampaignRow(tx, caller.teamId, id);
    await audit(tx, caller, { action: 'campaign.deleted', targetType: 'campaign', targetId: id });
    return { deleted: toCampaign(row), cancelled };
  });
  deps.metrics.emailsReached('CANCELLED', cancelled);
  await settleInFlight(deps, caller.teamId, id);
  return deleted;
}
