import { hash } from 'node:crypto';
import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import type { EmailStatus, StoredAttachment } from '../db/schema.js';
import { findDomainSummary } from '../data/domains.js';
import * as emails from '../data/emails.js';
import type { EmailEventRow, EmailRow, NewEmail } from '../data/emails.js';
import { GroupedWrites } from '../db/grouped-writes.js';
import type { TemplateRow } from '../data/templates.js';
import { findIdempotencyKey, takeIdempotencyKey } from '../data/idempotency-keys.js';
import { audit } from '../events/audit.js';
import { firstStatus } from '../events/contract.js';
import { changeEmailSchedule, storeNewEmails } from '../events/email-changes.js';
import { formatMailbox, parseMailbox, splitAddressList } from '../mail/address.js';
import { isOwnHeader, isTrustHeader } from '../mail/headers.js';
import { htmlToText } from '../mail/html.js';
import { ApiError, conflict, notFound, type ErrorDetail } from '../errors.js';
import { newId } from '../ids.js';
import { parseSchedule } from '../scheduling/parse-schedule.js';
import { validationError } from '../validation.js';
import { assertDomainInScope, type Caller } from './caller.js';
import { renderFromTemplate, templatesByIds } from './templates.js';
import { assertRecentVerifiedSender, type SenderDeps } from './verified-sender.js';

export type EmailDeps = Pick<Deps, 'db' | 'dbKind' | 'config' | 'keyVault' | 'signals' | 'metrics' | 'recentSenders' | 'acceptedMail'>;

export const MAX_RECIPIENTS = 50;

export type EmailInput = {
  to: string | string[];
  from: string;
  /** Required unless templateId is given; with it, it replaces the template's subject. */
  subject?: string;
  html?: string | null;
  text?: string | null;
  templateId?: string;
  variables?: Record<string, string>;
  inReplyToId?: string | null;
  replyTo?: string | string[];
  cc?: string | string[];
  bcc?: string | string[];
  headers?: Record<string, string>;
  /** `contentId`: an inline part the HTML shows by `cid:` (SMTP submission keeps them). */
  attachments?: { filename: string; content: string; contentType?: string; contentId?: string }[];
  scheduledAt?: string;
};

const CONTENT_TYPES: Record<string, string> = {
  pdf: 'application/pdf', txt: 'text/plain', csv: 'text/csv', html: 'text/html', htm: 'text/html', ics: 'text/calendar',
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', svg: 'image/svg+xml',
  json: 'application/json', xml: 'application/xml', zip: 'application/zip', gz: 'application/gzip',
  doc: 'application/msword', docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel', xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};
const contentTypeOf = (filename: string) => CONTENT_TYPES[/\.([^.]+)$/.exec(filename)?.[1]?.toLowerCase() ?? ''] ?? 'application/octet-stream';

/** Each mailbox validated and stored as `addr` or `"Name" <addr>`. */
export function mailboxes(value: string | string[] | undefined, path: string, problems: ErrorDetail[], required = false): string[] {
  const items = (Array.isArray(value) ? value : value === undefined ? [] : [value]).flatMap(splitAddressList);
  if (required && items.length === 0) problems.push({ path, message: 'must name at least one address' });
  if (items.length > MAX_RECIPIENTS) problems.push({ path, message: `must be at most ${MAX_RECIPIENTS} addresses` });
  const result: string[] = [];
  for (const item of items) {
    const mailbox = parseMailbox(item);
    if (!mailbox) problems.push({ path, message: `"${item}" is not a valid email address` });
    else result.push(formatMailbox(mailbox));
  }
  return result;
}

type Prepared = Omit<NewEmail, 'teamId' | 'domainId' | 'messageId'>;

/**
 * What an email says: its own subject and bodies, or its template's rendered with its variables.
 * A message submitted over SMTP is taken as its author wrote it: it may lack a subject or a body.
 */
function contentOf(input: EmailInput, template: TemplateRow | undefined, submitted: boolean, at: (field: string) => string, problems: ErrorDetail[]) {
  if (template) {
    for (const field of ['html', 'text'] as const) {
      if (input[field] != null) problems.push({ path: at(field), message: `cannot be given with templateId: the template provides the ${field}` });
    }
    const rendered = renderFromTemplate(template, input, at, problems);
    return { ...rendered, text: rendered.text ?? (rendered.html === null ? null : htmlToText(rendered.html)) };
  }
  if (!input.subject && !submitted) problems.push({ path: at('subject'), message: 'is required unless templateId is given' });
  const html = input.html || null;
  const text = input.text || (html === null ? (submitted ? '' : null) : htmlToText(html));
  if (html === null && !input.text && !submitted) {
    problems.push({ path: at('html'), message: 'is required unless text or templateId is given' });
  }
  return { subject: input.subject ?? '', html, text };
}

/**
 * The path of a field under `prefix`. Made here, not as a named arrow in the caller: the name the
 * TypeScript loader gives such a function, set anew on each call, cost more than the whole check.
 */
const fieldPaths = (prefix: string) => (field: string) => `${prefix}${field}`;

/**
 * Checks one email's fields beyond their shape; every problem lands in `problems`, under `prefix`.
 * `template` is the one it names; `thread`, the header fields that make it a reply.
 */
function prepare(
  input: EmailInput,
  context: { prefix: string; now: Date; timeZone: string; template?: TemplateRow; thread?: Record<string, string>; submitted: boolean },
  problems: ErrorDetail[],
): Prepared {
  const { prefix, now, timeZone } = context;
  const at = fieldPaths(prefix);
  const to = mailboxes(input.to, at('to'), problems, !context.submitted);
  const cc = mailboxes(input.cc, at('cc'), problems);
  const bcc = mailboxes(input.bcc, at('bcc'), problems);
  const replyTo = mailboxes(input.replyTo, at('replyTo'), problems);
  const { subject, html, text } = contentOf(input, context.template, context.submitted, at, problems);
  const names = Object.keys(input.headers ?? {});
  const owned = names.filter(isOwnHeader);
  if (owned.length > 0) {
    problems.push({ path: at('headers'), message: `may not set ${owned.join(', ')}: Mailroom writes these header fields itself` });
  }
  const trust = names.filter((name) => !isOwnHeader(name) && isTrustHeader(name));
  if (trust.length > 0) {
    problems.push({ path: at('headers'), message: `may not set ${trust.join(', ')}: trace, authentication and routing header fields are for receiving servers to write` });
  }
  let scheduledAt: Date | null = null;
  if (input.scheduledAt !== undefined) {
    try {
      scheduledAt = parseSchedule(input.scheduledAt, { now, timeZone, field: at('scheduledAt') });
    } catch (error) {
      if (!(error instanceof ApiError) || !error.details) throw error;
      problems.push(...error.details);
    }
  }
  const attachments: StoredAttachment[] = (input.attachments ?? []).map((attachment) => ({
    filename: attachment.filename,
    contentType: attachment.contentType ?? contentTypeOf(attachment.filename),
    content: Buffer.from(attachment.content, 'base64').toString('base64'),
    ...(attachment.contentId ? { contentId: attachment.contentId } : {}),
  }));
  return {
    id: newId(),
    from: input.from,
    to, cc, bcc, replyTo,
    subject,
    html, text,
    headers: { ...input.headers, ...context.thread },
    attachments,
    templateId: context.template?.id ?? null,
    scheduledAt,
    sendAt: scheduledAt && scheduledAt > now ? scheduledAt : now,
    createdAt: now,
  };
}

/** The sender rule for each distinct `from` once: a verified domain of the team, within the key's scope. */
async function senderDomains(deps: SenderDeps & Pick<Deps, 'recentSenders'>, caller: Caller, inputs: EmailInput[], prefixes: string[], problems: ErrorDetail[]) {
  const found = new Map<string, { id: number; name: string; from: string } | null>();
  for (const [index, input] of inputs.entries()) {
    if (found.has(input.from)) {
      if (found.get(input.from) === null) problems.push({ path: `${prefixes[index]}from`, message: 'is not a verified sender (see above)' });
      continue;
    }
    try {
      const { mailbox, domain } = await assertRecentVerifiedSender(deps, caller.teamId, input.from, `${prefixes[index]}from`);
      assertDomainInScope(caller, domain.id, `send from ${domain.name}`);
      found.set(input.from, { id: domain.id, name: domain.name, from: formatMailbox(mailbox) });
    } catch (error) {
      if (!(error instanceof ApiError) || !error.details) throw error;
      problems.push(...error.details);
      found.set(input.from, null);
    }
  }
  return found;
}

/**
 * For each email an email replies to (inReplyToId): the header fields that put the reply in its
 * thread (RFC 5322 §3.6.4). Another team's email, or none, is a 404; another domain's, for a scoped key, a 403.
 */
async function threadsOf(db: Db, caller: Caller, inputs: EmailInput[]): Promise<Map<string, Record<string, string>>> {
  const threads = new Map<string, Record<string, string>>();
  for (const id of new Set(inputs.flatMap((input) => (input.inReplyToId ? [input.inReplyToId] : [])))) {
    const parent = await emails.findEmail(db, caller.teamId, id);
    if (!parent) throw new ApiError('NOT_FOUND', `Email ${id} (inReplyToId) not found`);
    assertDomainInScope(caller, parent.domain_id, 'reply to mail of another domain');
    const references = parent.headers['References'] ? `${parent.headers['References']} ${parent.message_id}` : parent.message_id;
    threads.set(id, { 'In-Reply-To': parent.message_id, References: references });
  }
  return threads;
}

/** Statements of accepted mail in flight at once on PostgreSQL: the rest of the pool stays free for everything else. */
const ACCEPT_STATEMENTS_IN_FLIGHT = 4;
/**
 * Mail accepted without an Idempotency-Key needs no transaction: its one statement stores the rows
 * and their webhook calls, all or none; and the requests that arrive together share one statement
 * (group commit). The embedded database runs one statement at a time anyway.
 */
export const newAcceptedMail = (db: Db, kind: Deps['dbKind']): Deps['acceptedMail'] =>
  new GroupedWrites<NewEmail>((all) => storeNewEmails(db, all), kind === 'pglite' ? 1 : ACCEPT_STATEMENTS_IN_FLIGHT);

const requestHash = (kind: string, inputs: EmailInput[]) => hash('sha256', JSON.stringify({ kind, inputs }), 'hex');

/**
 * Stores the emails, all or none; the dispatcher sends them. With an Idempotency-Key the same
 * request within 24 h answers as the first did and stores nothing again; another request under the
 * key is a 409.
 */
async function createEmails<R>(
  deps: EmailDeps,
  caller: Caller,
  request: { kind: 'single' | 'batch' | 'submission'; inputs: EmailInput[]; idempotencyKey: string | null },
  respond: (ids: string[]) => R,
): Promise<R> {
  const rows = await preparedRows(deps, caller, request);
  const response = respond(rows.map((row) => row.id));
  const { idempotencyKey } = request;
  if (idempotencyKey === null) {
    await deps.acceptedMail.add(rows);
    accepted(deps, rows);
    return response;
  }
  const stored = await deps.db.transaction().execute(async (tx) => {
    const bodyHash = requestHash(request.kind, request.inputs);
    const taken = await takeIdempotencyKey(tx, { teamId: caller.teamId, key: idempotencyKey, requestHash: bodyHash, response, now: new Date() });
    if (!taken) {
      const first = (await findIdempotencyKey(tx, caller.teamId, idempotencyKey))!;
      if (first.request_hash !== bodyHash) {
        throw conflict('This Idempotency-Key was already used with a different request in the last 24 hours; use a new key for a new request');
      }
      return first.response as R;
    }
    await storeNewEmails(tx, rows);
    return response;
  });
  if (stored === response) accepted(deps, rows);
  return stored;
}

/** The emails of a request as rows to store, every rule checked: all or none (a 400 naming every problem). */
async function preparedRows(deps: EmailDeps, caller: Caller, request: { kind: 'single' | 'batch' | 'submission'; inputs: EmailInput[] }): Promise<NewEmail[]> {
  const now = new Date();
  const problems: ErrorDetail[] = [];
  const prefixes = request.inputs.map((_input, index) => (request.kind === 'batch' ? `[${index}].` : ''));
  const templates = await templatesByIds(deps, caller, request.inputs.flatMap((input) => (input.templateId ? [input.templateId] : [])));
  const threads = await threadsOf(deps.db, caller, request.inputs);
  const prepared = request.inputs.map((input, index) =>
    prepare(input, {
      prefix: prefixes[index]!, now, timeZone: deps.config.scheduleTimeZone,
      template: input.templateId ? templates.get(input.templateId) : undefined,
      thread: input.inReplyToId ? threads.get(input.inReplyToId) : undefined,
      submitted: request.kind === 'submission',
    }, problems),
  );
  const domains = await senderDomains(deps, caller, request.inputs, prefixes, problems);
  if (problems.length > 0) throw validationError(problems);

  // Completed in place: a spread copy of each email cost more than everything else done here.
  return prepared.map((email, index) => {
    const domain = domains.get(request.inputs[index]!.from)!;
    return Object.assign(email, { from: domain.from, teamId: caller.teamId, domainId: domain.id, messageId: `<${email.id}@${domain.name}>` });
  });
}

/** What follows a commit of new mail: it is counted, and this process's dispatcher woken. */
function accepted(deps: Pick<Deps, 'metrics' | 'signals'>, rows: NewEmail[]): void {
  for (const row of rows) deps.metrics.emailsReached(firstStatus(row));
  deps.signals.emit('emailsDue');
}

export const sendEmail = (deps: EmailDeps, caller: Caller, input: { email: EmailInput; idempotencyKey: string | null }) =>
  createEmails(deps, caller, { kind: 'single', inputs: [input.email], idempotencyKey: input.idempotencyKey }, ([emailId]) => ({ emailId: emailId! }));

export const sendBatch = (deps: EmailDeps, caller: Caller, input: { emails: EmailInput[]; idempotencyKey: string | null }) =>
  createEmails(deps, caller, { kind: 'batch', inputs: input.emails, idempotencyKey: input.idempotencyKey }, (ids) => ({ data: ids.map((emailId) => ({ emailId })) }));

/**
 * A message submitted over SMTP, as one email: the same rules as `sendEmail`, except that its
 * recipients may all be Bcc (the envelope names them; the To field says undisclosed-recipients)
 * and that it may have no subject or body, as mail written by hand may.
 */
export const submitEmail = (deps: EmailDeps, caller: Caller, input: { email: EmailInput }) =>
  createEmails(deps, caller, { kind: 'submission', inputs: [input.email], idempotencyKey: null }, ([emailId]) => ({ emailId: emailId! }));

/**
 * Emails made by something that already writes in a transaction (received mail a route forwards):
 * the rules of a submitted message, stored in `tx` with the rest of that write. Answers the ids,
 * and what to do once `tx` has committed.
 */
export async function storeEmailsWith(deps: EmailDeps, caller: Caller, tx: Db, inputs: EmailInput[]) {
  const rows = await preparedRows(deps, caller, { kind: 'submission', inputs });
  await storeNewEmails(tx, rows);
  return { ids: rows.map((row) => row.id), committed: () => accepted(deps, rows) };
}

const joined = (addresses: string[]) => (addresses.length > 0 ? addresses.join(', ') : null);

export function toEmail(row: EmailRow) {
  return {
    id: row.id,
    teamId: row.team_id,
    domainId: row.domain_id,
    from: row.from_address,
    to: row.to_addresses.join(', '),
    replyTo: joined(row.reply_to_addresses),
    cc: joined(row.cc_addresses),
    bcc: joined(row.bcc_addresses),
    subject: row.subject,
    html: row.html,
    text: row.text,
    latestStatus: row.status,
    scheduledAt: row.scheduled_at?.toISOString() ?? null,
    templateId: row.template_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

const toEvent = (event: EmailEventRow) => ({
  emailId: event.email_id,
  status: event.status,
  createdAt: event.created_at.toISOString(),
  data: event.data,
});

/** The team's email, within the key's domain scope. */
async function findOwnEmail(db: Db, caller: Caller, id: string): Promise<EmailRow> {
  const row = await emails.findEmail(db, caller.teamId, id);
  if (!row) throw notFound('Email');
  assertDomainInScope(caller, row.domain_id, 'access mail of another domain');
  return row;
}

export async function getEmail(deps: EmailDeps, caller: Caller, input: { emailId: string }) {
  const row = await findOwnEmail(deps.db, caller, input.emailId);
  const events = await emails.listEvents(deps.db, caller.teamId, input.emailId);
  return { ...toEmail(row), emailEvents: events.map(toEvent) };
}

export type ListEmailsQuery = {
  page: number;
  limit: number;
  domainId?: number;
  status?: EmailStatus;
  startDate?: Date;
  endDate?: Date;
};

/**
 * The domain a list of the caller's mail is limited to: the one asked for, once it is in the key's
 * scope and the team's (another team's domain id answers as a missing one does, here as everywhere
 * else); else the key's own domain; else none.
 */
export async function listedDomain(deps: Pick<Deps, 'db'>, caller: Caller, domainId: number | undefined): Promise<number | null> {
  if (domainId !== undefined) {
    assertDomainInScope(caller, domainId, `list mail of domain ${domainId}`);
    if (!(await findDomainSummary(deps.db, caller.teamId, { id: domainId }))) throw notFound('Domain');
  }
  return caller.domainId ?? domainId ?? null;
}

export async function listEmails(deps: EmailDeps, caller: Caller, query: ListEmailsQuery) {
  const { rows, count } = await emails.listEmails(
    deps.db,
    caller.teamId,
    {
      domainId: await listedDomain(deps, caller, query.domainId),
      status: query.status ?? null,
      startDate: query.startDate ?? null,
      endDate: query.endDate ?? null,
    },
    { offset: (query.page - 1) * query.limit, limit: query.limit },
  );
  return { data: rows.map(toEmail), count };
}

/** Why a schedule change was refused: the state as it is now. */
function scheduleConflict(row: EmailRow, action: string) {
  const state = row.status === 'SCHEDULED' ? 'SCHEDULED and already picked up for sending' : row.status;
  return conflict(`Email ${row.id} is ${state}; it can only be ${action} while SCHEDULED and not yet picked up for sending`);
}

/** Changes the schedule of an email still SCHEDULED and unclaimed, with its audit row (409 otherwise). */
async function moveSchedule(deps: EmailDeps, caller: Caller, row: EmailRow, change: Parameters<typeof changeEmailSchedule>[2], action: 'email.cancelled' | 'email.rescheduled') {
  const changed = await deps.db.transaction().execute(async (tx) => {
    const moved = await changeEmailSchedule(tx, row, change);
    if (moved) await audit(tx, caller, { action, targetType: 'email', targetId: row.id });
    return moved;
  });
  if (!changed) throw scheduleConflict((await emails.findEmail(deps.db, caller.teamId, row.id)) ?? row, action.slice('email.'.length));
}

/** Cancels a SCHEDULED email no dispatcher has claimed; it can then never be sent. */
export async function cancelEmail(deps: EmailDeps, caller: Caller, input: { emailId: string }) {
  const row = await findOwnEmail(deps.db, caller, input.emailId);
  await moveSchedule(deps, caller, row, { status: 'CANCELLED', sendAt: null, data: null, now: new Date() }, 'email.cancelled');
  deps.metrics.emailsReached('CANCELLED');
  return { emailId: row.id };
}

export async function rescheduleEmail(deps: EmailDeps, caller: Caller, input: { emailId: string; scheduledAt: string }) {
  const id = input.emailId;
  const now = new Date();
  const scheduledAt = parseSchedule(input.scheduledAt, { now, timeZone: deps.config.scheduleTimeZone });
  const row = await findOwnEmail(deps.db, caller, id);
  const data = { scheduledAt: scheduledAt.toISOString(), previousScheduledAt: row.scheduled_at?.toISOString() ?? null };
  await moveSchedule(deps, caller, row, { status: 'SCHEDULED', sendAt: scheduledAt > now ? scheduledAt : now, data, now }, 'email.rescheduled');
  deps.signals.emit('emailsDue');
  return { emailId: id };
}
