import type { Context } from 'hono';
import { z } from 'zod';
import { invalid } from '../errors.js';
import { defineRoute } from '../http/route.js';
import { emailBody, scheduledAt } from '../services/email-body.js';
import * as service from '../services/emails.js';

const TAG = 'Emails';

export const EMAIL_STATUSES = [
  'SCHEDULED', 'QUEUED', 'SENT', 'DELIVERY_DELAYED', 'DELIVERED', 'BOUNCED', 'COMPLAINED',
  'OPENED', 'CLICKED', 'CANCELLED', 'FAILED', 'REJECTED', 'SUPPRESSED',
] as const;
const MAX_BATCH = 100;

const ISO_DATE = /^\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d))?$/i;

const emailFields = {
  id: z.string(),
  teamId: z.number().int(),
  domainId: z.number().int().nullable(),
  from: z.string(),
  to: z.string().describe('Comma-separated'),
  replyTo: z.string().nullable(),
  cc: z.string().nullable(),
  bcc: z.string().nullable(),
  subject: z.string(),
  html: z.string().nullable().describe('Null once retention dropped it, RETENTION_DAYS after the email was created or scheduled for (its events stay)'),
  text: z.string().nullable().describe('Null once dropped, like html'),
  latestStatus: z.enum(EMAIL_STATUSES),
  scheduledAt: z.string().nullable(),
  templateId: z.string().nullable().describe('The template the email was rendered from'),
  createdAt: z.string(),
  updatedAt: z.string(),
};

const emailEvent = z.object({
  emailId: z.string(),
  status: z.enum(EMAIL_STATUSES),
  createdAt: z.string(),
  data: z.record(z.string(), z.unknown()).nullable(),
});

const emailParams = z.object({ emailId: z.string().min(3).max(128) });
const emailIdResponse = z.object({ emailId: z.string() });

const EARLIEST_DATE = new Date('1970-01-01T00:00:00Z');
const LATEST_DATE = new Date('9999-12-31T23:59:59.999Z');

const isoDate = z
  .string()
  .regex(ISO_DATE, 'must be an ISO 8601 date or date-time')
  .transform((value) => new Date(value))
  .refine((date) => !Number.isNaN(date.getTime()), 'must be a real date')
  // Mail has no dates before the epoch, and the database none past year 9999.
  .refine((date) => date >= EARLIEST_DATE && date <= LATEST_DATE, 'must be between 1970-01-01 and 9999-12-31');

export const listEmailsQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  domainId: z.coerce.number().int().min(1).max(2_147_483_647).optional(),
  status: z.enum(EMAIL_STATUSES).optional(),
  startDate: isoDate.optional(),
  endDate: isoDate.optional(),
});

/** The Idempotency-Key header, when given: 1 to 256 printable characters. */
function idempotencyKey(c: Context): string | null {
  const key = c.req.header('idempotency-key');
  if (key === undefined) return null;
  if (!/^[\x21-\x7e][\x20-\x7e]{0,255}$/.test(key)) {
    throw invalid('Idempotency-Key', 'must be 1 to 256 printable ASCII characters');
  }
  return key;
}

const IDEMPOTENCY_NOTE =
  'With an `Idempotency-Key` header (at most 256 characters) the same request within 24 hours answers as the first ' +
  'did without sending again; another request under the same key is a 409.';
const SCHEDULE_RULE = 'Only while the email is SCHEDULED and no dispatcher has picked it up; otherwise 409.';

export const emailRoutes = [
  defineRoute({
    method: 'post',
    path: '/emails',
    tag: TAG,
    summary: 'Send an email',
    description:
      'Stores the email (QUEUED, or SCHEDULED with `scheduledAt`) and answers its id; the dispatcher sends it. ' +
      `Recipients on the team's suppression list are skipped (SUPPRESSED when none is left). ${IDEMPOTENCY_NOTE}`,
    permission: 'sending',
    body: emailBody,
    response: emailIdResponse,
    handler: ({ deps, auth, body, c }) => service.sendEmail(deps, auth, { email: body, idempotencyKey: idempotencyKey(c) }),
  }),
  defineRoute({
    method: 'post',
    path: '/emails/batch',
    tag: TAG,
    summary: `Send up to ${MAX_BATCH} emails`,
    description: `All or none: one invalid email refuses the batch, naming each problem by index. ${IDEMPOTENCY_NOTE}`,
    permission: 'sending',
    body: z.array(emailBody).min(1).max(MAX_BATCH),
    response: z.object({ data: z.array(emailIdResponse) }),
    handler: ({ deps, auth, body, c }) => service.sendBatch(deps, auth, { emails: body, idempotencyKey: idempotencyKey(c) }),
  }),
  defineRoute({
    method: 'get',
    path: '/emails',
    tag: TAG,
    summary: 'List emails',
    description: 'Newest first. Filters combine: `domainId`, `status` (the latest), `startDate` and `endDate` (creation time, inclusive).',
    permission: 'sending',
    query: listEmailsQuery,
    response: z.object({ data: z.array(z.object(emailFields)), count: z.number().int() }),
    handler: ({ deps, auth, query }) => service.listEmails(deps, auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/emails/{emailId}',
    tag: TAG,
    summary: 'Get an email with its events',
    description: '`emailEvents` in time order, one per change of state; `latestStatus` is the last.',
    permission: 'sending',
    params: emailParams,
    response: z.object({ ...emailFields, emailEvents: z.array(emailEvent) }),
    handler: ({ deps, auth, params }) => service.getEmail(deps, auth, params),
  }),
  defineRoute({
    method: 'patch',
    path: '/emails/{emailId}',
    tag: TAG,
    summary: 'Reschedule a scheduled email',
    description: SCHEDULE_RULE,
    permission: 'sending',
    params: emailParams,
    body: z.object({ scheduledAt }),
    response: emailIdResponse,
    handler: ({ deps, auth, params, body }) => service.rescheduleEmail(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'post',
    path: '/emails/{emailId}/cancel',
    tag: TAG,
    summary: 'Cancel a scheduled email',
    description: `${SCHEDULE_RULE} A cancelled email is never sent.`,
    permission: 'sending',
    params: emailParams,
    response: emailIdResponse,
    handler: ({ deps, auth, params }) => service.cancelEmail(deps, auth, params),
  }),
];
