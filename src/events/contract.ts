import { z } from 'zod';
import type { CountKind, EmailStatus } from '../db/schema.js';

/**
 * The event contract: every event Mailroom reports, with the exact shape of its webhook payload
 * (`data`), and what each email status does to an email. The outbox, the API's webhook types and
 * its OpenAPI document, and the dashboard all read these; nothing else defines an event.
 */

export const EMAIL_STATUSES = [
  'SCHEDULED', 'QUEUED', 'SENT', 'DELIVERY_DELAYED', 'DELIVERED', 'BOUNCED', 'COMPLAINED',
  'OPENED', 'CLICKED', 'CANCELLED', 'FAILED', 'REJECTED', 'SUPPRESSED',
] as const satisfies readonly EmailStatus[];

/**
 * Which status an email shows when several events have happened to it: an event moves the status
 * only to one of equal or higher rank, so a late OPENED never hides a BOUNCED, and a DSN that says
 * "delayed" after the receiver accepted the message leaves it DELIVERED. DELIVERY_DELAYED ranks
 * above SENT because a message handed over and then held up is not yet delivered; an accepted
 * retry moves on, as acceptance always comes with DELIVERED. The outcomes that end sending
 * (cancelled, failed, rejected, suppressed) rank above all feedback, which never follows them.
 */
export const STATUS_RANK: Record<EmailStatus, number> = {
  SCHEDULED: 0,
  QUEUED: 1,
  SENT: 2,
  DELIVERY_DELAYED: 3,
  DELIVERED: 4,
  OPENED: 5,
  CLICKED: 6,
  BOUNCED: 7,
  COMPLAINED: 8,
  CANCELLED: 9,
  FAILED: 9,
  REJECTED: 9,
  SUPPRESSED: 9,
};

/** The status a run of new events moves an email to (where it does not rank below its own): the highest-ranked, the last of equals. */
export function statusAfter(events: { status: EmailStatus }[]): EmailStatus | null {
  let status: EmailStatus | null = null;
  for (const event of events) if (status === null || STATUS_RANK[event.status] >= STATUS_RANK[status]) status = event.status;
  return status;
}

/** The counters an event bumps, once per email and kind. */
export function countKinds(event: { status: EmailStatus; data: Record<string, unknown> | null }): CountKind[] {
  switch (event.status) {
    case 'SENT': return ['sent'];
    case 'DELIVERED': return ['delivered'];
    case 'OPENED': return ['opened'];
    case 'CLICKED': return ['clicked'];
    case 'COMPLAINED': return ['complained'];
    case 'BOUNCED': return event.data?.bounceType === 'Permanent' ? ['bounced', 'hard_bounced'] : ['bounced'];
    default: return [];
  }
}

/** The status an email is created with: SCHEDULED for a later time, else QUEUED. */
export const firstStatus = (email: { scheduledAt: Date | null }): EmailStatus => (email.scheduledAt ? 'SCHEDULED' : 'QUEUED');

// Payloads. Times are ISO 8601 UTC with milliseconds, as everywhere in the API.
const iso = z.string().describe('ISO 8601, UTC, with milliseconds');

const emailFields = {
  id: z.string(),
  status: z.enum(EMAIL_STATUSES).describe('The status this event gave the email'),
  from: z.string(),
  to: z.array(z.string()),
  subject: z.string(),
  occurredAt: iso,
  campaignId: z.string().optional(),
  contactId: z.string().optional(),
  domainId: z.number().int().optional(),
  templateId: z.string().optional(),
};
const email = z.object(emailFields);

const bounce = z.object({
  type: z.enum(['Permanent', 'Transient', 'Undetermined']),
  subType: z.string(),
  message: z.string().nullable().describe('The receiving server\'s reply or diagnostic'),
  status: z.string().nullable().describe('The enhanced status code or the reply code'),
  remoteMta: z.string().nullable(),
  recipients: z.array(z.string()),
});
const complaint = z.object({
  feedbackType: z.string().nullable(),
  recipients: z.array(z.string()),
  userAgent: z.string().nullable(),
  arrivalDate: z.string().nullable(),
});
const reader = { timestamp: iso, userAgent: z.string().nullable(), ip: z.string().nullable() };

const contact = z.object({
  id: z.string(),
  contactBookId: z.string(),
  email: z.string(),
  firstName: z.string().nullable(),
  lastName: z.string().nullable(),
  properties: z.record(z.string(), z.string()),
  subscribed: z.boolean(),
  unsubscribeReason: z.enum(['UNSUBSCRIBED', 'BOUNCED', 'COMPLAINED']).nullable(),
  createdAt: iso,
  updatedAt: iso,
});

const DOMAIN_STATUSES = ['NOT_STARTED', 'PENDING', 'SUCCESS', 'FAILED', 'TEMPORARY_FAILURE'] as const;
const domain = z.object({
  id: z.number().int(),
  name: z.string(),
  status: z.enum(DOMAIN_STATUSES),
  region: z.string(),
  dkimStatus: z.enum(DOMAIN_STATUSES),
  spfStatus: z.enum(DOMAIN_STATUSES),
  mxStatus: z.enum(DOMAIN_STATUSES),
  dmarcStatus: z.enum(DOMAIN_STATUSES),
  clickTracking: z.boolean(),
  openTracking: z.boolean(),
  verificationError: z.string().nullable(),
  createdAt: iso,
  updatedAt: iso,
});

const CAMPAIGN_STATUSES = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'SENT'] as const;
const campaign = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(CAMPAIGN_STATUSES),
  previousStatus: z.enum(CAMPAIGN_STATUSES).nullable().describe('Null when the campaign was just created'),
  domainId: z.number().int().nullable(),
  contactBookId: z.string().nullable(),
  segmentId: z.string().nullable().describe('The segment of the book it goes to; null: the whole book'),
  scheduledAt: iso.nullable(),
  pausedReason: z.string().nullable(),
  total: z.number().int(),
  sent: z.number().int(),
  delivered: z.number().int(),
  updatedAt: iso,
});

export const RUN_STATUSES = ['ACTIVE', 'COMPLETED', 'EXITED'] as const;
const automationRun = z.object({
  id: z.string().describe('The run'),
  automationId: z.string(),
  contactBookId: z.string(),
  contactId: z.string(),
  email: z.string().describe("The contact's address"),
  status: z.enum(RUN_STATUSES),
  stepId: z.string().nullable().describe('The step it is at (ACTIVE) or ended at (EXITED); null once COMPLETED'),
  exitReason: z.string().nullable().describe('Why it left before the end: an exit step, unsubscribed, bounced, complained'),
  startedAt: iso,
  endedAt: iso.nullable(),
});

const authenticationResult = z
  .object({ result: z.string().describe('pass, fail, softfail, neutral, none, temperror, permerror…') })
  .catchall(z.unknown())
  .describe('One check\'s result and what it was about (the domain, the selector, the policy)');

/** Mail a team received (GET /v1/inbound/emails/{id}, and the payload of email.received). */
export const inboundEmailSchema = z.object({
  id: z.string(),
  routeId: z.string().nullable().describe('The route that took it; null once that route is deleted'),
  from: z.string().nullable().describe('The From address'),
  to: z.array(z.string()),
  cc: z.array(z.string()),
  subject: z.string(),
  text: z.string().nullable(),
  html: z.string().nullable(),
  headers: z.array(z.object({ key: z.string(), value: z.string() })).describe('Every header field, in order, names lower-cased'),
  messageId: z.string().nullable(),
  inReplyTo: z.string().nullable(),
  inReplyToEmailId: z.string().nullable().describe('The email of the team this message answers (its In-Reply-To names it)'),
  attachments: z.array(z.object({ id: z.string(), filename: z.string().nullable(), contentType: z.string(), size: z.number().int() })),
  authentication: z.object({ spf: authenticationResult, dkim: authenticationResult, dmarc: authenticationResult }),
  envelope: z.object({ from: z.string(), to: z.array(z.string()), clientAddress: z.string().nullable(), helo: z.string().nullable() }),
  size: z.number().int().describe('The message\'s size in bytes'),
  receivedAt: iso,
  bodyDroppedAt: iso.nullable().describe('When retention dropped its text, html, attachments and raw form; null while kept'),
});

/**
 * Every event type, in the order the API lists them (upstream's names, and
 * `campaign.status_changed` and the automation events, ours), with the schema of its payload's `data`.
 */
export const EVENT_PAYLOADS = {
  'email.queued': email,
  'email.scheduled': email,
  'email.sent': email,
  'email.delivery_delayed': email.extend({ delay: z.object({ message: z.string().nullable(), nextAttemptAt: iso.nullable() }) }),
  'email.delivered': email,
  'email.bounced': email.extend({ bounce }),
  'email.rejected': email,
  'email.complained': email.extend({ complaint }),
  'email.failed': email.extend({ failed: z.object({ reason: z.string().nullable() }) }),
  'email.cancelled': email,
  'email.suppressed': email,
  'email.opened': email.extend({ open: z.object(reader) }),
  'email.clicked': email.extend({ click: z.object({ ...reader, url: z.string() }) }),
  'email.received': inboundEmailSchema.extend({
    truncated: z.boolean().describe('Whether text or html was cut at 256 KiB (GET /v1/inbound/emails/{id} has them whole)'),
  }),
  'contact.created': contact,
  'contact.updated': contact,
  'contact.deleted': contact,
  'domain.created': domain,
  'domain.verified': domain,
  'domain.updated': domain,
  'domain.deleted': domain,
  'campaign.status_changed': campaign,
  'automation.run_started': automationRun,
  'automation.run_completed': automationRun.describe('A run that reached the end (COMPLETED) or left before it (EXITED)'),
  'webhook.test': z.object({ webhookId: z.string(), message: z.string() }),
} as const;

export type EventType = keyof typeof EVENT_PAYLOADS;
export const EVENT_TYPES = Object.keys(EVENT_PAYLOADS) as EventType[];
export type EventPayload<T extends EventType> = z.infer<(typeof EVENT_PAYLOADS)[T]>;

/** One event as a webhook reports it: its type and the payload of exactly that type. */
export type Event = { [T in EventType]: { type: T; data: EventPayload<T> } }[EventType];

export type EmailEventType = Extract<EventType, `email.${string}`>;
/** `email.<status>`: the event a status change of an email is. */
export const emailEventType = (status: EmailStatus) => `email.${status.toLowerCase()}` as EmailEventType;

/** The version of a call body's shape; a change a receiver must know of would bump it. */
export const PAYLOAD_VERSION = '2025-01-01';

/** The body of a webhook call of one event type (upstream's shape), as the OpenAPI document shows it. */
export const callBodySchema = (type: EventType) =>
  z.object({
    id: z.string().describe('The call id: the same on every attempt, so a receiver can drop a repeat'),
    type: z.literal(type),
    version: z.literal(PAYLOAD_VERSION),
    createdAt: iso.describe('When the event happened'),
    teamId: z.number().int(),
    data: EVENT_PAYLOADS[type],
    attempt: z.number().int().min(1).describe('1 on the first attempt'),
  });
