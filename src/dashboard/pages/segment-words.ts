import { html } from 'hono/html';
import { ENGAGEMENTS, FIELDS, MAX_DEPTH, OPS, opsOf, type Engagement, type Op } from '../../audience/segment-filter.js';
import type { Html } from '../layout.js';

// A segment's filter in words: on its page, and as the choices of the builder (segments.js).

type Kind = 'text' | 'boolean' | 'date' | 'property';

const FIELD_WORDS: Record<(typeof FIELDS)[number], { label: string; kind: Kind }> = {
  email: { label: 'Email', kind: 'text' },
  firstName: { label: 'First name', kind: 'text' },
  lastName: { label: 'Last name', kind: 'text' },
  subscribed: { label: 'Subscribed', kind: 'boolean' },
  createdAt: { label: 'Added', kind: 'date' },
  updatedAt: { label: 'Last changed', kind: 'date' },
};

const OP_WORDS: Record<Op, string> = {
  eq: 'is',
  neq: 'is not',
  in: 'is one of',
  contains: 'contains',
  startsWith: 'starts with',
  endsWith: 'ends with',
  exists: 'is set',
  notExists: 'is not set',
  gt: 'is more than',
  gte: 'is at least',
  lt: 'is less than',
  lte: 'is at most',
};
// A date field is only ever compared in order, and reads better in time's words.
const DATE_OP_WORDS: Partial<Record<Op, string>> = { gt: 'is after', gte: 'is on or after', lt: 'is before', lte: 'is on or before' };

const EVENT_WORDS: Record<Engagement, string> = {
  opened: 'opened an email',
  clicked: 'clicked a link in an email',
  delivered: 'been delivered an email',
  bounced: 'bounced an email',
};

/** The ops the filter language takes for a field: the builder never offers one it refuses. */
const opChoices = (field: string, kind: Kind) => opsOf(field).map((op) => ({ value: op, label: (kind === 'date' && DATE_OP_WORDS[op]) || OP_WORDS[op] }));

/** What the builder offers, handed to segments.js as data: the same words this page describes a filter with. */
export const builderVocabulary = {
  fields: [
    ...FIELDS.map((field) => ({ value: field, ...FIELD_WORDS[field], ops: opChoices(field, FIELD_WORDS[field].kind) })),
    { value: 'properties.', label: 'Property…', kind: 'property' as const, ops: opChoices('properties.name', 'property') },
  ],
  events: ENGAGEMENTS.map((event) => ({ value: event, label: EVENT_WORDS[event] })),
  maxDepth: MAX_DEPTH,
};

/** How a filter is written, for the JSON field's hint. */
export const FILTER_SYNTAX =
  `{ "all": [...] } or { "any": [...] } (nested at most ${MAX_DEPTH} deep) of conditions { "field", "op", "value" } — fields ${FIELDS.join(', ')} or properties.<name>; ` +
  `ops ${OPS.join(', ')} — and of engagement conditions { "event": ${ENGAGEMENTS.map((event) => `"${event}"`).join(' | ')}, "within": "30 days", "campaignId", "negate": true }.`;

type Node = Record<string, unknown>;

const quoted = (value: unknown) => (typeof value === 'string' ? `“${value}”` : String(value));

function fieldWords(field: string) {
  const known = FIELD_WORDS[field as keyof typeof FIELD_WORDS];
  return known ? { label: known.label, kind: known.kind } : { label: `Property “${field.slice('properties.'.length)}”`, kind: 'property' as Kind };
}

function conditionWords(node: Node): string {
  if (typeof node.event === 'string') {
    const within = typeof node.within === 'string' ? ` within the last ${node.within}` : '';
    const campaign = typeof node.campaignId === 'string' ? ` of campaign ${node.campaignId}` : typeof node.step === 'string' ? ` sent by step ${node.step}` : '';
    return `${node.negate === true ? 'Has not' : 'Has'} ${EVENT_WORDS[node.event as Engagement] ?? node.event}${campaign}${within}`;
  }
  const { label, kind } = fieldWords(String(node.field));
  const op = node.op as Op;
  const value = node.value === undefined ? '' : ` ${Array.isArray(node.value) ? node.value.map(quoted).join(', ') : quoted(node.value)}`;
  return `${label} ${(kind === 'date' && DATE_OP_WORDS[op]) || OP_WORDS[op] || op}${value}`;
}

/** A saved filter as nested lists in words: "All of: Email ends with “@example.com”; …". */
export function filterInWords(node: Node): Html {
  const key = Array.isArray(node.all) ? 'all' : Array.isArray(node.any) ? 'any' : null;
  if (!key) return html`${conditionWords(node)}`;
  const children = node[key] as Node[];
  return html`${key === 'all' ? 'All of:' : 'Any of:'}<ul class="filter-words">${children.map((child) => html`<li>${filterInWords(child)}</li>`)}</ul>`;
}
