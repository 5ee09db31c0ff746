import type { Context } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppDeps } from '../../http/deps.js';
import type { toTemplate } from '../../services/templates.js';
import { callApi } from '../api-call.js';
import { actionButton, csrfField, done, field, formError, heading, page, pager, table, textArea, time } from '../layout.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';
import { assertMayChange, formErrors, formValues, given, invalidInput, mayChange, type FormErrors } from '../forms.js';
import { mailBody, mailFrame } from './mail-content.js';

type Template = ReturnType<typeof toTemplate>;
type C = Context<DashboardEnv>;

const PAGE_SIZE = 50;
const FORM_FIELDS = ['name', 'subject', 'html'] as const;

/** The form of a new template (no `template`) or of the template to change, with the saved one's preview beside it. */
function templateForm(c: C, options: { template?: Template; values: Record<string, string>; errors?: FormErrors; status?: ContentfulStatusCode }) {
  const { template, values } = options;
  const errors = options.errors?.fields ?? {};
  const title = template ? template.name : 'New template';
  const changes = mayChange(c, 'templates');
  const actions = template
    ? html`${mayChange(c, 'campaigns') ? html`<a class="button secondary" href="/campaigns/new?templateId=${template.id}">Start a campaign</a>` : ''}${changes ? actionButton(c, `/templates/${template.id}/delete`, 'Delete', {
        kind: 'danger',
        confirm: `Delete the template “${template.name}”? Mail sent with it keeps what it said.`,
      }) : ''}`
    : undefined;
  // A role that may not change templates reads the saved one beside its subject, without the form.
  const form = !changes && template ? html`<div class="panel"><dl class="facts"><dt>Subject</dt><dd>${template.subject}</dd></dl></div>` : html`<form class="stack panel" method="post" action="${template ? `/templates/${template.id}` : '/templates/new'}">
${csrfField(c)}
${formError(options.errors?.form)}
${field('name', 'Name', { value: values.name, error: errors.name, required: true })}
${field('subject', 'Subject', { value: values.subject, error: errors.subject, required: true, hint: 'May use {{name}} or {{name,fallback=text}} placeholders, as the HTML may.' })}
${textArea('html', 'HTML', { value: values.html, error: errors.html, rows: 16, hint: 'A campaign made from it must also contain the unsubscribe link {{unsubscribeUrl}}.' })}
<div class="row-actions"><button type="submit">${template ? 'Save changes' : 'Create template'}</button><a class="button secondary" href="/templates">Cancel</a></div>
</form>`;
  return page(c, {
    title,
    section: 'Templates',
    status: options.status,
    body: html`<p><a href="/templates">← Templates</a></p>
${heading(title, actions)}
${template
  ? html`<div class="grid-2">${form}<section class="panel">
<h2>As saved</h2>
<p class="muted">Variables: ${template.variables.length ? template.variables.map((name, i) => html`${i ? ', ' : ''}<code>${name}</code>`) : 'none'} · updated ${time(template.updatedAt)}</p>
${mailFrame('The template’s HTML', { src: `/templates/${template.id}/body` })}
</section></div>`
  : form}`,
  });
}

const getTemplate = (c: C, deps: AppDeps) => callApi<Template>(c, deps, 'get', '/templates/{templateId}', { params: { templateId: c.req.param('id')! } });

/** Templates: the list, and creating, changing and deleting one, each through the API's own call. */
export function templatesPages(deps: AppDeps) {
  const app = section(deps, '/templates');

  app.get('/', async (c) => {
    const pageNumber = c.req.query('page') ?? '1';
    const list = await callApi<{ data: Template[]; count: number }>(c, deps, 'get', '/templates', { query: { page: pageNumber, limit: String(PAGE_SIZE) } });
    const current = Number(pageNumber);
    const changes = mayChange(c, 'templates');
    return page(c, {
      title: 'Templates',
      section: 'Templates',
      body: html`${heading('Templates', changes ? html`<a class="button" href="/templates/new">New template</a>` : undefined)}
${table(
  list.data,
  [
    { label: 'Template', cell: (row) => html`<a href="/templates/${row.id}">${row.name}</a><br><small class="muted">${row.subject}</small>` },
    { label: 'Variables', cell: (row) => (row.variables.length ? row.variables.join(', ') : html`<span class="muted">—</span>`) },
    { label: 'Updated', cell: (row) => time(row.updatedAt) },
    ...(changes ? [{ label: 'Actions', cell: (row: Template) => actionButton(c, `/templates/${row.id}/delete`, 'Delete', { kind: 'danger', confirm: `Delete the template “${row.name}”?` }) }] : []),
  ],
  changes ? html`No templates yet. <a href="/templates/new">Make one</a> to send emails and start campaigns from it.` : 'No templates yet.',
)}
${pager('/templates', {}, current, current * PAGE_SIZE < list.count)}`,
    });
  });

  app.get('/new', (c) => {
    assertMayChange(c, 'templates');
    return templateForm(c, { values: {} });
  });

  app.post('/new', async (c) => {
    const values = await formValues(c);
    try {
      const created = await callApi<Template>(c, deps, 'post', '/templates', { body: { name: values.name ?? '', subject: values.subject ?? '', html: given(values.html) } });
      return done(c, `/templates/${created.id}`, `Template “${created.name}” created`);
    } catch (error) {
      return templateForm(c, { values, errors: formErrors(invalidInput(error), FORM_FIELDS), status: 400 });
    }
  });

  app.get('/:id', async (c) => {
    const template = await getTemplate(c, deps);
    return templateForm(c, { template, values: { name: template.name, subject: template.subject, html: template.html ?? '' } });
  });

  app.get('/:id/body', async (c) => mailBody(c, (await getTemplate(c, deps)).html ?? ''));

  app.post('/:id', async (c) => {
    const templateId = c.req.param('id');
    const values = await formValues(c);
    try {
      // An emptied HTML box clears the HTML: a template with a text body keeps that.
      const body = { name: values.name ?? '', subject: values.subject ?? '', html: values.html || null };
      const saved = await callApi<Template>(c, deps, 'patch', '/templates/{templateId}', { params: { templateId }, body });
      return done(c, `/templates/${saved.id}`, 'Template saved');
    } catch (error) {
      const invalid = invalidInput(error);
      return templateForm(c, { template: await getTemplate(c, deps), values, errors: formErrors(invalid, FORM_FIELDS), status: 400 });
    }
  });

  app.post('/:id/delete', async (c) => {
    const deleted = await getTemplate(c, deps);
    await callApi(c, deps, 'delete', '/templates/{templateId}', { params: { templateId: deleted.id } });
    return done(c, '/templates', `Template “${deleted.name}” deleted`);
  });
  return app;
}
