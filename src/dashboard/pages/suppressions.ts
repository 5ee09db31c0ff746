import type { Context } from 'hono';
import { html } from 'hono/html';
import type { AppDeps } from '../../http/deps.js';
import { callApi } from '../api-call.js';
import { actionButton, badge, csrfField, done, field, formError, heading, page, pager, table, time } from '../layout.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';
import { BLANK_FORM, correctable, formValues, mayChange, type Form } from '../forms.js';

type Ctx = Context<DashboardEnv>;
type Suppression = { email: string; reason: 'HARD_BOUNCE' | 'COMPLAINT' | 'MANUAL'; sourceEmailId: string | null; createdAt: string };

const PAGE_SIZE = 50;

const REASONS: Record<Suppression['reason'], string> = { HARD_BOUNCE: 'Hard bounce', COMPLAINT: 'Complaint', MANUAL: 'Added by hand' };

async function listPage(c: Ctx, deps: AppDeps, pageNumber: string | undefined, form: Form, status: 200 | 400 | 409 = 200) {
  const { data, count } = await callApi<{ data: Suppression[]; count: number }>(c, deps, 'get', '/suppressions', { query: { page: pageNumber, limit: String(PAGE_SIZE) } });
  const current = Number(pageNumber) || 1;
  const changes = mayChange(c, 'suppressions');
  return page(c, {
    title: 'Suppressions',
    section: 'Suppressions',
    status,
    body: html`${heading('Suppressions')}
<p class="muted">Mail to these addresses is never sent. Hard bounces and complaints add an address here by themselves. ${count.toLocaleString('en')} address${count === 1 ? '' : 'es'} in all.</p>
${changes ? addForm(c, form) : ''}
<h2>Suppressed addresses</h2>
${table(
  data,
  [
    { label: 'Email', cell: (s) => s.email, className: 'wrap' },
    {
      label: 'Reason',
      cell: (s) =>
        html`${badge(REASONS[s.reason] ?? s.reason)}<br><small class="muted">added ${time(s.createdAt)}${
          s.sourceEmailId ? html` by <a href="/emails/${s.sourceEmailId}">this email</a>` : ''
        }</small>`,
    },
    ...(changes ? [{ label: '', cell: (s: Suppression) => removeButton(c, s) }] : []),
  ],
  current > 1 ? 'No addresses on this page.' : 'No suppressed addresses. Hard bounces and complaints will appear here.',
)}
${pager('/suppressions', {}, current, current * PAGE_SIZE < count)}`,
  });
}

const removeButton = (c: Ctx, s: Suppression) =>
  actionButton(c, '/suppressions/remove', 'Remove', {
    kind: 'danger',
    confirm: `Remove ${s.email} from the suppression list? Mail to it will be sent again.`,
    fields: { email: s.email },
  });

/** The form that suppresses an address, as typed last time with what was wrong with it. */
function addForm(c: Ctx, form: Form) {
  return html`<h2>Suppress an address</h2>
<section class="panel">
${formError(form.errors[''])}
<form method="post" action="/suppressions" class="stack">
${csrfField(c)}
${field('email', 'Email address', {
  value: form.values.email,
  error: form.errors.email,
  required: true,
  placeholder: 'someone@example.com',
  hint: 'Its reason will be “Added by hand”. An address already on the list keeps its first entry.',
})}
<div><button type="submit">Suppress</button></div>
</form>
</section>`;
}

/** The team's suppression list: browse it a page at a time, add an address, remove one. */
export function suppressionsPages(deps: AppDeps) {
  const app = section(deps, '/suppressions');

  app.get('/', (c) => listPage(c, deps, c.req.query('page'), BLANK_FORM));

  app.post('/', async (c) => {
    const values = await formValues(c);
    let added: Suppression;
    try {
      added = await callApi<Suppression>(c, deps, 'post', '/suppressions', { body: { email: values.email ?? '' } });
    } catch (error) {
      const { errors, status } = correctable(error, ['email']);
      return listPage(c, deps, undefined, { values, errors }, status);
    }
    return done(c, '/suppressions', `${added.email} is suppressed: no mail is sent to it`);
  });

  // A form field rather than a path segment: an address may hold characters a path cannot.
  app.post('/remove', async (c) => {
    const { email = '' } = await formValues(c);
    await callApi(c, deps, 'delete', '/suppressions/{email}', { params: { email } });
    return done(c, '/suppressions', `${email} removed: mail to it is sent again`);
  });

  return app;
}
