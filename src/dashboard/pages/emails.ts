import type { Context } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import { EMAIL_STATUSES, listEmailsQuery } from '../../api/emails.js';
import { ApiError, notFound } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import { parseInput } from '../../http/input.js';
import { emailExtras, SEARCH_WINDOW, searchEmails } from '../../services/email-search.js';
import { callApi, callerOf } from '../api-call.js';
import { actionButton, badge, copyable, csrfField, done, field, fieldErrors, formError, heading, page, pager, select, table, time, type Html } from '../layout.js';
import { correctable, formValues, mayChange } from '../forms.js';
import { section } from '../section.js';
import { mailBody, mailFrame } from './mail-content.js';
import type { DashboardEnv } from '../session.js';

type EmailEvent = { status: string; createdAt: string; data: Record<string, unknown> | null };
type Email = {
  id: string;
  from: string;
  to: string;
  cc: string | null;
  bcc: string | null;
  replyTo: string | null;
  subject: string;
  html: string | null;
  text: string | null;
  latestStatus: string;
  scheduledAt: string | null;
  createdAt: string;
  emailEvents: EmailEvent[];
};
type Domain = { id: number; name: string };
type Ctx = Context<DashboardEnv>;

// The API's own list filters (same names, same messages), plus the search box.
const filtersSchema = listEmailsQuery.omit({ limit: true }).extend({ q: z.string().optional() });
const FILTER_NAMES = ['q', 'status', 'domainId', 'startDate', 'endDate'] as const;
type Filters = Partial<Record<(typeof FILTER_NAMES)[number], string>>;

const DATE_ONLY = /^\d{4}-\d\d-\d\d$/;

/** The query string's filters as the schema takes them: blanks dropped, a date-only "to" meaning the whole day. */
function filterInput(query: Record<string, string>) {
  const given = Object.fromEntries(Object.entries(query).filter(([, value]) => value.trim() !== ''));
  if (given.endDate && DATE_ONLY.test(given.endDate)) given.endDate = `${given.endDate}T23:59:59.999Z`;
  return given;
}

const subjectText = (subject: string) => subject || html`<span class="muted">(no subject)</span>`;

/** Up to three addresses, then how many more. */
function recipients(addresses: readonly string[]) {
  const shown = addresses.slice(0, 3).join(', ');
  return addresses.length > 3 ? html`${shown} <span class="muted">+${addresses.length - 3} more</span>` : shown;
}

const LABELS: Record<string, string> = {
  response: 'SMTP reply', code: 'Reply code', url: 'URL', sourceIp: 'Source IP', userAgent: 'User agent',
  remoteMta: 'Remote MTA', reportingMta: 'Reporting MTA', nextAttemptAt: 'Next attempt', scheduledAt: 'Scheduled for',
  previousScheduledAt: 'Previously scheduled for',
};
/** "bounceType" as "Bounce type", or the label the key has above. */
const labelOf = (key: string) =>
  LABELS[key] ?? key.replace(/([a-z])([A-Z])/g, (_match, last: string, next: string) => `${last} ${next.toLowerCase()}`).replace(/^./, (first) => first.toUpperCase());

/** Any value of an event's data as plain text: lists joined, objects as "key: value". */
function readable(value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (Array.isArray(value)) return value.map(readable).join('; ');
  if (typeof value === 'object') return Object.entries(value).map(([key, item]) => `${labelOf(key)}: ${readable(item)}`).join(', ');
  return String(value);
}

const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d/;

/** An event's data, a line per field: the SMTP reply, the bounce's diagnostic, the clicked URL… */
function eventDetails(data: Record<string, unknown> | null) {
  const entries = Object.entries(data ?? {}).filter(([, value]) => value !== null && value !== undefined);
  if (entries.length === 0) return '';
  return html`<dl class="facts">${entries.map(
    ([key, value]) => html`<dt>${labelOf(key)}</dt><dd>${typeof value === 'string' && ISO_INSTANT.test(value) ? time(value) : readable(value)}</dd>`,
  )}</dl>`;
}

type Extras = Awaited<ReturnType<typeof emailExtras>>;

/** A titled part of the email's page. */
const part = (title: Html | string, body: Html | string) => html`<section><h2>${title}</h2>${body}</section>`;

/** The email's bodies: the HTML in the sandboxed frame and the text part, or why there are none. */
function content(deps: AppDeps, email: Email, extras: Extras): Html {
  if (extras.campaign) {
    return part('Content', html`<div class="empty">Campaign mail stores no body of its own: it is rendered from the campaign when sent. See
<a href="/campaigns/${extras.campaign.id}">${extras.campaign.name ?? 'the campaign'}</a>.</div>`);
  }
  if (extras.bodyDroppedAt) {
    return part('Content', html`<div class="empty">The body was dropped by retention on ${time(extras.bodyDroppedAt)} (mail keeps it ${deps.config.retentionDays} days); its facts and events stay.</div>`);
  }
  return html`${part(
    'HTML',
    email.html !== null
      ? mailFrame("The email's HTML", { src: `/emails/${email.id}/body` })
      : html`<div class="empty">This email has no HTML part.</div>`,
  )}${part('Text', email.text ? html`<pre class="email-text">${email.text}</pre>` : html`<div class="empty">This email has no text part.</div>`)}`;
}

type ScheduleForm = { errors?: Record<string, string>; scheduledAt?: string; status?: ContentfulStatusCode };

/** One email: its facts, what can still be done with it, its events and what it said. */
async function emailPage(c: Ctx, deps: AppDeps, emailId: string, form: ScheduleForm = {}) {
  const email = await callApi<Email>(c, deps, 'get', '/emails/{emailId}', { params: { emailId } });
  const extras = await emailExtras(deps, callerOf(c), { emailId });
  const errors = form.errors ?? {};
  const fact = (label: string, value: unknown) => html`<dt>${label}</dt><dd>${value ?? html`<span class="muted">—</span>`}</dd>`;
  const headers = Object.entries(extras.headers);
  const schedule = email.latestStatus === 'SCHEDULED' && mayChange(c, 'mail')
    ? part(
        html`Scheduled for ${time(email.scheduledAt)}`,
        html`<div class="panel"><form method="post" action="/emails/${email.id}/reschedule" class="stack">${csrfField(c)}
${field('scheduledAt', 'New send time', { value: form.scheduledAt, error: errors.scheduledAt, required: true, placeholder: 'tomorrow 9am', hint: `An ISO 8601 time, or words such as "in 2 hours" or "next monday 10:30", read in ${deps.config.scheduleTimeZone}.` })}
<div class="row-actions"><button type="submit">Reschedule</button></div>
</form>
<p>${actionButton(c, `/emails/${email.id}/cancel`, 'Cancel email', { kind: 'danger', confirm: 'Cancel this email? It will never be sent.' })}</p></div>`,
      )
    : '';
  return page(c, {
    title: email.subject || 'Email',
    section: 'Emails',
    status: form.status,
    body: html`<p><a href="/emails">← All emails</a></p>
${heading(email.subject || '(no subject)', badge(email.latestStatus))}
<p class="muted">Email ${copyable(email.id)}</p>
${formError(errors[''])}
${schedule}
<div class="grid-2">
${part('Facts', html`<div class="panel"><dl class="facts">
${fact('From', email.from)}
${fact('To', email.to || null)}
${fact('Cc', email.cc)}
${fact('Bcc', email.bcc)}
${fact('Reply-To', email.replyTo)}
${fact('Subject', email.subject || null)}
${fact('Status', badge(email.latestStatus))}
${fact('Created', time(email.createdAt))}
${fact('Scheduled', email.scheduledAt ? time(email.scheduledAt) : null)}
${fact('Campaign', extras.campaign ? html`<a href="/campaigns/${extras.campaign.id}">${extras.campaign.name ?? extras.campaign.id}</a>` : null)}
</dl></div>`)}
${part('Events', html`<div class="panel"><ol class="timeline">${email.emailEvents.map(
  (event) => html`<li>${badge(event.status)} ${time(event.createdAt)}${eventDetails(event.data)}</li>`,
)}</ol></div>`)}
</div>
${content(deps, email, extras)}
${part(
  'Header fields',
  headers.length > 0 ? html`<div class="panel"><dl class="facts">${headers.map(([name, value]) => fact(name, value))}</dl></div>` : html`<div class="empty">No custom header fields.</div>`,
)}`,
  });
}

/** Re-renders the email with a refused change's message next to its field (or above the form). */
async function refused(c: Ctx, deps: AppDeps, emailId: string, error: unknown, scheduledAt?: string) {
  return emailPage(c, deps, emailId, { ...correctable(error, ['scheduledAt']), scheduledAt });
}

/** The team's mail: search, filters, and one page of the list. */
async function listPage(c: Ctx, deps: AppDeps) {
  const query = c.req.query();
  const filters: Filters = Object.fromEntries(FILTER_NAMES.map((name) => [name, query[name]?.trim() || undefined]));
  const domains = await callApi<Domain[]>(c, deps, 'get', '/domains');
  const domainNames = new Map(domains.map((domain) => [domain.id, domain.name]));
  let errors: Record<string, string> = {};
  let result: Awaited<ReturnType<typeof searchEmails>> | null = null;
  let pageNumber = 1;
  try {
    const parsed = parseInput(filtersSchema, filterInput(query));
    pageNumber = parsed.page;
    result = await searchEmails(deps, callerOf(c), parsed);
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'VALIDATION_ERROR') throw error;
    errors = fieldErrors(error);
    // The select offers only statuses; one edited into the URL needs no list of them all.
    if (errors.status) errors.status = 'is not a status of an email';
  }
  const filtered = FILTER_NAMES.some((name) => filters[name]);
  const form = html`<form method="get" action="/emails" class="filters" role="search">
${field('q', 'Search', { type: 'search', value: filters.q, error: errors.q, placeholder: 'Subject or recipient' })}
${select('status', 'Status', [{ value: '', label: 'Any status' }, ...EMAIL_STATUSES.map((status) => ({ value: status, label: status }))], { value: filters.status, error: errors.status })}
${select('domainId', 'Domain', [{ value: '', label: 'All domains' }, ...domains.map((domain) => ({ value: String(domain.id), label: domain.name }))], { value: filters.domainId, error: errors.domainId })}
${field('startDate', 'From', { type: 'date', value: filters.startDate, error: errors.startDate })}
${field('endDate', 'To', { type: 'date', value: filters.endDate, error: errors.endDate })}
<div class="row-actions"><button type="submit">Filter</button>${filtered ? html`<a class="button secondary" href="/emails">Clear</a>` : ''}</div>
</form>`;
  const list = result
    ? html`${table(
        result.emails,
        [
          // Three columns, so that a phone shows the whole row: the subject over who it went to and from which domain.
          {
            label: 'Email',
            cell: (row) =>
              html`<a href="/emails/${row.id}" class="subject">${subjectText(row.subject)}</a><br><small class="muted"><span class="to">to ${recipients(row.recipients)}</span> · ${
                row.domainId === null ? 'deleted domain' : (domainNames.get(row.domainId) ?? row.domainId)
              }</small>`,
          },
          { label: 'Status', cell: (row) => badge(row.status) },
          {
            label: 'Created',
            cell: (row) => html`${time(row.createdAt)}${row.scheduledAt && row.status === 'SCHEDULED' ? html`<br><small class="muted">sends ${time(row.scheduledAt)}</small>` : ''}`,
          },
        ],
        filtered ? html`No emails match these filters. <a href="/emails">Show all emails</a>` : html`No emails yet. Mail sent with the API (POST /v1/emails) or over SMTP shows up here.`,
      )}
${result.olderUnread ? html`<p class="muted">Looked through the newest ${SEARCH_WINDOW.toLocaleString('en')} emails of these filters; set the dates to reach older mail.</p>` : ''}
${pager('/emails', filters, pageNumber, result.hasMore)}`
    : formError(errors.page ? `Page ${errors.page}` : (errors[''] ?? 'Fix the filters above to see the list.'));
  return page(c, {
    title: 'Emails',
    section: 'Emails',
    status: result ? 200 : 400,
    body: html`${heading('Emails')}${form}${list}`,
  });
}

/**
 * The team's emails: the list with search and filters, one email with its timeline and its body
 * in a sandboxed frame, and cancelling or rescheduling scheduled mail (through the API's routes).
 */
export function emailsPages(deps: AppDeps) {
  const app = section(deps, '/emails');

  app.get('/', (c) => listPage(c, deps));

  app.get('/:id', (c) => emailPage(c, deps, c.req.param('id')));

  app.get('/:id/body', async (c) => {
    const email = await callApi<Email>(c, deps, 'get', '/emails/{emailId}', { params: { emailId: c.req.param('id') } });
    if (email.html === null) throw notFound('HTML body');
    return mailBody(c, email.html);
  });

  app.post('/:id/cancel', async (c) => {
    const emailId = c.req.param('id');
    try {
      await callApi(c, deps, 'post', '/emails/{emailId}/cancel', { params: { emailId } });
    } catch (error) {
      return refused(c, deps, emailId, error);
    }
    return done(c, `/emails/${emailId}`, 'Email cancelled: it will not be sent');
  });

  app.post('/:id/reschedule', async (c) => {
    const emailId = c.req.param('id');
    const { scheduledAt = '' } = await formValues(c);
    try {
      await callApi(c, deps, 'patch', '/emails/{emailId}', { params: { emailId }, body: { scheduledAt } });
    } catch (error) {
      return refused(c, deps, emailId, error, scheduledAt);
    }
    return done(c, `/emails/${emailId}`, 'Email rescheduled');
  });

  return app;
}
