import type { Context } from 'hono';
import { html } from 'hono/html';
import type { AppDeps } from '../../http/deps.js';
import { createTeamApiKey, listApiKeys, revokeTeamApiKey } from '../../services/api-keys.js';
import type { Domain } from '../../services/domains.js';
import { callApi, callerOf } from '../api-call.js';
import { actionButton, badge, copyable, csrfField, done, field, formError, heading, page, select, table, time } from '../layout.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';
import { BLANK_FORM, correctable, formValues, type Form } from '../forms.js';

type Ctx = Context<DashboardEnv>;
type Key = Awaited<ReturnType<typeof listApiKeys>>[number];

const PERMISSIONS = [
  { value: 'full', label: 'Full access', scope: 'every endpoint' },
  { value: 'sending', label: 'Sending only', scope: 'the /v1/emails endpoints' },
] as const;

/** A key's token, shown on the page that answers its creation and never again (not even in a URL or cookie). */
const secretBox = (created: { name: string; token: string }) => html`<section class="secret" role="status">
<p><strong class="secret-title">API key “${created.name}” created</strong></p>
<p>${copyable(created.token)}</p>
<p><strong>Copy it now: it will not be shown again.</strong> Mailroom keeps only a hash of it; if it is lost, create another key and revoke this one.</p>
</section>`;

async function keysPage(c: Ctx, deps: AppDeps, form: Form, options: { created?: { name: string; token: string }; status?: 200 | 400 | 409 } = {}) {
  const [keys, domains] = await Promise.all([listApiKeys(deps, callerOf(c)), callApi<Domain[]>(c, deps, 'get', '/domains')]);
  const domainName = new Map(domains.map((d) => [d.id, d.name]));
  const newestFirst = [...keys].reverse();
  return page(c, {
    title: 'API keys',
    section: 'API keys',
    status: options.status,
    body: html`${heading('API keys')}
${options.created ? secretBox(options.created) : ''}
${table(
  newestFirst,
  [
    { label: 'Key', cell: (k: Key) => html`<span class="key-name">${k.name ?? html`<span class="muted">unnamed</span>`}</span><br><code class="muted">${k.hint}</code>` },
    {
      label: 'Access',
      cell: (k: Key) =>
        html`${PERMISSIONS.find((p) => p.value === k.permission)?.label ?? k.permission}<br><small class="muted">${
          k.domainId === null ? 'all domains' : domainName.get(k.domainId) ?? `domain ${k.domainId}`
        }</small>`,
    },
    {
      label: 'Status',
      cell: (k: Key) =>
        k.revokedAt
          ? html`${badge('revoked')}<br><small class="muted">${time(k.revokedAt)}</small>`
          : html`${badge('active')}<br><small class="muted">created ${time(k.createdAt)}</small>`,
    },
    {
      label: '',
      cell: (k: Key) =>
        k.revokedAt
          ? ''
          : actionButton(c, `/api-keys/${k.id}/revoke`, 'Revoke', {
              kind: 'danger',
              confirm: `Revoke the key ${k.name ?? k.hint}? Anything using it is refused from now on.`,
            }),
    },
  ],
  'No API keys yet. Create one below to call the API.',
)}
<h2>Create an API key</h2>
<section class="panel">
${formError(form.errors[''])}
<form method="post" action="/api-keys" class="stack">
${csrfField(c)}
${field('name', 'Name', { value: form.values.name, error: form.errors.name, required: true, placeholder: 'Production server', hint: 'To tell your keys apart.' })}
${select('permission', 'Permission', PERMISSIONS.map((p) => ({ value: p.value, label: `${p.label}: ${p.scope}` })), { value: form.values.permission ?? 'full', error: form.errors.permission })}
${select('domainId', 'Domain', [{ value: '', label: 'All domains of the team' }, ...domains.map((d) => ({ value: String(d.id), label: d.name }))], {
  value: form.values.domainId,
  error: form.errors.domainId,
})}
<div><button type="submit">Create API key</button></div>
</form>
</section>`,
  });
}

/** The team's API keys: create one (its token shown once) and revoke. */
export function apiKeysPages(deps: AppDeps) {
  const app = section(deps, '/api-keys');

  app.get('/', (c) => keysPage(c, deps, BLANK_FORM));

  // The token goes straight into this response, never through a redirect, so it is in no URL,
  // cookie or history entry; the page is not cached (page() says no-store).
  app.post('/', async (c) => {
    const values = await formValues(c);
    const input = { name: values.name ?? '', permission: values.permission ?? '', domainId: values.domainId ? Number(values.domainId) : null };
    let token: string;
    try {
      token = (await createTeamApiKey(deps, callerOf(c), input)).apiKey;
    } catch (error) {
      const { errors, status } = correctable(error, ['name', 'permission', 'domainId']);
      return keysPage(c, deps, { values, errors }, { status });
    }
    return keysPage(c, deps, BLANK_FORM, { created: { name: input.name.trim(), token } });
  });

  app.post('/:id/revoke', async (c) => {
    await revokeTeamApiKey(deps, callerOf(c), { id: c.req.param('id') });
    return done(c, '/api-keys', 'API key revoked: calls with it are refused from now on');
  });

  return app;
}
