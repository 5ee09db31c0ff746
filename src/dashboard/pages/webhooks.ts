import type { Context } from 'hono';
import { html, raw } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { EVENT_TYPES } from '../../events/contract.js';
import { ApiError, notFound } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import type { Domain } from '../../services/domains.js';
import { MAX_WEBHOOKS_PER_TEAM, type toCall, type toWebhook } from '../../services/webhooks.js';
import { callApi } from '../api-call.js';
import { actionButton, badge, copyable, csrfField, done, field, formError, heading, page, pager, select, table, time, type Html } from '../layout.js';
import { assertMayChange, correctable, mayChange } from '../forms.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';

type Ctx = Context<DashboardEnv>;
type Webhook = ReturnType<typeof toWebhook>;
type Call = ReturnType<typeof toCall>;
type Errors = Record<string, string>;

const WEBHOOKS_PER_PAGE = 50;
const CALLS_PER_PAGE = 20;
const CALL_STATUSES = ['PENDING', 'DELIVERED', 'FAILED', 'DISCARDED'] as const;

/**
 * The form as typed, re-shown as it was when the API refuses it. `events` null: every type (the
 * "All events" box). `status` only on the edit form; '' keeps an AUTO_DISABLED webhook off.
 */
type FormValues = { url: string; description: string; events: string[] | null; status?: string };

const hrefOf = (webhookId: string) => `/webhooks/${encodeURIComponent(webhookId)}`;
const callHref = (call: Pick<Call, 'webhookId' | 'id'>) => `${hrefOf(call.webhookId)}/calls/${encodeURIComponent(call.id)}`;

// The API answers a webhook that hears every type with the full list, so "all" is read back from it.
const hearsEverything = (events: readonly string[]) => EVENT_TYPES.every((type) => events.includes(type));

async function readForm(c: Ctx): Promise<FormValues> {
  // `all`: the event checkboxes repeat one name. The body was parsed for the CSRF check already.
  const form = await c.req.parseBody({ all: true });
  const texts = (name: string) => [form[name]].flat().filter((value): value is string => typeof value === 'string');
  return {
    url: texts('url')[0] ?? '',
    description: texts('description')[0] ?? '',
    events: texts('allEvents').length > 0 ? null : texts('events'),
    ...(form.status === undefined ? {} : { status: texts('status')[0] ?? '' }),
  };
}

const bodyOf = (values: FormValues) => ({
  url: values.url,
  description: values.description,
  events: values.events,
  ...(values.status ? { status: values.status } : {}),
});

/** A refusal of what was typed (400, or 409 for the team's limit) as the reasons by field; anything else (a 404 too) goes on to the error page. */
function refusal(error: unknown, values: FormValues) {
  const { errors, status } = correctable(error, FIELDS);
  // The schema's own words for an empty list speak of arrays, not of the boxes a person sees.
  if (values.events?.length === 0 && errors.events) errors.events = 'Choose at least one event, or tick All events';
  return { errors, status };
}

function eventsField(chosen: string[] | null, error: string | undefined) {
  const checked = (on: boolean) => (on ? raw(' checked') : '');
  return html`<fieldset class="field panel${error ? ' has-error' : ''}"${error ? html` aria-describedby="f-events-error"` : ''}>
<legend>Events</legend>
<label class="check"><input type="checkbox" name="allEvents" value="1"${checked(chosen === null)}> All events, including types added later</label>
<small class="hint">Or untick it and choose the events to hear (test events are always sent):</small>
<div class="cards">${EVENT_TYPES.map(
    // The break after the dot lets a long name wrap in its column instead of running into the next.
    (type) => html`<label class="check"><input type="checkbox" name="events" value="${type}"${checked(chosen?.includes(type) ?? false)}><code>${type.split('.')[0]}.<wbr>${type.split('.')[1]}</code></label>`,
  )}</div>
${error ? html`<small class="error" id="f-events-error">${error}</small>` : ''}
</fieldset>`;
}

const STATUS_CHOICES = [
  { value: 'ACTIVE', label: 'Active' },
  { value: 'PAUSED', label: 'Paused: no new calls, pending ones wait' },
];
const FIELDS = ['url', 'description', 'events', 'status'];

/** The create and the edit form: the same fields, the status only when editing. */
function webhookForm(c: Ctx, options: { action: string; submit: string; cancel: string; values: FormValues; errors: Errors }) {
  const { values, errors } = options;
  const statusChoices = values.status === '' ? [{ value: '', label: 'Auto-disabled: leave it off' }, ...STATUS_CHOICES] : STATUS_CHOICES;
  return html`<form method="post" action="${options.action}" class="stack panel" novalidate>
${csrfField(c)}
${formError(errors[''])}
${field('url', 'Endpoint URL', {
  type: 'url',
  value: values.url,
  error: errors.url,
  required: true,
  placeholder: 'https://example.com/hooks/mailroom',
  hint: 'http or https, on a public address. Each call is a POST signed with the signing secret.',
})}
${field('description', 'Description', { value: values.description, error: errors.description, hint: 'Optional: what this endpoint is for.' })}
${eventsField(values.events, errors.events)}
${values.status === undefined ? '' : select('status', 'Status', statusChoices, { value: values.status, error: errors.status })}
<div class="row-actions"><button type="submit">${options.submit}</button><a class="button secondary" href="${options.cancel}">Cancel</a></div>
</form>`;
}

function newWebhookPage(c: Ctx, values: FormValues, errors: Errors = {}, status: ContentfulStatusCode = 200) {
  return page(c, {
    title: 'New webhook',
    section: 'Webhooks',
    status,
    body: html`${crumbs([])}${heading('New webhook')}
${webhookForm(c, { action: '/webhooks', submit: 'Create webhook', cancel: '/webhooks', values, errors })}`,
  });
}

function editWebhookPage(c: Ctx, webhookId: string, values: FormValues, errors: Errors = {}, status: ContentfulStatusCode = 200) {
  return page(c, {
    title: 'Edit webhook',
    section: 'Webhooks',
    status,
    body: html`${crumbs([{ href: hrefOf(webhookId), label: values.url }])}${heading('Edit webhook')}
${webhookForm(c, { action: `${hrefOf(webhookId)}/edit`, submit: 'Save', cancel: hrefOf(webhookId), values, errors })}`,
  });
}

/**
 * One webhook as the list shows it, without its secret: the route that answers one webhook shows
 * the secret, so only those who may change webhooks may call it, and every role may see this.
 * A team has at most MAX_WEBHOOKS_PER_TEAM, all on the list's one page.
 */
async function findWebhook(c: Ctx, deps: AppDeps, webhookId: string): Promise<Webhook> {
  const list = await callApi<{ data: Webhook[] }>(c, deps, 'get', '/webhooks', { query: { limit: String(MAX_WEBHOOKS_PER_TEAM) } });
  const webhook = list.data.find((each) => each.id === webhookId);
  if (!webhook) throw notFound('Webhook');
  return webhook;
}

/** Where a page sits, from the list down. */
const crumbs = (trail: { href: string; label: string }[]) =>
  html`<p class="muted"><a href="/webhooks">Webhooks</a>${trail.map((step) => html` / <a href="${step.href}">${step.label}</a>`)}</p>`;

function eventsSummary(events: readonly string[]): Html {
  if (hearsEverything(events)) return html`All events`;
  const shown = events.slice(0, 3);
  return html`${shown.map((type, i) => html`${i > 0 ? ', ' : ''}<code>${type}</code>`)}${events.length > shown.length ? html` <span class="muted">and ${events.length - shown.length} more</span>` : ''}`;
}

/** The signing secret, shown once: right after create or rotate, in the answer to that POST only. */
const secretBox = (title: string, secret: string) =>
  html`<div class="secret" role="status"><p><strong>${title}</strong>. Copy it now: it is not shown again. Verify each call's <code>webhook-signature</code> (or <code>X-UseSend-Signature</code>) with it; if it is lost, rotate it.</p>${copyable(secret)}</div>`;

function responseCell(call: Call): Html {
  const timing = call.responseTimeMs === null ? '' : html` <span class="muted">· ${call.responseTimeMs} ms</span>`;
  const status = call.responseStatus === null ? html`<span class="muted">no response</span>` : html`${call.responseStatus}`;
  if (call.attempt === 0) return html`<span class="muted">—</span>`;
  return html`${status}${timing}${call.lastError ? html`<br><small class="muted">${call.lastError}</small>` : ''}`;
}

/**
 * One webhook: its facts, its actions and its call log. Also the answer to create and rotate
 * (with the new secret) and to a refused test call (with the reason).
 */
async function webhookPage(c: Ctx, deps: AppDeps, webhookId: string, extra: { secret?: { title: string; value: string }; error?: string; status?: ContentfulStatusCode } = {}) {
  const callStatus = c.req.query('status');
  const params = { webhookId };
  const [webhook, calls] = await Promise.all([
    findWebhook(c, deps, webhookId),
    callApi<{ data: Call[]; count: number }>(c, deps, 'get', '/webhooks/{webhookId}/calls', {
      params,
      query: { page: c.req.query('page'), limit: String(CALLS_PER_PAGE), status: callStatus },
    }),
  ]);
  const domains = webhook.domainIds.length === 0 ? [] : await callApi<Domain[]>(c, deps, 'get', '/domains');
  const pageNumber = Number(c.req.query('page') ?? 1);
  const href = hrefOf(webhook.id);
  const active = webhook.status === 'ACTIVE';
  const actions = !mayChange(c, 'webhooks') ? undefined : html`${active ? actionButton(c, `${href}/test`, 'Send test event') : ''}
${actionButton(c, `${href}/status`, active ? 'Pause' : 'Activate', { kind: 'secondary', fields: { status: active ? 'PAUSED' : 'ACTIVE' } })}
<a class="button secondary" href="${href}/edit">Edit</a>
${actionButton(c, `${href}/rotate-secret`, 'Rotate secret', { kind: 'secondary', confirm: 'The current signing secret stops working at once. Rotate it?' })}
${actionButton(c, `${href}/delete`, 'Delete', { kind: 'danger', confirm: 'Delete this webhook and its call log? Its pending calls are not made.' })}`;
  const domainNames = webhook.domainIds.map((id) => domains.find((domain) => domain.id === id)?.name ?? `#${id}`);
  return page(c, {
    title: webhook.description ?? 'Webhook',
    section: 'Webhooks',
    status: extra.status,
    body: html`${crumbs([])}${heading(webhook.description ?? 'Webhook', actions)}
${extra.secret ? secretBox(extra.secret.title, extra.secret.value) : ''}
${formError(extra.error)}
<div class="panel"><dl class="facts">
<dt>Status</dt><dd>${badge(webhook.status)}${webhook.disabledReason ? html` <span class="muted">${webhook.disabledReason}</span>` : ''}${
      active ? '' : html`<br><small class="hint">Calls wait while it is not active; Activate sends them.</small>`
    }</dd>
<dt>Endpoint URL</dt><dd><code>${webhook.url}</code></dd>
<dt>Events</dt><dd>${hearsEverything(webhook.events) ? 'All events' : webhook.events.map((type, i) => html`${i > 0 ? ', ' : ''}<code>${type}</code>`)}</dd>
<dt>Domains</dt><dd>${domainNames.length === 0 ? 'Email events of every domain' : domainNames.join(', ')}</dd>
<dt>Webhook ID</dt><dd><code>${webhook.id}</code></dd>
<dt>Created</dt><dd>${time(webhook.createdAt)}</dd>
<dt>Updated</dt><dd>${time(webhook.updatedAt)}</dd>
</dl></div>
<h2>Call log</h2>
<form method="get" action="${href}" class="filters">
${select('status', 'Status', [{ value: '', label: 'Every status' }, ...CALL_STATUSES.map((status) => ({ value: status, label: status }))], { value: callStatus ?? '' })}
<button type="submit" class="secondary">Filter</button>
</form>
${table(
  calls.data,
  [
    { label: 'Event', cell: (call) => html`<a href="${callHref(call)}"><code>${call.type}</code></a>` },
    { label: 'Status', cell: (call) => badge(call.status) },
    { label: 'Attempts', cell: (call) => call.attempt, className: 'num' },
    { label: 'Last response', cell: responseCell },
    { label: 'Created', cell: (call) => time(call.createdAt) },
    { label: 'Next attempt', cell: (call) => time(call.nextAttemptAt) },
  ],
  callStatus ? 'No calls with this status.' : html`No calls yet. ${active && actions ? 'Send a test event to see one.' : ''}`,
)}
${pager(href, { status: callStatus }, pageNumber, pageNumber * CALLS_PER_PAGE < calls.count)}`,
  });
}

/**
 * The team's webhooks (/webhooks): list, create, one webhook with its call log, edit, pause and
 * activate, rotate the secret, send a test event, delete, and one call with its payload and retry.
 * Every action goes through the API's own route, so its rules (the SSRF guard on the URL above all)
 * apply exactly as they do to a key.
 */
export function webhooksPages(deps: AppDeps) {
  const app = section(deps, '/webhooks');

  app.get('/', async (c) => {
    const list = await callApi<{ data: Webhook[]; count: number }>(c, deps, 'get', '/webhooks', { query: { page: c.req.query('page'), limit: String(WEBHOOKS_PER_PAGE) } });
    const pageNumber = Number(c.req.query('page') ?? 1);
    const creates = mayChange(c, 'webhooks');
    return page(c, {
      title: 'Webhooks',
      section: 'Webhooks',
      body: html`${heading('Webhooks', creates ? html`<a class="button" href="/webhooks/new">New webhook</a>` : undefined)}
<p class="muted">Mailroom calls these endpoints when something happens to your mail, contacts, domains or campaigns.</p>
${table(
  list.data,
  [
    {
      label: 'Endpoint',
      className: 'wrap',
      cell: (webhook) => html`<a href="${hrefOf(webhook.id)}">${webhook.url}</a>${webhook.description ? html`<br><small class="muted">${webhook.description}</small>` : ''}`,
    },
    { label: 'Events', cell: (webhook) => eventsSummary(webhook.events) },
    { label: 'Status', cell: (webhook) => badge(webhook.status) },
    { label: 'Created', cell: (webhook) => time(webhook.createdAt) },
  ],
  creates ? html`No webhooks yet. <a href="/webhooks/new">Add one</a> to hear about deliveries, bounces and more as they happen.` : 'No webhooks yet.',
)}
${pager('/webhooks', {}, pageNumber, pageNumber * WEBHOOKS_PER_PAGE < list.count)}`,
    });
  });

  app.get('/new', (c) => {
    assertMayChange(c, 'webhooks');
    return newWebhookPage(c, { url: '', description: '', events: null });
  });

  app.post('/', async (c) => {
    const values = await readForm(c);
    try {
      const created = await callApi<Webhook & { secret: string }>(c, deps, 'post', '/webhooks', { body: bodyOf(values) });
      // Answered here, not after a redirect: the secret must never travel in a URL or a cookie.
      return await webhookPage(c, deps, created.id, { secret: { title: 'Webhook created. Its signing secret', value: created.secret } });
    } catch (error) {
      const { errors, status } = refusal(error, values);
      return newWebhookPage(c, values, errors, status);
    }
  });

  app.get('/:id', (c) => webhookPage(c, deps, c.req.param('id')));

  app.get('/:id/edit', async (c) => {
    assertMayChange(c, 'webhooks');
    const webhook = await findWebhook(c, deps, c.req.param('id'));
    return editWebhookPage(c, webhook.id, {
      url: webhook.url,
      description: webhook.description ?? '',
      events: hearsEverything(webhook.events) ? null : webhook.events,
      status: webhook.status === 'AUTO_DISABLED' ? '' : webhook.status,
    });
  });

  app.post('/:id/edit', async (c) => {
    const webhookId = c.req.param('id');
    const values = await readForm(c);
    try {
      await callApi(c, deps, 'patch', '/webhooks/{webhookId}', { params: { webhookId }, body: bodyOf(values) });
    } catch (error) {
      const { errors, status } = refusal(error, values);
      return editWebhookPage(c, webhookId, values, errors, status);
    }
    return done(c, hrefOf(webhookId), 'Webhook saved');
  });

  app.post('/:id/status', async (c) => {
    const webhookId = c.req.param('id');
    const { status } = await readForm(c);
    const changed = await callApi<Webhook>(c, deps, 'patch', '/webhooks/{webhookId}', { params: { webhookId }, body: { status } });
    return done(c, hrefOf(webhookId), changed.status === 'PAUSED' ? 'Webhook paused: it gets no new calls' : 'Webhook active');
  });

  app.post('/:id/test', async (c) => {
    const webhookId = c.req.param('id');
    try {
      await callApi(c, deps, 'post', '/webhooks/{webhookId}/test', { params: { webhookId } });
    } catch (error) {
      // Not active: said on its page, where the way to activate it is.
      if (error instanceof ApiError && error.code === 'CONFLICT') return webhookPage(c, deps, webhookId, { error: error.message, status: 409 });
      throw error;
    }
    return done(c, hrefOf(webhookId), 'Test event sent: its call is in the log below');
  });

  app.post('/:id/rotate-secret', async (c) => {
    const rotated = await callApi<Webhook & { secret: string }>(c, deps, 'post', '/webhooks/{webhookId}/rotate-secret', { params: { webhookId: c.req.param('id') } });
    return webhookPage(c, deps, rotated.id, { secret: { title: 'Secret rotated. The new signing secret', value: rotated.secret } });
  });

  app.post('/:id/delete', async (c) => {
    await callApi(c, deps, 'delete', '/webhooks/{webhookId}', { params: { webhookId: c.req.param('id') } });
    return done(c, '/webhooks', 'Webhook deleted');
  });

  app.get('/:id/calls/:callId', async (c) => {
    const params = { webhookId: c.req.param('id'), callId: c.req.param('callId') };
    const [webhook, call] = await Promise.all([
      findWebhook(c, deps, params.webhookId),
      callApi<Call>(c, deps, 'get', '/webhooks/{webhookId}/calls/{callId}', { params }),
    ]);
    const retry = call.status === 'PENDING' || !mayChange(c, 'webhooks') ? undefined : actionButton(c, `${callHref(call)}/retry`, 'Retry');
    return page(c, {
      title: `Call ${call.type}`,
      section: 'Webhooks',
      body: html`${crumbs([{ href: hrefOf(webhook.id), label: webhook.url }])}${heading(`Call: ${call.type}`, retry)}
<div class="panel"><dl class="facts">
<dt>Status</dt><dd>${badge(call.status)}${
        call.status === 'PENDING'
          ? html`<br><small class="hint">${webhook.status === 'ACTIVE' ? 'It goes out on its own at the next attempt.' : 'It waits until the webhook is active again.'}</small>`
          : ''
      }</dd>
<dt>Attempts</dt><dd>${call.attempt}</dd>
<dt>Last response</dt><dd>${call.responseStatus ?? html`<span class="muted">none</span>`}</dd>
<dt>Response time</dt><dd>${call.responseTimeMs === null ? html`<span class="muted">—</span>` : `${call.responseTimeMs} ms`}</dd>
<dt>Last error</dt><dd>${call.lastError ?? html`<span class="muted">none</span>`}</dd>
<dt>Next attempt</dt><dd>${time(call.nextAttemptAt)}</dd>
<dt>Created</dt><dd>${time(call.createdAt)}</dd>
<dt>Updated</dt><dd>${time(call.updatedAt)}</dd>
<dt>Call ID</dt><dd><code>${call.id}</code><br><small class="hint">The <code>webhook-id</code> header: the same on every attempt, for receivers to drop repeats.</small></dd>
</dl></div>
<h2>Payload</h2>
<p class="muted">The body of ${call.attempt > 0 ? 'the latest attempt' : 'the first attempt'}.</p>
<pre>${JSON.stringify(call.payload, null, 2)}</pre>`,
    });
  });

  app.post('/:id/calls/:callId/retry', async (c) => {
    const call = await callApi<Call>(c, deps, 'post', '/webhooks/{webhookId}/calls/{callId}/retry', { params: { webhookId: c.req.param('id'), callId: c.req.param('callId') } });
    return done(c, callHref(call), 'Call queued again: it goes out now');
  });

  return app;
}
