import { z } from 'zod';
import { AUDIT_ACTIONS } from '../events/audit.js';
import { defineRoute } from '../http/route.js';
import * as service from '../services/audit-log.js';

const TAG = 'Audit log';

const ACTOR_TYPES = ['user', 'apiKey', 'cli'] as const;

const actionName = z.enum(AUDIT_ACTIONS, {
  error: (issue) => (typeof issue.input === 'string' ? `unknown action ${JSON.stringify(issue.input.slice(0, 64))}` : undefined),
});
const MAX_ACTIONS = 20;

const EARLIEST = new Date('1970-01-01T00:00:00Z');
const LATEST = new Date('9999-12-31T23:59:59.999Z');

const instant = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 date-time with a time zone, such as 2026-11-22T09:00:00Z' })
  .transform((value) => new Date(value))
  // Nothing was recorded before the epoch, and the database keeps no time past year 9999.
  .refine((date) => date >= EARLIEST && date <= LATEST, 'must be between 1970-01-01 and 9999-12-31');

export const auditLogQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  actor: z.string().trim().min(1).max(128).optional().describe("Only this actor's changes: a user id, an API key id, or the CLI's id"),
  actorType: z.enum(ACTOR_TYPES).optional().describe('Only changes made by people (user), API keys (apiKey) or the CLI (cli)'),
  action: z
    .string()
    // Longer than a list of MAX_ACTIONS actions could be: refused before it is split.
    .max(MAX_ACTIONS * 65)
    .transform((text) => [...new Set(text.split(',').map((name) => name.trim()).filter((name) => name !== ''))])
    .pipe(z.array(actionName).min(1, 'must name an action').max(MAX_ACTIONS))
    .optional()
    .describe(`One action, or up to ${MAX_ACTIONS} comma-separated, of: ${AUDIT_ACTIONS.join(', ')}`),
  from: instant.optional().describe('Only changes at or after this time'),
  to: instant.optional().describe('Only changes before this time; not before `from`'),
});

const entrySchema = z.object({
  id: z.string(),
  at: z.string().describe('When the change was made'),
  actor: z.object({
    type: z.enum(ACTOR_TYPES),
    id: z.string().describe('The user id, the API key id, or the CLI'),
    label: z.string().describe("The person's address, the key's name (or its hint), as it was at the time"),
  }),
  action: z.string().describe('`<targetType>.<what happened>`: domain.created, apiKey.revoked, campaign.paused…'),
  targetType: z.string(),
  targetId: z.string().nullable(),
  ip: z.string().nullable().describe("The client's address; null for the CLI"),
});

/** One entry of the log, as the API answers it and the dashboard shows it. */
export type AuditEntry = z.output<typeof entrySchema>;

export const auditLogRoutes = [
  defineRoute({
    method: 'get',
    path: '/audit-log',
    tag: TAG,
    summary: "The team's audit log, newest first",
    description:
      'Every change made through the API, the dashboard or the CLI, recorded in the transaction that made it; never a secret. ' +
      'Filters combine: `actor`, `actorType`, `action`, and the window `from` (inclusive) to `to` (exclusive). ' +
      'Entries are kept AUDIT_RETENTION_DAYS (365 by default). Needs a full-permission key for the whole team: ' +
      'a sending-only key or a key scoped to a domain gets 403.',
    query: auditLogQuery,
    response: z.object({ data: z.array(entrySchema), count: z.number().int().describe('Entries matching the filters, on every page') }),
    handler: ({ deps, auth, query: { action, ...query } }) => service.listAuditLog(deps, auth, { ...query, actions: action }),
  }),
];
