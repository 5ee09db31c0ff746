import type { ColumnType, Generated } from 'kysely';

/** Defaults to now() on insert, so writing it is optional. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** jsonb columns are written as JSON text, so arrays are never mistaken for Postgres arrays. */
type Json<T> = ColumnType<T, string | undefined, string>;

export type Permission = 'full' | 'sending';
export type DomainStatus = 'NOT_STARTED' | 'PENDING' | 'SUCCESS' | 'FAILED' | 'TEMPORARY_FAILURE';
export type UnsubscribeReason = 'UNSUBSCRIBED' | 'BOUNCED' | 'COMPLAINED';

export interface TeamsTable {
  id: Generated<number>;
  name: string;
  rate_limit_per_second: number | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface DomainsTable {
  id: Generated<number>;
  team_id: number;
  name: string;
  region: string;
  status: Generated<DomainStatus>;
  created_at: Timestamp;
  updated_at: Timestamp;
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
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  teams: TeamsTable;
  domains: DomainsTable;
  api_keys: ApiKeysTable;
  contact_books: ContactBooksTable;
  contacts: ContactsTable;
}
