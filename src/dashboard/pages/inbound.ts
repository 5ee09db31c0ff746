import type { Context } from 'hono';
import { html, raw } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';
import { ApiError, notFound } from '../../errors.js';
import type { inboundEmailSchema } from '../../events/contract.js';
import type { AppDeps } from '../../http/deps.js';
import { sendDownload } from '../../http/json.js';
import type { Download } from '../../services/inbound-emails.js';
import type { InboundRoute } from '../../services/inbound-routes.js';
import type { toWebhook } from '../../services/webhooks.js';
import { callApi } from '../api-call.js';
import { correctable, mayChange } from '../forms.js';
import { actionButton, copyable, csrfField, done, field, fieldErrors, formError, heading, page, pager, select, table, time, type Html } from '../layout.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';
import { mailBody, mailFrame } from './mail-content.js';

type Ctx = Context<DashboardEnv>;
type Received = z.infer<typeof inboundEmailSchema>;
type Webhook = ReturnType<typeof toWebhook>;
type Check = Received['authentication']['spf'];

const MAIL_PER_PAGE = 50;
const FIELDS = ['match', 'action', 'forwardTo', 'webhookIds'];

const ACTIONS = [
  { value: 'store', label: 'Keep it' },
  { value: 'webhook', label: 'Keep it and send email.received to webhooks' },
  { value: 'forward', label: 'Keep it and forward it' },
] as const;

/** The add-route form as typed: re-shown as it was when the API refuses it. */
type RouteForm = { values: { match: string; action: string; forwardTo: string; webhookIds: string[] }; errors: Record<string, string> };
const BLANK: RouteForm = { values: { match: '', action: 'store', forwardTo: '', webhookIds: [] }, errors: {} };

const hrefOf = (id: string) => `/inbound/${encodeURIComponent(id)}`;

async function readRouteForm(c: Ctx): Promise<RouteForm['values']> {
  // `all`: the webhook checkboxes repeat one name. The body was parsed for the CSRF check already.
  const form = await c.req.parseBody({ all: true });
  const texts = (name: string) => [form[name]].flat().filter((value): value is string => typeof value === 'string');
  return { match: texts('match')[0] ?? '', action: texts('action')[0] ?? '', forwardTo: texts('forwardTo')[0] ?? '', webhookIds: texts('webhookIds') };
}

/** What the API takes: forwardTo only for a forward, the webhooks only for a webhook route (none ticked: every one). */
const routeBody = (values: RouteForm['values']) => ({
  match: values.match,
  action: values.action,
  ...(values.action === 'forward' && { forwardTo: values.forwardTo }),
  ...(values.action === 'webhook' && values.webhookIds.length > 0 && { webhookIds: values.webhookIds }),
});

const webhookName = (webhook: Webhook) => webhook.description ?? webhook.url;

/** What a route does with its mail, in words. */
function actionText(route: InboundRoute, webhooks: Webhook[]): Html {
  if (route.action === 'forward') return html`Kept and forwarded to ${route.forwardTo.join(', ')}`;
  if (route.action === 'store') return html`Kept`;
  if (route.webhookIds === null) return html`Kept; <code>email.received</code> sent to every webhook that takes it`;
  const names = route.webhookIds.map((id) => {
    const webhook = webhooks.find((w) => w.id === id);
    return webhook ? webhookName(webhook) : `${id} (deleted)`;
  });
  return html`Kept; <code>email.received</code> sent to ${names.join(', ')}`;
}

// Name and value stacked in one cell, as on a domain's page: side by side they squeeze each other at a phone's width.
function mxRecord(route: InboundRoute): Html {
  const record = route.dnsRecords[0]!;
  const part = (name: string, label: string, value: string) => html`<div class="field record-${name}"><span class="hint">${label}</span>${copyable(value)}</div>`;
  return html`${part('name', 'Name', record.name)}${part('value', 'Value', record.value)}
<small class="hint"><strong>${record.type}</strong> · priority <span class="record-priority">${record.priority}</span> · in the zone <strong class="record-zone">${record.zone}</strong></small>`;
}

function webhooksField(webhooks: Webhook[], chosen: string[], error: string | undefined): Html {
  const checked = (id: string) => (chosen.includes(id) ? raw(' checked') : '');
  const choices =
    webhooks.length === 0
      ? html`<small class="hint">The team has no webhooks yet: <a href="/webhooks/new">add one</a> that takes <code>email.received</code>.</small>`
      : html`<small class="hint">Tick none to tell every webhook that takes <code>email.received</code>, including ones added later.</small>
${webhooks.map(
  (webhook) =>
    html`<label class="check"><input type="checkbox" name="webhookIds" value="${webhook.id}"${checked(webhook.id)}> <span>${webhookName(webhook)}${
      // A webhook hears only the event types it takes, whatever route names it.
      webhook.events.includes('email.received') ? '' : html` <small class="muted">(does not take email.received: it hears nothing)</small>`
    }</span></label>`,
)}`;
  return html`<fieldset class="field panel for-webhook${error ? ' has-error' : ''}"${error ? html` aria-describedby="f-webhookIds-error"` : ''}>
<legend>Webhooks</legend>
${choices}
${error ? html`<small class="error" id="f-webhookIds-error">${error}</small>` : ''}
</fieldset>`;
}

/** One authentication check's result as a badge: pass green, fail red, the rest between. */
const authBadge = (label: string | null, result: string) =>
  html`<span class="badge badge-auth badge-${result.toLowerCase().replace(/[^a-z]/g, '')}">${label ? `${label} ${result}` : result}</span>`;

const authBadges = (mail: Received) =>
  html`<span class="auth-badges">${authBadge('SPF', mail.authentication.spf.result)} ${authBadge('DKIM', mail.authentication.dkim.result)} ${authBadge('DMARC', mail.authentication.dmarc.result)}</span>`;

const subjectText = (subject: string) => subject || html`<span class="muted">(no subject)</span>`;

/** The received mail: a route filter and one page of the list, newest first. */
async function receivedList(c: Ctx, deps: AppDeps, routes: InboundRoute[]) {
  const routeId = c.req.query('routeId') || undefined;
  const pageText = c.req.query('page') || undefined;
  let list: { data: Received[]; count: number } | null = null;
  let errors: Record<string, string> = {};
  try {
    list = await callApi(c, deps, 'get', '/inbound/emails', { query: { page: pageText, limit: String(MAIL_PER_PAGE), routeId } });
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'VALIDATION_ERROR') throw error;
    errors = fieldErrors(error);
  }
  const pageNumber = list ? Number(pageText ?? 1) : 1;
  const routeOf = new Map(routes.map((route) => [route.id, route.match]));
  const filter = html`<form method="get" action="/inbound" class="filters">
${select('routeId', 'Route', [{ value: '', label: 'Every route' }, ...routes.map((route) => ({ value: route.id, label: route.match }))], { value: routeId ?? '', error: errors.routeId })}
<div class="row-actions"><button type="submit" class="secondary">Filter</button>${routeId ? html`<a class="button secondary" href="/inbound">Clear</a>` : ''}</div>
</form>`;
  if (!list) return { ok: false, body: html`${filter}${formError(errors.page ? `Page ${errors.page}` : (errors[''] ?? Object.values(errors)[0]))}` };
  return {
    ok: true,
    body: html`${filter}
<div class="stacked">${table(
  list.data,
  [
    // On a phone the cells stack: the subject over who sent it to whom, the checks, the time.
    {
      label: 'Message',
      className: 'words',
      cell: (mail) => html`<a href="${hrefOf(mail.id)}" class="subject">${subjectText(mail.subject)}</a><br><small class="muted"><span class="from">from ${mail.from ?? (mail.envelope.from || '<>')}</span> · <span class="to">to ${mail.envelope.to.join(', ')}</span>${
        mail.attachments.length === 0 ? '' : ` · ${mail.attachments.length} attachment${mail.attachments.length === 1 ? '' : 's'}`
      }${mail.routeId === null ? ' · deleted route' : ''}</small>`,
    },
    { label: 'Authentication', cell: authBadges },
    { label: 'Received', cell: (mail) => time(mail.receivedAt) },
  ],
  routeId
    ? html`No mail for ${routeOf.get(routeId) ?? 'this route'} yet. <a href="/inbound">Show all mail</a>`
    : routes.length === 0
      ? 'No mail yet. Add a route above, create its MX record, and mail sent to its addresses shows up here.'
      : 'No mail yet. Mail sent to the addresses of your routes shows up here once their MX records point at this server.',
)}</div>
${pager('/inbound', { routeId }, pageNumber, pageNumber * MAIL_PER_PAGE < list.count)}`,
  };
}

/** /inbound: the routes with their MX records, the form to add one, and the received mail. */
async function inboundPage(c: Ctx, deps: AppDeps, form: RouteForm = BLANK, status: ContentfulStatusCode = 200) {
  const [{ data: routes }, { data: webhooks }] = await Promise.all([
    callApi<{ data: InboundRoute[] }>(c, deps, 'get', '/inbound/routes'),
    callApi<{ data: Webhook[] }>(c, deps, 'get', '/webhooks', { query: { limit: '100' } }),
  ]);
  const mail = await receivedList(c, deps, routes);
  const mxHost = deps.config.inboundMxHost;
  const changes = mayChange(c, 'inbound');
  return page(c, {
    title: 'Inbound',
    section: 'Inbound',
    status: status === 200 && !mail.ok ? 400 : status,
    body: html`${heading('Inbound')}
<p class="muted">Mail to the addresses of your verified domains: a route claims an address, or every address of a domain, and says what to do with what arrives. Each route's domain needs an MX record pointing at <code>${mxHost}</code>.</p>
<h2>Routes</h2>
<div class="stacked">${table(
  routes,
  [
    { label: 'Route', className: 'words', cell: (route) => html`<code class="route-match">${route.match}</code><br><small class="muted route-action">${actionText(route, webhooks)}</small>` },
    { label: 'MX record', cell: mxRecord },
    ...(changes ? [{ label: '', cell: (route: InboundRoute) => deleteButton(c, route) }] : []),
  ],
  changes ? 'No routes yet. Add one below to receive mail at an address of a verified domain.' : 'No routes yet.',
)}</div>
${changes ? routeForm(c, form, webhooks) : ''}
<h2>Received mail</h2>
${mail.body}`,
  });
}

const deleteButton = (c: Ctx, route: InboundRoute) =>
  actionButton(c, `/inbound/routes/${encodeURIComponent(route.id)}/delete`, 'Delete', {
    kind: 'danger',
    confirm: `Delete the route for ${route.match}? Mail to it is refused from then on; the mail it took stays.`,
  });

/** The form that adds a route, as typed last time with what was wrong with it. */
function routeForm(c: Ctx, { values, errors }: RouteForm, webhooks: Webhook[]) {
  return html`<h2>Add a route</h2>
<section class="panel">
${formError(errors[''])}
<form method="post" action="/inbound" class="stack route-form" novalidate>
${csrfField(c)}
${field('match', 'Address', {
  value: values.match,
  error: errors.match,
  required: true,
  placeholder: 'support@example.com or *@in.example.com',
  hint: 'An address of a verified domain of the team (or of a subdomain of one), or *@domain for every address of the domain.',
})}
${select('action', 'Action', ACTIONS, { value: values.action, error: errors.action })}
<div class="for-forward">${field('forwardTo', 'Forward to', {
  value: values.forwardTo,
  error: errors.forwardTo,
  placeholder: 'team@example.org, lead@example.org',
  hint: 'Up to 50 addresses, separated by commas. The forward is sent From the route\'s address, with Reply-To the sender.',
})}</div>
${webhooksField(webhooks, values.webhookIds, errors.webhookIds)}
<div><button type="submit">Add route</button></div>
</form>
</section>`;
}

const fact = (label: string, value: unknown) => html`<dt>${label}</dt><dd>${value === null || value === undefined || value === '' ? html`<span class="muted">—</span>` : value}</dd>`;
const list = (addresses: readonly string[]) => (addresses.length === 0 ? null : addresses.join(', '));
const part = (title: string, body: Html | string, className = '') => html`<section${className ? html` class="${className}"` : ''}><h2>${title}</h2>${body}</section>`;

const sizeText = (bytes: number) =>
  bytes < 1024 ? `${bytes} bytes` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** What one check was about, beside its badge: the domain, and what else it names. */
function checkDetails(check: Check, extra: [string, unknown][]): Html {
  const named = [['domain', check.domain] as [string, unknown], ...extra].filter(([, value]) => value !== null && value !== undefined && value !== '');
  return html`${named.map(([label, value]) => html` <span class="muted">${label}</span> <code>${String(value)}</code>`)}`;
}

function authenticationPanel(mail: Received): Html {
  const { spf, dkim, dmarc } = mail.authentication;
  const signatures = (Array.isArray(dkim.signatures) ? dkim.signatures : []) as Check[];
  return html`<div class="panel"><dl class="facts auth">
<dt>SPF</dt><dd class="auth-spf">${authBadge(null, spf.result)}${checkDetails(spf, [['client', spf.clientAddress]])}</dd>
<dt>DKIM</dt><dd class="auth-dkim">${authBadge(null, dkim.result)}${
    signatures.length === 0
      ? html` <span class="muted">not signed</span>`
      : html`<ul class="signatures">${signatures.map(
          (signature) => html`<li>${authBadge(null, signature.result)}${checkDetails(signature, [['selector', signature.selector]])}${
            // mailauth names the From domain a signature aligns with, or says false.
            signature.aligned === null || signature.aligned === undefined ? '' : html` <span class="muted">${signature.aligned ? 'aligned with From' : 'not aligned with From'}</span>`
          }</li>`,
        )}</ul>`
  }</dd>
<dt>DMARC</dt><dd class="auth-dmarc">${authBadge(null, dmarc.result)}${checkDetails(dmarc, [['policy', dmarc.policy]])}</dd>
</dl>
<small class="hint">Checked when the mail arrived, never enforced: mail that fails is kept like any other.</small></div>`;
}

/** /inbound/{id}: one received message, its authentication, its bodies and its attachments. */
async function messagePage(c: Ctx, deps: AppDeps, id: string) {
  const mail = await callApi<Received>(c, deps, 'get', '/inbound/emails/{id}', { params: { id } });
  const { data: routes } = await callApi<{ data: InboundRoute[] }>(c, deps, 'get', '/inbound/routes');
  const route = routes.find((r) => r.id === mail.routeId);
  const href = hrefOf(mail.id);
  // The API has no word for it: mail past the retention window with neither body has had them dropped.
  const dropped = mail.text === null && mail.html === null && Date.parse(mail.receivedAt) < Date.now() - deps.config.retentionDays * 86_400_000;
  const content = dropped
    ? part('Content', html`<div class="empty">The message's content was dropped by retention (received mail keeps it ${deps.config.retentionDays} days); its facts stay.</div>`)
    : html`${part('HTML', mail.html !== null ? mailFrame("The message's HTML", { src: `${href}/body` }) : html`<div class="empty">This message has no HTML part.</div>`)}
${part('Text', mail.text ? html`<pre class="email-text">${mail.text}</pre>` : html`<div class="empty">This message has no text part.</div>`)}
${part(
  'Attachments',
  table(
    mail.attachments,
    [
      {
        label: 'File',
        className: 'wrap',
        cell: (attachment) => html`<a href="${href}/attachments/${encodeURIComponent(attachment.id)}" download>${attachment.filename ?? attachment.id}</a>`,
      },
      { label: 'Type', className: 'wrap', cell: (attachment) => html`<code>${attachment.contentType}</code>` },
      { label: 'Size', className: 'num', cell: (attachment) => sizeText(attachment.size) },
    ],
    'No attachments.',
  ),
)}`;
  const answers = mail.inReplyToEmailId
    ? html`<code>${mail.inReplyTo}</code><br><small>answers <a href="/emails/${encodeURIComponent(mail.inReplyToEmailId)}">an email you sent</a></small>`
    : mail.inReplyTo
      ? html`<code>${mail.inReplyTo}</code>`
      : null;
  return page(c, {
    title: mail.subject || 'Received message',
    section: 'Inbound',
    body: html`<p><a href="/inbound">← Inbound</a></p>
${heading(mail.subject || '(no subject)', dropped ? undefined : html`<a class="button secondary" href="${href}/raw" download>Download raw message</a>`)}
<p class="muted">Received message ${copyable(mail.id)}</p>
<div class="grid-2">
${part('Facts', html`<div class="panel"><dl class="facts">
${fact('From', mail.from)}
${fact('To', list(mail.to))}
${fact('Cc', list(mail.cc))}
${fact('Subject', mail.subject)}
${fact('Received', time(mail.receivedAt))}
${fact('Route', route ? html`<code>${route.match}</code>` : mail.routeId === null ? html`<span class="muted">deleted</span>` : mail.routeId)}
${fact('Envelope sender', mail.envelope.from || html`<code>&lt;&gt;</code> <span class="muted">(null sender)</span>`)}
${fact('Envelope recipients', list(mail.envelope.to))}
${fact('Client address', mail.envelope.clientAddress ? html`${mail.envelope.clientAddress}${mail.envelope.helo ? html` <span class="muted">HELO</span> ${mail.envelope.helo}` : ''}` : null)}
${fact('Message-ID', mail.messageId ? html`<code>${mail.messageId}</code>` : null)}
${fact('In-Reply-To', answers)}
${fact('Size', sizeText(mail.size))}
</dl></div>`)}
${part('Authentication', authenticationPanel(mail))}
</div>
${content}
${part(
  'Header fields',
  html`<details class="panel"><summary>${mail.headers.length} header fields, in order</summary><dl class="facts">${mail.headers.map((header) => fact(header.key, header.value))}</dl></details>`,
)}`,
  });
}

/**
 * Inbound mail (/inbound): the team's routes with the MX record each needs, adding and deleting
 * one, the mail they took, and one message with its authentication, its HTML in the sandboxed
 * frame the emails pages use, its text, and its attachments and raw form as downloads (through
 * the session, as the API's own download routes need a key). Every action goes through the API's
 * routes, so its rules apply exactly as they do to a key.
 */
export function inboundPages(deps: AppDeps) {
  const app = section(deps, '/inbound');

  app.get('/', (c) => inboundPage(c, deps));

  app.post('/', async (c) => {
    const values = await readRouteForm(c);
    try {
      const route = await callApi<InboundRoute>(c, deps, 'post', '/inbound/routes', { body: routeBody(values) });
      const record = route.dnsRecords[0]!;
      return done(c, '/inbound', `Route for ${route.match} added: create its MX record (${record.name} in ${record.zone}, pointing at ${record.value})`);
    } catch (error) {
      const { errors, status } = correctable(error, FIELDS, 'match');
      return inboundPage(c, deps, { values, errors }, status);
    }
  });

  app.post('/routes/:id/delete', async (c) => {
    await callApi(c, deps, 'delete', '/inbound/routes/{id}', { params: { id: c.req.param('id') } });
    return done(c, '/inbound', 'Route deleted: mail to it is refused from now on');
  });

  app.get('/:id', (c) => messagePage(c, deps, c.req.param('id')));

  app.get('/:id/body', async (c) => {
    const mail = await callApi<Received>(c, deps, 'get', '/inbound/emails/{id}', { params: { id: c.req.param('id') } });
    if (mail.html === null) throw notFound('HTML body');
    return mailBody(c, mail.html);
  });

  app.get('/:id/raw', async (c) => sendDownload(c, await callApi<Download>(c, deps, 'get', '/inbound/emails/{id}/raw', { params: { id: c.req.param('id') } })));

  app.get('/:id/attachments/:attachmentId', async (c) =>
    sendDownload(
      c,
      await callApi<Download>(c, deps, 'get', '/inbound/emails/{id}/attachments/{attachmentId}', { params: { id: c.req.param('id'), attachmentId: c.req.param('attachmentId') } }),
    ),
  );

  return app;
}
