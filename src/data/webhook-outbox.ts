import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/connection.js';

// The outbox: every change a webhook must hear about writes its calls in the statement (or at
// least the transaction) that makes the change, so a committed change always has its calls and
// a rolled-back one has none. Each writer hands `insertCalls` a source of rows with the columns
//   team_id integer, type text, subject_key text, domain_id integer (null: not an email event),
//   data jsonb, at timestamptz, ord bigint
// and gets back one INSERT … SELECT that fans them out to the team's active webhooks subscribed
// to the type (and, for email events, to the email's domain). A team without webhooks pays one
// probe of the webhooks primary key per statement: the EXISTS below is evaluated once.

/**
 * A time-ordered random id (12 hex digits of milliseconds, then 20 random ones), drawn per row.
 * The random digits come from random(), a generator seeded per connection from a strong source:
 * these ids are keys, not secrets (every link that names one is signed), and this expression
 * costs a third of one built on gen_random_uuid(), on a path that draws one per released recipient.
 */
const randomHex40 = sql`lpad(to_hex(floor(random() * 1099511627776)::bigint), 10, '0')`;
export const sortableIdSql = sql<string>`lpad(to_hex(floor(date_part('epoch', clock_timestamp()) * 1000)::bigint), 12, '0')
  || ${randomHex40} || ${randomHex40}`;

/** An ISO 8601 UTC timestamp with milliseconds, as the API writes them. */
export const isoSql = (value: RawBuilder<unknown>) => sql<string>`to_char(${value} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The calls for the source's rows, one per row and subscribed webhook, in `ord` order: each joins
 * the back of its webhook's queue (`seq`), the order one subject's calls go out in. `teamIds`
 * names the teams the source can hold, so a team without active webhooks skips the source.
 */
function insertCalls(source: RawBuilder<unknown>, teamIds: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`
    INSERT INTO webhook_calls (team_id, webhook_id, id, type, subject_key, data, next_attempt_at, created_at, updated_at)
    SELECT s.team_id, w.id, ${sortableIdSql}, s.type, s.subject_key, s.data, s.at, s.at, s.at
    FROM (${source}) s
    JOIN webhooks w ON w.team_id = s.team_id AND w.status = 'ACTIVE'
      AND (cardinality(w.events) = 0 OR s.type = ANY(w.events))
      AND (s.domain_id IS NULL OR cardinality(w.domain_ids) = 0 OR s.domain_id = ANY(w.domain_ids))
    WHERE EXISTS (SELECT 1 FROM webhooks a WHERE a.team_id = ANY(${teamIds}) AND a.status = 'ACTIVE')
    ORDER BY s.ord, w.id`;
}

/**
 * An email event's payload `data` from a relation `e` with the emails columns, the event's status
 * and details: upstream's fields, and the details of bounces, complaints, opens, clicks and
 * failures under their own names.
 */
function emailEventData(e: string, status: RawBuilder<unknown>, details: RawBuilder<unknown>, at: RawBuilder<unknown>): RawBuilder<unknown> {
  const col = (name: string) => sql.ref(`${e}.${name}`);
  const d = sql`(${details})`;
  return sql`jsonb_strip_nulls(jsonb_build_object(
      'id', ${col('id')}, 'status', ${status}, 'from', ${col('from_address')}, 'to', ${col('to_addresses')},
      'subject', ${col('subject')}, 'occurredAt', ${isoSql(at)}, 'campaignId', ${col('campaign_id')},
      'contactId', ${col('contact_id')}, 'domainId', ${col('domain_id')}, 'templateId', ${col('template_id')}
    )) || CASE ${status}
      WHEN 'BOUNCED' THEN jsonb_build_object('bounce', jsonb_build_object(
        'type', COALESCE(${d}->>'bounceType', 'Undetermined'),
        'subType', COALESCE(${d}->>'bounceSubType', CASE WHEN ${d}->>'bounceType' = 'Permanent' THEN 'General' ELSE 'Undetermined' END),
        'message', COALESCE(${d}->>'diagnostic', ${d}->>'response'),
        'status', COALESCE(${d}->>'status', ${d}->>'code'),
        'remoteMta', ${d}->>'remoteMta',
        'recipients', COALESCE(${d}->'recipients', jsonb_build_array(${d}->>'recipient'))))
      WHEN 'COMPLAINED' THEN jsonb_build_object('complaint', jsonb_build_object(
        'feedbackType', ${d}->>'feedbackType', 'recipients', ${d}->'recipients', 'userAgent', ${d}->>'userAgent',
        'arrivalDate', ${d}->>'arrivalDate'))
      WHEN 'OPENED' THEN jsonb_build_object('open', jsonb_build_object(
        'timestamp', ${isoSql(at)}, 'userAgent', ${d}->>'userAgent', 'ip', ${d}->>'ip'))
      WHEN 'CLICKED' THEN jsonb_build_object('click', jsonb_build_object(
        'timestamp', ${isoSql(at)}, 'url', ${d}->>'url', 'userAgent', ${d}->>'userAgent', 'ip', ${d}->>'ip'))
      WHEN 'FAILED' THEN jsonb_build_object('failed', jsonb_build_object('reason', ${d}->>'reason'))
      WHEN 'DELIVERY_DELAYED' THEN jsonb_build_object('delay', jsonb_build_object(
        'message', COALESCE(${d}->>'diagnostic', ${d}->>'response'), 'nextAttemptAt', ${d}->>'nextAttemptAt'))
      ELSE '{}'::jsonb END`;
}

/** `email.<status>`, upstream's event name of an email status. */
const emailEventType = (status: RawBuilder<unknown>) => sql<string>`'email.' || lower(${status})`;

/**
 * The calls for events of emails the statement has just written, read from a relation (a CTE of
 * the caller's statement) of emails columns plus the event's status (`statusColumn`), `details`,
 * `at` and `ord`. These come by the thousand inside the statements that record what sending did,
 * so a call keeps only what the email row does not: its type names the status, `data` holds the
 * event's details, `created_at` is when it happened. The payload is built from those and the
 * email when the call is read (see callDataSql).
 */
export function emailEventCalls(relation: string, statusColumn: string, teamIds: RawBuilder<unknown>): RawBuilder<unknown> {
  const ref = (name: string) => sql.ref(`${relation}.${name}`);
  return insertCalls(
    sql`SELECT ${ref('team_id')} AS team_id, ${emailEventType(ref(statusColumn))} AS type, ${ref('id')} AS subject_key,
        ${ref('domain_id')} AS domain_id, COALESCE(${ref('details')}, '{}'::jsonb) AS data, ${ref('at')} AS at, ${ref('ord')} AS ord
      FROM ${sql.table(relation)}`,
    teamIds,
  );
}

/**
 * A call's payload `data`, read from a relation `c` of webhook_calls: an email event's is built
 * from its email (the emails primary key, one probe) and the details the call kept; any other
 * call's is stored whole.
 */
export function callDataSql(c: string): RawBuilder<Record<string, unknown>> {
  const col = (name: string) => sql.ref(`${c}.${name}`);
  return sql<Record<string, unknown>>`CASE WHEN ${col('type')} LIKE 'email.%' THEN COALESCE((
      SELECT ${emailEventData('e', sql`upper(substr(${col('type')}, 7))`, col('data'), col('created_at'))}
      FROM emails e WHERE e.team_id = ${col('team_id')} AND e.id = ${col('subject_key')}
    ), ${col('data')}) ELSE ${col('data')} END`;
}

/**
 * The calls for a contact event of the contacts of `ids` in one book, built from their rows as
 * they are now, in one statement (the contacts primary key, one probe each, and only for a team
 * with active webhooks).
 */
export async function enqueueContactEvents(tx: Db, teamId: number, bookId: string, ids: string[], type: ContactEventType, now: Date) {
  if (ids.length === 0) return;
  await sql`
    WITH changed AS (
      SELECT c.* FROM unnest(${ids}::text[]) AS n(id)
      CROSS JOIN LATERAL (
        SELECT * FROM contacts c WHERE c.team_id = ${teamId} AND c.contact_book_id = ${bookId} AND c.id = n.id OFFSET 0
      ) c
    )
    ${contactEventCalls('changed', type, sql`ARRAY[${teamId}]::integer[]`, now)}`.execute(tx);
}

export type ContactEventType = 'contact.created' | 'contact.updated' | 'contact.deleted';

/**
 * The calls for contact events of the rows of a relation of contacts columns (a CTE of the
 * caller's statement, holding the rows as the event leaves them).
 */
export function contactEventCalls(relation: string, type: ContactEventType, teamIds: RawBuilder<unknown>, now: Date): RawBuilder<unknown> {
  const col = (name: string) => sql.ref(`${relation}.${name}`);
  const data = sql`jsonb_build_object(
    'id', ${col('id')}, 'contactBookId', ${col('contact_book_id')}, 'email', ${col('email')},
    'firstName', ${col('first_name')}, 'lastName', ${col('last_name')}, 'properties', ${col('properties')},
    'subscribed', ${col('subscribed')}, 'unsubscribeReason', ${col('unsubscribe_reason')},
    'createdAt', ${isoSql(col('created_at'))}, 'updatedAt', ${isoSql(col('updated_at'))})`;
  return insertCalls(
    sql`SELECT ${col('team_id')} AS team_id, ${type}::text AS type, ${col('id')} AS subject_key, NULL::integer AS domain_id,
        ${data} AS data, ${now}::timestamptz AS at, row_number() OVER () AS ord
      FROM ${sql.table(relation)}`,
    teamIds,
  );
}
