import type { Context } from 'hono';
import { html } from 'hono/html';
import type { AppDeps } from '../../http/deps.js';
import { sandboxRefusal, SANDBOX_DOMAIN } from '../../sending/sandbox.js';
import { transportOf } from '../../sending/transports/index.js';
import type { Domain } from '../../services/domains.js';
import { callApi } from '../api-call.js';
import { actionButton, badge, copyable, csrfField, done, field, formError, heading, page, select, table, time } from '../layout.js';
import { BLANK_FORM, correctable, formValues, mayChange, type Form } from '../forms.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';

type Ctx = Context<DashboardEnv>;

const tracking = (domain: Domain) => {
  const on = [domain.openTracking && 'opens', domain.clickTracking && 'clicks'].filter(Boolean).join(' and ');
  return on ? `Tracks ${on}` : html`<span class="muted">Off</span>`;
};

// With one region configured there is nothing to choose: the API takes it by default.
const regionChoice = (deps: AppDeps) => deps.config.regions.length > 1;

/** What the sandbox domain is for, and whether this server's transport lets it send. */
function sandboxNote(deps: AppDeps) {
  const what = html`<strong>${SANDBOX_DOMAIN}</strong> is your team's sandbox: a domain to try Mailroom with, verified from the start, with no DNS to set up.`;
  return sandboxRefusal(SANDBOX_DOMAIN, transportOf(deps.config)) === null
    ? html`<p class="sandbox-note">${what} Send from any address on it, such as <code>hello@${SANDBOX_DOMAIN}</code>: its mail never leaves this server, each message is captured and shown under <a href="/emails">Emails</a>. Add your own domain to send for real.</p>`
    : html`<p class="sandbox-note">${what} Its mail is only ever captured, never sent out, and this server relays its mail (SMTP_URL is set): nothing can be sent from the sandbox here. Send from a domain of your own.</p>`;
}

/** The domain the record names are relative to, as DNS providers show their zones. */
const zoneOf = (domain: Domain) => (domain.subdomain ? domain.name.slice(domain.subdomain.length + 1) : domain.name);

function listPage(c: Ctx, deps: AppDeps, domains: Domain[], form: Form, status: 200 | 400 | 409 = 200) {
  const adds = mayChange(c, 'domains');
  return page(c, {
    title: 'Domains',
    section: 'Domains',
    status,
    body: html`${heading('Domains')}
${table(
  domains,
  [
    { label: 'Domain', cell: (d) => html`<a href="/domains/${d.id}">${d.name}</a>${d.sandbox ? html` ${badge('Sandbox')}` : ''}` },
    { label: 'Status', cell: (d) => badge(d.status) },
    ...(regionChoice(deps) ? [{ label: 'Region', cell: (d: Domain) => d.region }] : []),
    { label: 'Tracking', cell: tracking },
    { label: 'Added', cell: (d) => time(d.createdAt) },
  ],
  adds ? 'No domains yet. Add the domain you send mail from below: you will get the DNS records that prove it is yours.' : 'No domains yet.',
)}
${domains.some((d) => d.sandbox) ? sandboxNote(deps) : ''}
${adds ? addForm(c, deps, form) : ''}`,
  });
}

/** The form that adds a domain, with what was wrong with the last one sent. */
function addForm(c: Ctx, deps: AppDeps, form: Form) {
  return html`<h2>Add a domain</h2>
<section class="panel">
${formError(form.errors[''])}
<form method="post" action="/domains" class="stack">
${csrfField(c)}
${field('name', 'Domain name', {
  value: form.values.name,
  error: form.errors.name,
  required: true,
  placeholder: 'mail.example.com',
  hint: 'The part after the @ of your From addresses. A subdomain keeps this mail apart from your other mail.',
})}
${regionChoice(deps) ? select('region', 'Region', deps.config.regions.map((r) => ({ value: r, label: r })), { value: form.values.region, error: form.errors.region }) : ''}
<div><button type="submit">Add domain</button></div>
</form>
</section>`;
}

// Name and value stacked in one cell: side by side, the long DKIM value squeezes the name into a
// column a few letters wide, and at a phone's width both. (Not a dl.facts: its word-break would
// reach the copy buttons and break "Copy" in two.)
function recordsTable(domain: Domain) {
  const part = (name: string, label: string, value: string) =>
    html`<div class="field record-${name}"><span class="hint">${label}</span>${copyable(value)}</div>`;
  return table(
    domain.dnsRecords,
    [
      { label: 'Type', cell: (r) => html`<strong>${r.type}</strong>` },
      {
        label: 'Record',
        cell: (r) => html`${part('name', 'Name', r.name)}${part('value', 'Value', r.value)}
<small class="hint">${r.priority === null ? '' : html`Priority <span class="record-priority">${r.priority}</span> · `}TTL <span class="record-ttl">${r.ttl}</span></small>`,
      },
      { label: 'Status', cell: (r) => html`${badge(r.status)}${r.recommended ? html`<br><small class="hint">recommended</small>` : ''}` },
    ],
    'This domain needs no DNS records.',
  );
}

/** What in the server's setup keeps this domain's mail from working beyond its machine: first on the page, before any record is copied. */
const warningsPanel = (domain: Domain) =>
  domain.warnings.length === 0
    ? ''
    : html`<section class="warnings" id="warnings" role="alert"><strong>This server is set up for this machine only</strong><ul>${domain.warnings.map((warning) => html`<li>${warning}</li>`)}</ul></section>`;

const checkbox = (name: string, label: string, checked: boolean, hint: string) =>
  html`<div class="field"><label class="check"><input type="checkbox" name="${name}" value="on"${checked ? html` checked` : ''}> ${label}</label><small class="hint">${hint}</small></div>`;

function domainPage(c: Ctx, deps: AppDeps, domain: Domain) {
  const base = `/domains/${domain.id}`;
  const verified = domain.status === 'SUCCESS';
  const changes = mayChange(c, 'domains');
  return page(c, {
    title: domain.name,
    section: 'Domains',
    body: html`<p class="muted"><a href="/domains">← Domains</a></p>
${heading(
  domain.name,
  // The sandbox domain has no records to check and is never deleted.
  domain.sandbox || !changes ? undefined : html`${actionButton(c, `${base}/verify`, verified ? 'Check records again' : 'Verify DNS records')}${actionButton(c, `${base}/delete`, 'Delete domain', {
    kind: 'danger',
    confirm: `Delete ${domain.name}? Mail can no longer be sent from it, and API keys scoped to it are deleted with it.`,
  })}`,
)}
${warningsPanel(domain)}
<section class="panel" id="status">
<dl class="facts">
<dt>Status</dt><dd>${badge(domain.status)}${domain.sandbox ? html` ${badge('Sandbox')}` : ''}${domain.isVerifying ? html` <span class="muted">checking DNS…</span>` : ''}</dd>
<dt>Region</dt><dd>${domain.region}</dd>
<dt>Added</dt><dd>${time(domain.createdAt)}</dd>
${domain.sandbox ? '' : html`<dt>Last checked</dt><dd>${domain.lastCheckedTime ? time(domain.lastCheckedTime) : html`<span class="muted">not yet</span>`}</dd>`}
${domain.errorMessage ? html`<dt>Note</dt><dd>${domain.errorMessage}</dd>` : ''}
${domain.verificationError ? html`<dt>Last check found</dt><dd class="error verification-error">${domain.verificationError}</dd>` : ''}
</dl>
</section>
${domain.sandbox ? sandboxNote(deps) : html`<h2>DNS records</h2>
<p class="muted">Create these records at your DNS provider for <strong>${zoneOf(domain)}</strong> (names are relative to it), then verify.
${verified ? '' : 'Mail can be sent from this domain once it is verified.'}</p>
${recordsTable(domain)}`}
<h2>Tracking</h2>
<section class="panel">
${changes ? html`<form method="post" action="${base}/tracking" class="stack">
${csrfField(c)}
${checkbox('openTracking', 'Track opens', domain.openTracking, 'Adds an invisible image to HTML mail to count opens.')}
${checkbox('clickTracking', 'Track clicks', domain.clickTracking, 'Sends links through Mailroom to count clicks.')}
<div><button type="submit" class="secondary">Save tracking</button></div>
</form>` : html`<p>${tracking(domain)}</p>`}
</section>`,
  });
}

/** The team's sending domains: add one, copy its DNS records, verify it, set tracking, delete it. */
export function domainsPages(deps: AppDeps) {
  const app = section(deps, '/domains');
  const list = (c: Ctx) => callApi<Domain[]>(c, deps, 'get', '/domains');

  app.get('/', async (c) => listPage(c, deps, await list(c), BLANK_FORM));

  app.post('/', async (c) => {
    const values = await formValues(c);
    try {
      const body = { name: values.name ?? '', ...(values.region ? { region: values.region } : {}) };
      const domain = await callApi<Domain>(c, deps, 'post', '/domains', { body });
      return done(c, `/domains/${domain.id}`, `Domain ${domain.name} added: create its DNS records, then verify it`);
    } catch (error) {
      const { errors, status } = correctable(error, regionChoice(deps) ? ['name', 'region'] : ['name'], 'name');
      return listPage(c, deps, await list(c), { values, errors }, status);
    }
  });

  app.get('/:id', async (c) => domainPage(c, deps, await callApi<Domain>(c, deps, 'get', '/domains/{id}', { params: { id: c.req.param('id') } })));

  app.post('/:id/verify', async (c) => {
    const id = c.req.param('id');
    const { message } = await callApi<{ message: string }>(c, deps, 'put', '/domains/{id}/verify', { params: { id } });
    return done(c, `/domains/${id}`, message);
  });

  app.post('/:id/tracking', async (c) => {
    const id = c.req.param('id');
    const values = await formValues(c);
    const body = { openTracking: values.openTracking === 'on', clickTracking: values.clickTracking === 'on' };
    const domain = await callApi<Domain>(c, deps, 'patch', '/domains/{id}', { params: { id }, body });
    return done(c, `/domains/${id}`, `Tracking of ${domain.name} saved`);
  });

  app.post('/:id/delete', async (c) => {
    const { message } = await callApi<{ message: string }>(c, deps, 'delete', '/domains/{id}', { params: { id: c.req.param('id') } });
    return done(c, '/domains', message);
  });

  return app;
}
