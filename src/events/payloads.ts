import type { CampaignRow } from '../data/campaigns.js';
import type { RunChange } from '../data/automation-runs.js';
import type { ContactRow } from '../data/contacts.js';
import type { DomainRow } from '../data/domains.js';
import type { EmailRow } from '../data/emails.js';
import type { InboundEmailRow } from '../data/inbound-emails.js';
import type { CampaignStatus, EmailStatus } from '../db/schema.js';
import { emailEventType, type EmailEventType, type Event } from './contract.js';

/**
 * The payloads of the contract (contract.ts), each built from what its event's writer holds at the
 * moment of the event: a payload describes its subject as it was then, whenever the call goes out.
 */

/** What an email event's payload tells of its email. */
export type EmailSnapshot = Pick<EmailRow, 'id' | 'from_address' | 'to_addresses' | 'subject' | 'campaign_id' | 'contact_id' | 'domain_id' | 'template_id'>;

const text = (value: unknown): string | null => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : null);
const texts = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []);
const iso = (at: Date) => at.toISOString();

/** An email event's payload: the email's fields, and the details of a bounce, complaint, open, click, delay or failure under their own names. */
export function emailEvent(email: EmailSnapshot, status: EmailStatus, details: Record<string, unknown> | null, at: Date): Extract<Event, { type: EmailEventType }> {
  const d = details ?? {};
  const data = {
    id: email.id,
    status,
    from: email.from_address,
    to: email.to_addresses,
    subject: email.subject,
    occurredAt: iso(at),
    ...(email.campaign_id !== null ? { campaignId: email.campaign_id } : {}),
    ...(email.contact_id !== null ? { contactId: email.contact_id } : {}),
    ...(email.domain_id !== null ? { domainId: email.domain_id } : {}),
    ...(email.template_id !== null ? { templateId: email.template_id } : {}),
  };
  const type = emailEventType(status);
  const reader = { timestamp: iso(at), userAgent: text(d.userAgent), ip: text(d.ip) };
  switch (status) {
    case 'BOUNCED': {
      const bounceType: 'Permanent' | 'Transient' | 'Undetermined' = d.bounceType === 'Permanent' || d.bounceType === 'Transient' ? d.bounceType : 'Undetermined';
      const recipients = d.recipients !== undefined ? texts(d.recipients) : texts([d.recipient]);
      const subType = text(d.bounceSubType) ?? (bounceType === 'Permanent' ? 'General' : 'Undetermined');
      const bounce = { type: bounceType, subType, message: text(d.diagnostic) ?? text(d.response), status: text(d.status) ?? text(d.code), remoteMta: text(d.remoteMta), recipients };
      return { type: 'email.bounced', data: { ...data, bounce } };
    }
    case 'COMPLAINED':
      return { type: 'email.complained', data: { ...data, complaint: { feedbackType: text(d.feedbackType), recipients: texts(d.recipients), userAgent: text(d.userAgent), arrivalDate: text(d.arrivalDate) } } };
    case 'OPENED':
      return { type: 'email.opened', data: { ...data, open: reader } };
    case 'CLICKED':
      return { type: 'email.clicked', data: { ...data, click: { ...reader, url: text(d.url) ?? '' } } };
    case 'FAILED':
      return { type: 'email.failed', data: { ...data, failed: { reason: text(d.reason) } } };
    case 'DELIVERY_DELAYED':
      return { type: 'email.delivery_delayed', data: { ...data, delay: { message: text(d.diagnostic) ?? text(d.response), nextAttemptAt: text(d.nextAttemptAt) } } };
    default:
      return { type, data } as Extract<Event, { type: EmailEventType }>;
  }
}

export type ContactEventType = 'contact.created' | 'contact.updated' | 'contact.deleted';

/** A contact as the API shows it, and as a contact event's payload tells of it. */
export function contactData(row: ContactRow) {
  return {
    id: row.id,
    firstName: row.first_name,
    lastName: row.last_name,
    email: row.email,
    subscribed: row.subscribed,
    unsubscribeReason: row.unsubscribe_reason,
    properties: row.properties,
    contactBookId: row.contact_book_id,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

/** A contact event's payload: the contact as the change left it (as it was, for a deletion). */
export function contactEvent(type: ContactEventType, row: ContactRow): Extract<Event, { type: ContactEventType }> {
  return { type, data: contactData(row) };
}

export type DomainEventType = 'domain.created' | 'domain.verified' | 'domain.updated' | 'domain.deleted';
export type DomainState = Pick<
  DomainRow,
  'id' | 'team_id' | 'name' | 'status' | 'region' | 'dkim_status' | 'spf_status' | 'mx_status' | 'dmarc_status' | 'click_tracking' | 'open_tracking' | 'verification_error' | 'created_at' | 'updated_at'
>;

export function domainEvent(type: DomainEventType, row: DomainState): Extract<Event, { type: DomainEventType }> {
  return {
    type,
    data: {
      id: row.id,
      name: row.name,
      status: row.status,
      region: row.region,
      dkimStatus: row.dkim_status,
      spfStatus: row.spf_status,
      mxStatus: row.mx_status,
      dmarcStatus: row.dmarc_status,
      clickTracking: row.click_tracking,
      openTracking: row.open_tracking,
      verificationError: row.verification_error,
      createdAt: iso(row.created_at),
      updatedAt: iso(row.updated_at),
    },
  };
}

/**
 * What a domain change is worth telling: created, deleted, verified (it reached SUCCESS), updated
 * (its status, a record's status or tracking changed), or nothing (a check that found what the
 * last one found).
 */
export function domainChange(before: DomainState | null, after: DomainState | null): DomainEventType | null {
  if (before === null) return after === null ? null : 'domain.created';
  if (after === null) return 'domain.deleted';
  if (after.status === 'SUCCESS' && before.status !== 'SUCCESS') return 'domain.verified';
  const watched = ['status', 'dkim_status', 'spf_status', 'mx_status', 'dmarc_status', 'click_tracking', 'open_tracking'] as const;
  return watched.some((field) => before[field] !== after[field]) ? 'domain.updated' : null;
}

export type CampaignState = Pick<
  CampaignRow,
  'id' | 'name' | 'status' | 'domain_id' | 'contact_book_id' | 'segment_id' | 'scheduled_at' | 'paused_reason' | 'total' | 'sent' | 'delivered' | 'updated_at'
>;

/** campaign.status_changed: the campaign as the change left it, with the status it left (null: just created). */
export function campaignStatusChanged(row: CampaignState, previousStatus: CampaignStatus | null): Extract<Event, { type: 'campaign.status_changed' }> {
  return {
    type: 'campaign.status_changed',
    data: {
      id: row.id,
      name: row.name,
      status: row.status,
      previousStatus,
      domainId: row.domain_id,
      contactBookId: row.contact_book_id,
      segmentId: row.segment_id,
      scheduledAt: row.scheduled_at ? iso(row.scheduled_at) : null,
      pausedReason: row.paused_reason,
      total: row.total,
      sent: row.sent,
      delivered: row.delivered,
      updatedAt: iso(row.updated_at),
    },
  };
}

export type RunEventType = 'automation.run_started' | 'automation.run_completed';

/** A run of an automation, as the API shows it and its events tell of it. */
export function runData(row: RunChange) {
  return {
    id: row.id,
    automationId: row.automation_id,
    contactBookId: row.contact_book_id,
    contactId: row.contact_id,
    email: row.email,
    status: row.status,
    stepId: row.step_id,
    exitReason: row.exit_reason,
    startedAt: iso(new Date(row.started_at)),
    endedAt: row.ended_at ? iso(new Date(row.ended_at)) : null,
  };
}

export const runEvent = (type: RunEventType, row: RunChange): Extract<Event, { type: RunEventType }> => ({ type, data: runData(row) });

/** Mail a team received, as the API shows it. */
export function inboundEmailData(row: InboundEmailRow) {
  return {
    id: row.id,
    routeId: row.route_id,
    from: row.from_address,
    to: row.to_addresses,
    cc: row.cc_addresses,
    subject: row.subject,
    text: row.text,
    html: row.html,
    headers: row.headers,
    messageId: row.message_id,
    inReplyTo: row.in_reply_to,
    inReplyToEmailId: row.in_reply_to_email_id,
    attachments: row.attachments,
    authentication: row.authentication,
    envelope: { from: row.mail_from, to: row.rcpt_to, clientAddress: row.client_address, helo: row.helo },
    size: row.size,
    receivedAt: iso(row.received_at),
    bodyDroppedAt: row.body_dropped_at ? iso(row.body_dropped_at) : null,
  };
}

// A webhook call carries at most this much of each body; the API has the rest.
const BODY_IN_CALL_CHARS = 256 * 1024;

/** email.received: the mail as stored, its text and html cut at 256 KiB (`truncated` says so). */
export function emailReceived(row: InboundEmailRow): Extract<Event, { type: 'email.received' }> {
  const cut = (body: string | null) => (body !== null && body.length > BODY_IN_CALL_CHARS ? body.slice(0, BODY_IN_CALL_CHARS) : body);
  const data = inboundEmailData(row);
  return {
    type: 'email.received',
    data: { ...data, text: cut(data.text), html: cut(data.html), truncated: cut(data.text) !== data.text || cut(data.html) !== data.html },
  };
}
