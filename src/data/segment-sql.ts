import { sql, type RawBuilder } from 'kysely';
import { ENGAGED_AT, engages } from './engagement.js';
import { momentOf, spanMs, type Condition, type EngagementCondition, type Filter, type Node, type Scalar } from '../audience/segment-filter.js';

/**
 * A segment's filter as one SQL condition on the contacts row `c`, every value a bound parameter:
 * nothing a team writes (a property's name, a value with quotes, `%` or a JSON path) is ever
 * read as SQL or as a pattern. `now` fixes relative dates ("30 days ago") and `within` windows.
 *
 * Text compares case-insensitively. A property holds text: compared to a number, or in order
 * with gt/gte/lt/lte, it counts only when its text is a number (or, against a date, a date);
 * any other value does not match, so no contact's data can make the query fail. A contact
 * without the property matches neq and notExists, and nothing else.
 */
export function filterSql(filter: Filter, now: Date, run?: RawBuilder<unknown>): RawBuilder<boolean> {
  return nodeSql(filter, { now, run });
}

/** What a filter is read against: the moment, and in an automation's condition the run's id (`step` conditions). */
type FilterContext = { now: Date; run?: RawBuilder<unknown> };

const EVENT_STATUS = { opened: 'OPENED', clicked: 'CLICKED', delivered: 'DELIVERED', bounced: 'BOUNCED' } as const;

// A number as PostgreSQL's numeric reads it, the exponent kept small enough never to overflow it.
const NUMBER_TEXT = '^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]{1,3})?\\s*$';

const COLUMNS: Record<string, RawBuilder<unknown>> = {
  email: sql`c.email`,
  firstName: sql`c.first_name`,
  lastName: sql`c.last_name`,
  subscribed: sql`c.subscribed`,
  createdAt: sql`c.created_at`,
  updatedAt: sql`c.updated_at`,
};

function nodeSql(node: Node, context: FilterContext): RawBuilder<boolean> {
  // An empty group (never valid input, but what a stored filter might become) is true for all, false for any.
  if ('all' in node) return node.all.length === 0 ? sql<boolean>`TRUE` : sql<boolean>`(${sql.join(node.all.map((child) => nodeSql(child, context)), sql` AND `)})`;
  if ('any' in node) return node.any.length === 0 ? sql<boolean>`FALSE` : sql<boolean>`(${sql.join(node.any.map((child) => nodeSql(child, context)), sql` OR `)})`;
  if ('event' in node) return engagementSql(node, context);
  return conditionSql(node, context.now);
}

/**
 * The contact got campaign mail of this book with such an event, in the window. Opens and clicks
 * not tied to a campaign are read from the contact's row (src/data/engagement.ts), which keeps
 * their last time; the rest look the mail up through emails_contact and the event's (email, seq) key.
 * A `step` condition looks up the one email that step sent in the run (emails_automation_step);
 * read without a run, it matches no one.
 */
function engagementSql(node: EngagementCondition, { now, run }: FilterContext): RawBuilder<boolean> {
  const span = node.within === undefined ? null : spanMs(node.within);
  const since = span === null ? null : new Date(now.getTime() - span);
  const status = EVENT_STATUS[node.event];
  const column = rowColumn(node);
  const found = node.step !== undefined ? stepMailSql(node.step, status, since, run) : column ? lastEngaged(sql.ref(`c.${column}`), since) : sql<boolean>`EXISTS (
    SELECT 1 FROM emails e JOIN email_events ev ON ev.team_id = e.team_id AND ev.email_id = e.id
    WHERE e.team_id = c.team_id AND e.contact_id = c.id AND e.campaign_id IS NOT NULL AND ev.status = ${status}
      ${since ? sql`AND ev.created_at >= ${since}` : sql``}
      ${node.campaignId ? sql`AND e.campaign_id = ${node.campaignId}` : sql``})`;
  return node.negate ? sql<boolean>`NOT ${found}` : found;
}

function stepMailSql(step: string, status: string, since: Date | null, run: RawBuilder<unknown> | undefined): RawBuilder<boolean> {
  if (!run) return sql<boolean>`FALSE`;
  return sql<boolean>`EXISTS (
    SELECT 1 FROM emails e JOIN email_events ev ON ev.team_id = e.team_id AND ev.email_id = e.id
    WHERE e.team_id = c.team_id AND e.automation_run_id = ${run} AND e.automation_step_id = ${step} AND ev.status = ${status}
      ${since ? sql`AND ev.created_at >= ${since}` : sql``})`;
}

/** The column of the contact's own row an engagement condition reads; null when it looks the mail up. */
function rowColumn(node: EngagementCondition): string | null {
  const status = EVENT_STATUS[node.event];
  return engages(status) && !node.campaignId && !node.step ? ENGAGED_AT[status] : null;
}

/** Whether any condition of the filter looks a contact's mail up (engagement not read from its row). */
export function probesMail(node: Node): boolean {
  if ('all' in node) return node.all.some(probesMail);
  if ('any' in node) return node.any.some(probesMail);
  return 'event' in node && rowColumn(node) === null;
}

/** Whether the row's last time is set (and within the window): never null, so that NOT negates it. */
const lastEngaged = (column: RawBuilder<unknown>, since: Date | null) =>
  since ? sql<boolean>`coalesce(${column} >= ${since}, false)` : sql<boolean>`(${column} IS NOT NULL)`;

function conditionSql(node: Condition, now: Date): RawBuilder<boolean> {
  const property = node.field.startsWith('properties.') ? node.field.slice('properties.'.length) : null;
  const column = property === null ? COLUMNS[node.field]! : sql`(c.properties ->> ${property})`;
  const { op, value } = node;
  if (node.field === 'subscribed') return op === 'eq' ? sql<boolean>`${column} = ${value}` : sql<boolean>`${column} <> ${value}`;
  if (node.field === 'createdAt' || node.field === 'updatedAt') return ordered(column, op, momentOf(String(value), now)!);
  const text = sql`lower(${column})`;
  const lowered = (v: Scalar) => String(v).toLowerCase();
  switch (op) {
    case 'exists':
      return sql<boolean>`coalesce(${column}, '') <> ''`;
    case 'notExists':
      return sql<boolean>`coalesce(${column}, '') = ''`;
    case 'eq':
      return typeof value === 'number' ? sql<boolean>`${numeric(column)} = ${value}` : sql<boolean>`${text} = ${lowered(value as Scalar)}`;
    case 'neq':
      return typeof value === 'number'
        ? sql<boolean>`${numeric(column)} IS DISTINCT FROM ${value}`
        : sql<boolean>`${text} IS DISTINCT FROM ${lowered(value as Scalar)}`;
    case 'in':
      return sql<boolean>`${text} = ANY(${(value as Scalar[]).map(lowered)}::text[])`;
    case 'contains':
      return sql<boolean>`strpos(${text}, ${lowered(value as Scalar)}) > 0`;
    case 'startsWith':
      return sql<boolean>`starts_with(${text}, ${lowered(value as Scalar)})`;
    case 'endsWith': {
      const suffix = lowered(value as Scalar);
      return sql<boolean>`right(${text}, ${[...suffix].length}) = ${suffix}`;
    }
    default:
      return typeof value === 'number' ? ordered(numeric(column), op, value) : ordered(moment(column), op, momentOf(String(value), now)!);
  }
}

function ordered(left: RawBuilder<unknown>, op: string, right: number | Date): RawBuilder<boolean> {
  const operator = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[op]!;
  return sql<boolean>`${left} ${sql.raw(operator)} ${right}`;
}

/** The property's text as a number, or null when it is not one (CASE: the cast never sees other text). */
const numeric = (column: RawBuilder<unknown>) => sql`(CASE WHEN ${column} ~ ${NUMBER_TEXT} THEN (${column})::numeric END)`;

/** The property's text as a moment, or null when it is not a date (see mailroom_moment in the migration). */
const moment = (column: RawBuilder<unknown>) => sql`mailroom_moment(${column})`;
