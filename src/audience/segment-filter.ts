import { z } from 'zod';

/**
 * The filter language of segments: groups (`all`, `any`) of conditions on a contact's fields and
 * properties, and of engagement conditions on the mail it received. One node schema serves every
 * kind, so a mistake is named at its own path (`filter.all[2].op`) rather than as "matches no
 * alternative"; what each kind needs is checked once the shape is read.
 */

export const FIELDS = ['email', 'firstName', 'lastName', 'subscribed', 'createdAt', 'updatedAt'] as const;
export const OPS = ['eq', 'neq', 'in', 'contains', 'startsWith', 'endsWith', 'exists', 'notExists', 'gt', 'gte', 'lt', 'lte'] as const;
export const ENGAGEMENTS = ['opened', 'clicked', 'delivered', 'bounced'] as const;

export type Field = (typeof FIELDS)[number] | `properties.${string}`;
export type Op = (typeof OPS)[number];
export type Engagement = (typeof ENGAGEMENTS)[number];
export type Scalar = string | number | boolean;

export const MAX_DEPTH = 5;
const MAX_ITEMS = 50;
const MAX_CONDITIONS = 200;
const PROPERTY = /^properties\.(.{1,256})$/s;

const TEXT_OPS: readonly Op[] = ['eq', 'neq', 'in', 'contains', 'startsWith', 'endsWith', 'exists', 'notExists'];
const ORDER_OPS: readonly Op[] = ['gt', 'gte', 'lt', 'lte'];
/** What each field takes: text fields compare as text, dates in order, properties both ways. */
const OPS_OF: Record<string, readonly Op[]> = {
  email: TEXT_OPS,
  firstName: TEXT_OPS,
  lastName: TEXT_OPS,
  subscribed: ['eq', 'neq'],
  createdAt: ORDER_OPS,
  updatedAt: ORDER_OPS,
  properties: [...TEXT_OPS, ...ORDER_OPS],
};

/** The ops a field takes (`properties.<name>` those of every property); none for a field there is not. */
export const opsOf = (field: string): readonly Op[] => OPS_OF[PROPERTY.test(field) ? 'properties' : field] ?? [];

const UNITS: Record<string, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 7 * 86_400_000, month: 30 * 86_400_000, year: 365 * 86_400_000 };
const SPAN = /^\s*(\d{1,6})\s*(minute|hour|day|week|month|year)s?\s*$/i;
const AGO = /^\s*(\d{1,6})\s*(minute|hour|day|week|month|year)s?\s+ago\s*$/i;
const ZONED = /[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

// Spans and moments stay within what both JavaScript and the database can hold as a date.
const MAX_SPAN_MS = 1000 * UNITS.year!;
const inRange = (date: Date) => !Number.isNaN(date.getTime()) && date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999;

/** A span as `within` takes it ("30 days"), in milliseconds; null when it is not one (or longer than 1000 years). */
export function spanMs(text: string): number | null {
  const match = SPAN.exec(text);
  const ms = match ? Number(match[1]) * UNITS[match[2]!.toLowerCase()]! : null;
  return ms !== null && ms <= MAX_SPAN_MS ? ms : null;
}

/** A moment as a date condition takes it: an ISO date, or a relative one ("30 days ago"); null otherwise. */
export function momentOf(text: string, now: Date): Date | null {
  const ago = AGO.exec(text);
  if (ago) {
    const ms = Number(ago[1]) * UNITS[ago[2]!.toLowerCase()]!;
    return ms <= MAX_SPAN_MS ? new Date(now.getTime() - ms) : null;
  }
  if (!ISO_DATE.test(text)) return null;
  // A time without a zone is UTC, as the database reads it (JavaScript would take the machine's zone).
  const date = new Date(ZONED.test(text) || !/[T ]/.test(text) ? text : `${text.replace(' ', 'T')}Z`);
  return inRange(date) ? date : null;
}

const scalar = z.union([z.string().max(1000), z.number(), z.boolean()]);

type RawNode = {
  all?: RawNode[];
  any?: RawNode[];
  field?: string;
  op?: Op;
  value?: Scalar | Scalar[];
  event?: Engagement;
  within?: string;
  campaignId?: string;
  step?: string;
  negate?: boolean;
};

export type Condition = { field: Field; op: Op; value?: Scalar | Scalar[] };
/** `step`: in an automation's condition, the mail one of its send steps sent this run (see automation-steps.ts). */
export type EngagementCondition = { event: Engagement; within?: string; campaignId?: string; step?: string; negate?: boolean };
export type Group = { all: Node[] } | { any: Node[] };
export type Node = Group | Condition | EngagementCondition;

type Issue = { path: (string | number)[]; message: string };

/** What is wrong with one node, at paths relative to it; its children are checked as nodes of their own. */
function problemsOf(node: RawNode): Issue[] {
  const kinds = [node.all !== undefined || node.any !== undefined, node.field !== undefined || node.op !== undefined, node.event !== undefined].filter(Boolean);
  if (kinds.length !== 1) {
    return [{ path: [], message: 'must be a group ({ "all": [...] } or { "any": [...] }), a condition ({ "field", "op", "value" }) or an engagement condition ({ "event" })' }];
  }
  if (node.all !== undefined || node.any !== undefined) {
    if (node.all !== undefined && node.any !== undefined) return [{ path: ['any'], message: 'cannot be given together with all: nest one group in the other' }];
    return [];
  }
  if (node.event !== undefined) {
    if (node.step !== undefined && node.campaignId !== undefined) return [{ path: ['step'], message: 'cannot be given together with campaignId: a step\'s mail is no campaign\'s' }];
    return node.within !== undefined && spanMs(node.within) === null
      ? [{ path: ['within'], message: `must be a span like "30 days" (minutes, hours, days, weeks, months or years, at most 1000 years), not "${node.within}"` }]
      : [];
  }
  if (node.field === undefined) return [{ path: ['field'], message: 'is required' }];
  if (node.op === undefined) return [{ path: ['op'], message: 'is required' }];
  const kind = PROPERTY.test(node.field) ? 'properties' : node.field;
  const ops = opsOf(node.field);
  if (ops.length === 0) return [{ path: ['field'], message: `must be one of: ${FIELDS.join(', ')}, or properties.<name>` }];
  if (!ops.includes(node.op)) return [{ path: ['op'], message: `must be one of: ${ops.join(', ')} for ${kind === 'properties' ? 'a property' : node.field}` }];
  return valueProblems(kind, node.op, node.value).map((message) => ({ path: ['value'], message }));
}

/** What is wrong with a condition's value for its field and op. */
function valueProblems(kind: string, op: Op, value: RawNode['value']): string[] {
  if (op === 'exists' || op === 'notExists') return value === undefined ? [] : [`must be left out for ${op}`];
  if (value === undefined) return ['is required'];
  if (kind === 'subscribed') return typeof value === 'boolean' ? [] : ['must be true or false'];
  if (op === 'in') {
    if (!Array.isArray(value) || value.length === 0) return ['must be a list of 1 to 100 values for in'];
    return value.some((item) => typeof item === 'boolean') ? ['must list strings or numbers'] : [];
  }
  if (Array.isArray(value)) return [`must be a single value for ${op} (a list is for in)`];
  if (typeof value === 'boolean') return ['must be a string or a number'];
  if (ORDER_OPS.includes(op)) {
    const taken = `must be ${kind === 'properties' ? 'a number or a date' : 'a date'} (ISO 8601, or relative like "30 days ago", within 1000 years)`;
    if (typeof value === 'number') return kind === 'properties' ? [] : [taken];
    return momentOf(value, new Date()) ? [] : [`${taken}, not "${value}"`];
  }
  if ((op === 'contains' || op === 'startsWith' || op === 'endsWith') && String(value) === '') return ['must not be empty'];
  return [];
}

const nodeSchema: z.ZodType<RawNode> = z
  .object({
    get all() {
      return z.array(nodeSchema).min(1).max(MAX_ITEMS).optional();
    },
    get any() {
      return z.array(nodeSchema).min(1).max(MAX_ITEMS).optional();
    },
    field: z.string().min(1).max(300).optional().describe(`${FIELDS.join(', ')}, or properties.<name>`),
    op: z.enum(OPS).optional(),
    value: z.union([scalar, z.array(scalar).max(100)]).optional().describe('A string, number or boolean; a list for in; left out for exists and notExists'),
    event: z.enum(ENGAGEMENTS).optional().describe('An engagement condition: the contact got mail with this event'),
    within: z.string().max(40).optional().describe('Only events this recent: "30 days", "12 hours"'),
    campaignId: z.string().min(1).max(64).optional().describe("Only the mail of this campaign of the contact's book"),
    step: z.string().min(1).max(64).optional().describe("In an automation's condition only: the mail an earlier send step of this automation sent the contact in this run"),
    negate: z.boolean().optional().describe('Match contacts without such an event'),
  })
  .superRefine((node, ctx) => {
    for (const issue of problemsOf(node)) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
  })
  .meta({ id: 'SegmentFilterNode' }) as z.ZodType<RawNode>;

/** Paths and nodes of a filter, depth first (the root at depth 1). */
function* walk(node: RawNode, path: (string | number)[] = [], depth = 1): Generator<{ node: RawNode; path: (string | number)[]; depth: number }> {
  yield { node, path, depth };
  for (const key of ['all', 'any'] as const) {
    for (const [index, child] of (node[key] ?? []).entries()) yield* walk(child, [...path, key, index], depth + 1);
  }
}

/** A segment's filter: a group at the top, nested at most MAX_DEPTH deep, of at most MAX_CONDITIONS conditions. */
export const filterSchema = nodeSchema
  .superRefine((root, ctx) => {
    if (root.all === undefined && root.any === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'must be a group: { "all": [...] } or { "any": [...] }' });
      return;
    }
    let conditions = 0;
    for (const { node, path, depth } of walk(root)) {
      if (depth > MAX_DEPTH && (node.all || node.any)) {
        ctx.addIssue({ code: 'custom', path, message: `nests groups more than ${MAX_DEPTH} deep` });
        return;
      }
      if (!node.all && !node.any && ++conditions > MAX_CONDITIONS) {
        ctx.addIssue({ code: 'custom', path, message: `is one condition too many: a filter holds at most ${MAX_CONDITIONS}` });
        return;
      }
    }
  })
  .describe(
    'A group, `{ "all": [...] }` or `{ "any": [...] }`, of conditions `{ field, op, value }`, engagement conditions ' +
      '`{ event, within?, campaignId?, negate? }` and groups, nested at most 5 deep',
  ) as unknown as z.ZodType<Group>;

export type Filter = Group;

/** The campaigns a filter names, each with where: checked against the team's campaigns of the book. */
export function namedCampaigns(filter: Filter): { campaignId: string; path: (string | number)[] }[] {
  return [...walk(filter as RawNode)].flatMap(({ node, path }) => (node.campaignId ? [{ campaignId: node.campaignId, path: [...path, 'campaignId'] }] : []));
}

/** The automation steps a filter names, each with where: only an automation's condition may name one. */
export function namedSteps(filter: Filter): { step: string; path: (string | number)[] }[] {
  return [...walk(filter as RawNode)].flatMap(({ node, path }) => (node.step ? [{ step: node.step, path: [...path, 'step'] }] : []));
}
