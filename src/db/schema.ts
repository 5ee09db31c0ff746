import type { ColumnType, Generated } from 'kysely';
import type { SystemLink } from '../mail/links.js';
import type { InboundAttachment } from '../smtp/received-message.js';

/** Defaults to now() on insert, so writing it is optional. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** jsonb columns are written as JSON text, so arrays are never mistaken for Postgres arrays. */
type Json<T> = ColumnType<T, string | undefined, string>;

export type Permission = 'full' | 'sending';
/** A person's role in their team, most rights first (src/people/roles.ts says what each may do). */
export type Role = 'owner' | 'admin' | 'member' | 'viewer';
/** Who made a change the audit log records. */
export type ActorType = 'user' | 'apiKey' | 'cli';
export type DomainStatus = 'NOT_STARTED' | 'PENDING' | 'SUCCESS' | 'FAILED' | 'TEMPORARY_FAILURE';
export type UnsubscribeReason = 'UNSUBSCRIBED' | 'BOUNCED' | 'COMPLAINED';

export interface TeamsTable {
  id: Generated<number>;
  name: string;
  rate_limit_per_second: number | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Nullable and optional on insert. */
type Optional<T> = ColumnType<T | null, T | null | undefined, T | null>;

export interface DomainsTable {
  id: Generated<number>;
  team_id: number;
  name: string;
  region: string;
  status: Generated<DomainStatus>;
  created_at: Timestamp;
  updated_at: Timestamp;
  subdomain: string | null;
  dkim_selector: string;
  dkim_private_key: string;
  dkim_public_key: string;
  click_tracking: Generated<boolean>;
  open_tracking: Generated<boolean>;
  dkim_status: Generated<DomainStatus>;
  spf_status: Generated<DomainStatus>;
  mx_status: Generated<DomainStatus>;
  dmarc_status: Generated<DomainStatus>;
  is_verifying: Generated<boolean>;
  last_checked_at: Optional<Date>;
  verification_error: Optional<string>;
  error_message: Optional<string>;
  verification_started_at: Optional<Date>;
  next_check_at: Optional<Date>;
  check_attempts: Generated<number>;
  claim_token: Optional<string>;
  claimed_until: Optional<Date>;
  /** The IP pool (IP_POOLS) its mail leaves from under direct delivery. */
  ip_pool: Generated<string>;
  /** Warm-up: the UTC day it began (day 1); null: no warm-up. */
  warmup_started_on: Optional<string>;
  /** Warm-up caps per day given explicitly; null: the ramp. */
  warmup_daily_limits: Optional<number[]>;
}

export interface DomainWarmupDaysTable {
  team_id: number;
  domain_id: number;
  /** A UTC day, YYYY-MM-DD. */
  day: string;
  sent: Generated<number>;
}

export interface DeliveryStatsTable {
  team_id: number;
  destination: string;
  minute: Date;
  delivered: Generated<number>;
  deferred: Generated<number>;
  bounced: Generated<number>;
}

export interface DestinationStatesTable {
  worker_id: string;
  team_id: number;
  destination: string;
  queued: number;
  in_flight: number;
  connection_limit: number;
  paused_until: Date | null;
  updated_at: Date;
}

export type InboundAction = 'store' | 'webhook' | 'forward';

export interface InboundRoutesTable {
  team_id: number;
  id: string;
  match: string;
  domain: string;
  /** Null: every address of the domain. */
  local_part: string | null;
  action: InboundAction;
  forward_to: Json<string[]>;
  /** Null: every webhook of the team that takes email.received. */
  webhook_ids: ColumnType<string[] | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type AuthenticationResult = { result: string; [detail: string]: unknown };

export interface InboundEmailsTable {
  team_id: number;
  id: string;
  route_id: string | null;
  mail_from: string;
  rcpt_to: Json<string[]>;
  client_address: string | null;
  helo: string | null;
  from_address: string | null;
  to_addresses: Json<string[]>;
  cc_addresses: Json<string[]>;
  subject: string;
  text: string | null;
  html: string | null;
  headers: Json<Array<{ key: string; value: string }>>;
  message_id: string | null;
  in_reply_to: string | null;
  in_reply_to_email_id: string | null;
  attachments: Json<InboundAttachment[]>;
  authentication: Json<{ spf: AuthenticationResult; dkim: AuthenticationResult; dmarc: AuthenticationResult }>;
  size: number;
  received_at: Date;
  body_dropped_at: Optional<Date>;
}

/** A received message's raw bytes, in order by seq. */
export interface InboundEmailPartsTable {
  team_id: number;
  email_id: string;
  seq: number;
  bytes: Buffer;
}

export interface ApiKeysTable {
  id: string;
  team_id: number;
  name: string | null;
  token_hash: string;
  token_hint: string;
  permission: Permission;
  domain_id: number | null;
  created_at: Timestamp;
  revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface ContactBooksTable {
  team_id: number;
  id: string;
  name: string;
  emoji: string;
  properties: Json<Record<string, string>>;
  variables: Json<string[]>;
  double_opt_in_enabled: boolean;
  double_opt_in_from: string | null;
  double_opt_in_subject: string | null;
  double_opt_in_content: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ContactsTable {
  team_id: number;
  contact_book_id: string;
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  properties: Json<Record<string, string>>;
  subscribed: boolean;
  unsubscribe_reason: UnsubscribeReason | null;
  pending_confirmation: Generated<boolean>;
  confirmation_sent_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** When one of its campaign emails was last first opened, and a link in one first clicked (src/data/engagement.ts). */
  last_opened_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  last_clicked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type EmailStatus =
  | 'SCHEDULED' | 'QUEUED' | 'SENT' | 'DELIVERY_DELAYED' | 'DELIVERED' | 'BOUNCED' | 'COMPLAINED'
  | 'OPENED' | 'CLICKED' | 'CANCELLED' | 'FAILED' | 'REJECTED' | 'SUPPRESSED';
export type SuppressionReason = 'HARD_BOUNCE' | 'COMPLAINT' | 'MANUAL';
export type StoredAttachment = { filename: string; contentType: string; content: string; contentId?: string };

export interface EmailsTable {
  team_id: number;
  id: string;
  domain_id: number | null;
  from_address: string;
  to_addresses: Json<string[]>;
  cc_addresses: Json<string[]>;
  bcc_addresses: Json<string[]>;
  reply_to_addresses: Json<string[]>;
  subject: string;
  html: string | null;
  text: string | null;
  headers: Json<Record<string, string>>;
  attachments: Json<StoredAttachment[]>;
  message_id: string;
  status: EmailStatus;
  scheduled_at: Optional<Date>;
  /** The schedule it was accepted with, which its first event shows (see listEvents). */
  first_scheduled_at: Optional<Date>;
  send_at: Optional<Date>;
  attempts: Generated<number>;
  claimed_by: Optional<string>;
  lease_until: Optional<Date>;
  created_at: Timestamp;
  updated_at: Timestamp;
  campaign_id: Optional<string>;
  contact_id: Optional<string>;
  contact_book_id: Optional<string>;
  /** The template the email was rendered from, when it named one. */
  template_id: Optional<string>;
  /** An automation's mail: the run and the step that sent it. */
  automation_run_id: Optional<string>;
  automation_step_id: Optional<string>;
  /** When retention dropped html, text and attachments (RETENTION_DAYS after it was sent). */
  body_dropped_at: Optional<Date>;
  /** The recipients an attempt left unsettled, the only ones the next attempt goes to; null: all. */
  pending_recipients: Optional<string[]>;
  /** The destination its waiting mail is routed to (direct delivery). */
  destination: Optional<string>;
  /** Mail Mailroom sends to a person (an invite, a reset): what its link is made from when it is sent. */
  system_link: ColumnType<SystemLink | null, string | null | undefined, string | null>;
}

export interface TemplatesTable {
  team_id: number;
  id: string;
  name: string;
  subject: string;
  html: string | null;
  text: string | null;
  /** Email editor JSON, when the template was written in the editor (html is rendered from it). */
  content: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type CampaignStatus = 'DRAFT' | 'SCHEDULED' | 'RUNNING' | 'PAUSED' | 'SENT';
export const COUNT_KINDS = ['sent', 'delivered', 'opened', 'clicked', 'unsubscribed', 'bounced', 'hard_bounced', 'complained'] as const;
export type CountKind = (typeof COUNT_KINDS)[number];
/** One counter column per kind, counted once per email (see email_counts). */
type Counters = { [K in CountKind]: Generated<number> };

export interface CampaignsTable extends Counters {
  team_id: number;
  id: string;
  name: string;
  domain_id: number | null;
  from_address: string;
  subject: string;
  preview_text: string | null;
  contact_book_id: string | null;
  html: string;
  content: string | null;
  reply_to_addresses: Json<string[]>;
  cc_addresses: Json<string[]>;
  bcc_addresses: Json<string[]>;
  status: CampaignStatus;
  scheduled_at: Optional<Date>;
  batch_size: number;
  batch_window_minutes: number;
  started_at: Optional<Date>;
  last_created_at: Optional<Date>;
  last_contact_id: Optional<string>;
  cursor_created_at: Optional<Date>;
  cursor_contact_id: Optional<string>;
  next_release_at: Optional<Date>;
  released_all: Generated<boolean>;
  total: Generated<number>;
  paused_reason: Optional<string>;
  segment_id: Optional<string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SegmentsTable {
  team_id: number;
  contact_book_id: string;
  id: string;
  name: string;
  filter: Json<Record<string, unknown>>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface EmailCountsTable {
  team_id: number;
  email_id: string;
  kind: CountKind;
}

export interface DailyEmailCountsTable extends Counters {
  team_id: number;
  domain_id: number;
  day: ColumnType<string, string, string>;
}

export interface EmailEventsTable {
  team_id: number;
  email_id: string;
  seq: Generated<number>;
  status: EmailStatus;
  data: Json<Record<string, unknown> | null>;
  created_at: Timestamp;
  /** Set on events from reports (DSN, ARF, tracking): the same report is applied once. */
  dedupe_key: Optional<string>;
}

export interface SuppressionsTable {
  team_id: number;
  email: string;
  reason: SuppressionReason;
  source_email_id: Optional<string>;
  created_at: Timestamp;
}

export interface IdempotencyKeysTable {
  team_id: number;
  key: string;
  request_hash: string;
  response: Json<unknown>;
  created_at: Timestamp;
}

export type WebhookStatus = 'ACTIVE' | 'PAUSED' | 'AUTO_DISABLED';
export type WebhookCallStatus = 'PENDING' | 'DELIVERED' | 'FAILED' | 'DISCARDED';

export interface WebhooksTable {
  team_id: number;
  id: string;
  url: string;
  description: string | null;
  /** Empty: every event type. */
  events: ColumnType<string[], string[] | undefined, string[]>;
  /** Empty: email events of every domain. */
  domain_ids: ColumnType<number[], number[] | undefined, number[]>;
  status: Generated<WebhookStatus>;
  /** Sealed by the key vault. */
  secret: string;
  failed_in_a_row: Generated<number>;
  disabled_reason: Optional<string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WebhookCallsTable {
  team_id: number;
  webhook_id: string;
  id: string;
  seq: Generated<string>;
  type: string;
  subject_key: string | null;
  data: Json<Record<string, unknown>>;
  status: Generated<WebhookCallStatus>;
  attempt: Generated<number>;
  next_attempt_at: Date;
  response_status: Optional<number>;
  response_time_ms: Optional<number>;
  last_error: Optional<string>;
  claimed_by: Optional<string>;
  lease_until: Optional<Date>;
  created_at: Date;
  updated_at: Date;
}

export interface UsersTable {
  id: string;
  team_id: number;
  email: string;
  role: Role;
  password_hash: string | null;
  invite_token_hash: string | null;
  invite_expires_at: Date | null;
  /** Sealed with the key vault; a secret being set up while totp_enabled_at is null. */
  totp_secret: Optional<string>;
  totp_enabled_at: Optional<Date>;
  /** The time step of the last code accepted: none at or before it is accepted again. */
  totp_last_step: Optional<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface RecoveryCodesTable {
  user_id: string;
  code_hash: string;
  used_at: Optional<Date>;
}

export interface PasswordResetsTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: Timestamp;
  expires_at: Date;
  used_at: Optional<Date>;
}

export interface AuditLogTable {
  team_id: number;
  id: string;
  at: Date;
  actor_type: ActorType;
  actor_id: string;
  actor_label: string;
  action: string;
  target_type: string;
  target_id: string | null;
  ip: string | null;
}

export interface SessionsTable {
  token_hash: string;
  user_id: string;
  created_at: Timestamp;
  expires_at: Date;
}

export interface AutomationsTable {
  team_id: number;
  id: string;
  contact_book_id: string;
  name: string;
  status: 'DRAFT' | 'ACTIVE' | 'PAUSED';
  trigger_type: 'contact.added' | 'event';
  trigger_event: string | null;
  allow_reentry: boolean;
  steps: Json<unknown[]>;
  template_ids: ColumnType<string[], string[] | undefined, string[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AutomationRunsTable {
  team_id: number;
  id: string;
  automation_id: string;
  contact_book_id: string;
  contact_id: string;
  entry_key: string;
  status: 'ACTIVE' | 'COMPLETED' | 'EXITED';
  step_id: string | null;
  next_at: Date | null;
  waiting: Generated<boolean>;
  properties: Json<Record<string, string>>;
  history: Json<RunHistoryEntry[]>;
  exit_reason: string | null;
  started_at: Timestamp;
  ended_at: Date | null;
}

/** One thing a run did: came to a step (and, for some, what came of it). */
export type RunHistoryEntry = { stepId: string; type: string; at: string; outcome?: string; emailId?: string };

export interface AutomationStepCountsTable {
  team_id: number;
  automation_id: string;
  step_id: string;
  completed: ColumnType<string, number | undefined, never>;
  exited: ColumnType<string, number | undefined, never>;
}

export interface Database {
  teams: TeamsTable;
  domains: DomainsTable;
  api_keys: ApiKeysTable;
  contact_books: ContactBooksTable;
  contacts: ContactsTable;
  emails: EmailsTable;
  email_events: EmailEventsTable;
  suppressions: SuppressionsTable;
  idempotency_keys: IdempotencyKeysTable;
  campaigns: CampaignsTable;
  segments: SegmentsTable;
  email_counts: EmailCountsTable;
  daily_email_counts: DailyEmailCountsTable;
  templates: TemplatesTable;
  webhooks: WebhooksTable;
  webhook_calls: WebhookCallsTable;
  users: UsersTable;
  sessions: SessionsTable;
  recovery_codes: RecoveryCodesTable;
  password_resets: PasswordResetsTable;
  audit_log: AuditLogTable;
  domain_warmup_days: DomainWarmupDaysTable;
  delivery_stats: DeliveryStatsTable;
  destination_states: DestinationStatesTable;
  inbound_routes: InboundRoutesTable;
  inbound_emails: InboundEmailsTable;
  inbound_email_parts: InboundEmailPartsTable;
  automations: AutomationsTable;
  automation_runs: AutomationRunsTable;
  automation_step_counts: AutomationStepCountsTable;
}
