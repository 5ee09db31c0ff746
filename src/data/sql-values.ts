import { sql, type RawBuilder } from 'kysely';

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
 * The instant `column` (milliseconds after the epoch) names: whole microseconds, exact until the
 * year 2255 (a float of seconds would round). Times travel in JSON rows as milliseconds:
 * JSON.stringify of a Date (its toJSON) cost more than the rest of a row together.
 */
export const fromEpochMs = (column: string) => sql.raw(`timestamptz 'epoch' + ${column} * interval '1 millisecond'`);
