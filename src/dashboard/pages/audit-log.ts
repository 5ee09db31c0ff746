import type { Context } from 'hono';
import { html } from 'hono/html';
import type { AuditEntry } from '../../api/audit-log.js';
import { ApiError } from '../../errors.js';
import { AUDIT_ACTIONS } from '../../events/audit.js';
import type { AppDeps } from '../../http/deps.js';
import { callApi } from '../api-call.js';
import { field, fieldErrors, formError, heading, page, pager, select, table, time } from '../layout.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';

type Ctx = Context<DashboardEnv>;

const PAGE_SIZE = 50;
const DAY_MS = 86_400_000;

const FILTER_NAMES = ['actor', 'actorType', 'action', 'from', 'to'] as const;
type Filters = Partial<Record<(typeof FILTER_NAMES)[number], string>>;

const ACTOR_TYPES = [
  { value: '', label: 'Anyone' },
  { value: 'user', label: 'People' },
  { value: 'apiKey', label: 'API keys' },
  { value: 'cli', label: 'The CLI' },
] as const;
const ACTOR_KINDS: Record<AuditEntry['actor']['type'], string> = { user: 'person', apiKey: 'API key', cli: 'CLI' };

const DATE_ONLY = /^\d{4}-\d\d-\d\d$/;

/**
 * A day picked in the form as the API's instant: `from` the start of that day (UTC), `to` the start
 * of the next, so the day itself is in the window. Anything else goes to the API as typed.
 */
function instant(value: string | undefined, edge: 'from' | 'to'): string | undefined {
  if (!value || !DATE_ONLY.test(value)) return value;
  const start = Date.parse(`${value}T00:00:00.000Z`);
  if (Number.isNaN(start)) return value;
  return new Date(edge === 'from' ? start : start + DAY_MS).toISOString();
}

/** Every action to pick from; one the URL names otherwise (several, comma-separated) stays picked. */
function actionChoices(current: string | undefined) {
  const actions: readonly string[] = AUDIT_ACTIONS;
  const named = current && !actions.includes(current) ? [current] : [];
  return [{ value: '', label: 'Any action' }, ...[...named, ...actions].map((action) => ({ value: action, label: action }))];
}

/** A link to this page narrowed to one filter value. */
const only = (name: 'actor' | 'action', value: string) => `/audit-log?${new URLSearchParams({ [name]: value })}`;

const who = (entry: AuditEntry) =>
  html`<a href="${only('actor', entry.actor.id)}" title="Only the changes of ${entry.actor.label}">${entry.actor.label}</a><br><small class="muted">${ACTOR_KINDS[entry.actor.type]} · <code>${entry.actor.id}</code></small>`;

const target = (entry: AuditEntry) => html`${entry.targetType}${entry.targetId === null ? '' : html`<br><code>${entry.targetId}</code>`}`;

/** "60 changes match these filters", "1 change recorded". */
const summary = (count: number, filtered: boolean) =>
  `${count.toLocaleString('en')} ${count === 1 ? 'change' : 'changes'} ${filtered ? (count === 1 ? 'matches these filters' : 'match these filters') : 'recorded'}`;

/** The log, a page at a time, with the filters above it. */
async function listPage(c: Ctx, deps: AppDeps) {
  const query = c.req.query();
  const filters: Filters = Object.fromEntries(FILTER_NAMES.map((name) => [name, query[name]?.trim() || undefined]));
  const pageNumber = query.page?.trim() || undefined;
  let errors: Record<string, string> = {};
  let result: { data: AuditEntry[]; count: number } | null = null;
  try {
    result = await callApi(c, deps, 'get', '/audit-log', {
      query: { ...filters, from: instant(filters.from, 'from'), to: instant(filters.to, 'to'), page: pageNumber, limit: String(PAGE_SIZE) },
    });
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'VALIDATION_ERROR') throw error;
    errors = fieldErrors(error);
  }
  const filtered = FILTER_NAMES.some((name) => filters[name]);
  const form = html`<form method="get" action="/audit-log" class="filters" role="search">
${field('actor', 'Actor', { value: filters.actor, error: errors.actor, placeholder: 'usr_… or key_…', hint: 'A user or API key id, or cli; a name in the list fills it in' })}
${select('actorType', 'Kind', ACTOR_TYPES, { value: filters.actorType, error: errors.actorType })}
${select('action', 'Action', actionChoices(filters.action), { value: filters.action, error: errors.action })}
${field('from', 'From', { type: 'date', value: filters.from, error: errors.from })}
${field('to', 'To', { type: 'date', value: filters.to, error: errors.to })}
<div class="row-actions"><button type="submit">Filter</button>${filtered ? html`<a class="button secondary" href="/audit-log">Clear</a>` : ''}</div>
</form>`;
  const current = Number(pageNumber) || 1;
  const list = result
    ? html`<p class="muted">${summary(result.count, filtered)}, newest first; each is kept ${deps.config.auditRetentionDays} days.</p>
${table(
  result.data,
  [
    { label: 'When', cell: (entry) => time(entry.at) },
    { label: 'Who', cell: who, className: 'wrap' },
    { label: 'Action', cell: (entry) => html`<a href="${only('action', entry.action)}"><code>${entry.action}</code></a>` },
    { label: 'Target', cell: target, className: 'wrap' },
    { label: 'From where', cell: (entry) => entry.ip ?? html`<span class="muted">—</span>` },
  ],
  filtered ? html`No changes match these filters. <a href="/audit-log">Show every change</a>` : current > 1 ? 'No changes on this page.' : 'No changes recorded yet.',
)}
${pager('/audit-log', filters, current, current * PAGE_SIZE < result.count)}`
    : formError(errors.page ? `Page ${errors.page}` : (errors[''] ?? 'Fix the filters above to see the log.'));
  return page(c, {
    title: 'Audit log',
    section: 'Audit log',
    status: result ? 200 : 400,
    body: html`${heading('Audit log')}
<p class="muted">Every change made to this team through the API, the dashboard or the CLI: who made it, when, and from where.</p>
${form}${list}`,
  });
}

/** The team's audit log, for its owners and admins (the API route's role check refuses anyone else). */
export function auditLogPages(deps: AppDeps) {
  const app = section(deps, '/audit-log');
  app.get('/', (c) => listPage(c, deps));
  return app;
}
