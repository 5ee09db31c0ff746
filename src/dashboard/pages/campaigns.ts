import type { Context } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import { campaignTimeline, type CampaignTimeline } from '../../services/campaign-timeline.js';
import type { toCampaign } from '../../services/campaigns.js';
import type { toContactBook } from '../../services/contact-books.js';
import { segmentNames } from '../../services/segments.js';
import type { toTemplate } from '../../services/templates.js';
import { callApi, callerOf } from '../api-call.js';
import { actionButton, badge, card, CHART_COLOURS, copyable, csrfField, done, field, formError, heading, lineChart, page, pager, progress, select, table, textArea, time, type Html } from '../layout.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';
import { assertMayChange, formErrors, formValues, given, invalidInput, mayChange, senderField, verifiedDomains, type FormErrors } from '../forms.js';
import { mailBody, mailFrame } from './mail-content.js';
import { segmentPath, type Segment } from './segment-form.js';

type Campaign = ReturnType<typeof toCampaign>;
type Template = ReturnType<typeof toTemplate>;
type Book = ReturnType<typeof toContactBook> & { _count: { contacts: number } };
type C = Context<DashboardEnv>;
type SegmentName = Awaited<ReturnType<typeof segmentNames>>[number];

const STATUSES = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'SENT'] as const;
const FORM_FIELDS = ['name', 'from', 'contactBookId', 'segmentId', 'subject', 'html', 'previewText', 'scheduledAt', 'batchSize', 'batchWindowMinutes'] as const;
const WHEN = [
  { value: 'draft', label: 'Save as a draft' },
  { value: 'now', label: 'Send now' },
  { value: 'later', label: 'Send at a time' },
] as const;

// The counters as cards, each with its share of what it is a share of: reaching the inbox of the
// recipients, what readers did of the mail delivered.
const COUNTERS = [
  ['total', 'Recipients', null],
  ['sent', 'Sent', 'total'],
  ['delivered', 'Delivered', 'total'],
  ['opened', 'Opened', 'delivered'],
  ['clicked', 'Clicked', 'delivered'],
  ['unsubscribed', 'Unsubscribed', 'delivered'],
  ['bounced', 'Bounced', 'total'],
  ['hardBounced', 'Hard bounced', 'total'],
  ['complained', 'Complained', 'delivered'],
] as const;
const BASES = { total: 'recipients', delivered: 'delivered' } as const;

// The chart's lines: a timeline kind and its label.
const LINES = [
  ['sent', 'Sent'],
  ['delivered', 'Delivered'],
  ['opened', 'Opened'],
  ['clicked', 'Clicked'],
  ['bounced', 'Bounced'],
  ['hard_bounced', 'Hard bounced'],
  ['complained', 'Complained'],
] as const;

/** The state moves a campaign page offers, each one API call. */
const MOVES = {
  pause: { path: '/campaigns/{campaignId}/pause', notice: 'Campaign paused: no more of its mail goes out until you resume it' },
  resume: { path: '/campaigns/{campaignId}/resume', notice: 'Campaign resumed' },
  send: { path: '/campaigns/{campaignId}/schedule', notice: 'Campaign scheduled to send now' },
} as const;

const count = (n: number) => n.toLocaleString('en');

function listPage(deps: AppDeps) {
  return async (c: C) => {
    const query = { search: c.req.query('search') || undefined, status: c.req.query('status') || undefined };
    const pageNumber = c.req.query('page') ?? '1';
    const list = await callApi<{ campaigns: Campaign[]; totalPage: number }>(c, deps, 'get', '/campaigns', { query: { ...query, page: pageNumber } });
    const current = Number(pageNumber);
    const filtered = !!(query.search || query.status);
    const creates = mayChange(c, 'campaigns');
    return page(c, {
      title: 'Campaigns',
      section: 'Campaigns',
      body: html`${heading('Campaigns', creates ? html`<a class="button" href="/campaigns/new">New campaign</a>` : undefined)}
<form class="filters" method="get" action="/campaigns" role="search">
${field('search', 'Search', { type: 'search', value: query.search, placeholder: 'Name or subject' })}
${select('status', 'Status', [{ value: '', label: 'All statuses' }, ...STATUSES.map((status) => ({ value: status, label: status }))], { value: query.status })}
<button type="submit" class="secondary">Filter</button>
</form>
${table(
  list.campaigns,
  [
    { label: 'Campaign', cell: (row) => html`<a href="/campaigns/${row.id}">${row.name}</a><br><small class="muted">${row.subject}</small>` },
    { label: 'Status', cell: (row) => badge(row.status) },
    { label: 'Progress', cell: (row) => progress(row.sent, row.total) },
    { label: 'Scheduled', cell: (row) => time(row.scheduledAt) },
    { label: 'Created', cell: (row) => time(row.createdAt) },
  ],
  filtered
    ? html`No campaign matches these filters. <a href="/campaigns">Show all campaigns</a>`
    : creates
      ? html`No campaigns yet. <a href="/campaigns/new">Create the first one</a> to mail a contact book.`
      : 'No campaigns yet.',
)}
${pager('/campaigns', query, current, current < list.totalPage)}`,
    });
  };
}

/**
 * The segments to choose from, under their books; segments.js shows only the chosen book's (without
 * it, a segment of another book is refused next to this field).
 */
function segmentField(books: Book[], segments: SegmentName[], value: string | undefined, error: string | undefined) {
  const groups = books.map((book) => ({ book, segments: segments.filter((segment) => segment.contactBookId === book.id) })).filter((group) => group.segments.length > 0);
  return html`<div class="field${error ? ' has-error' : ''}">
<label for="f-segmentId">Segment</label>
<select id="f-segmentId" name="segmentId" data-segment-picker="f-contactBookId"${error ? html` aria-invalid="true"` : ''}>
<option value="">The whole book</option>
${groups.map(
  ({ book, segments: ofBook }) =>
    html`<optgroup label="${book.emoji} ${book.name}" data-book="${book.id}">${ofBook.map(
      (segment) => html`<option value="${segment.id}"${segment.id === value ? html` selected` : ''}>${segment.name}</option>`,
    )}</optgroup>`,
)}
</select>
<small class="hint">The book’s subscribed contacts the segment matches as each batch goes out. Make segments on a contact book’s page.</small>
${error ? html`<small class="error">${error}</small>` : ''}
</div>`;
}

/** The new-campaign page: a template picker that fills the form, the form, and the preview frame beside it. */
async function newCampaignPage(c: C, deps: AppDeps, options: { values: Record<string, string>; errors?: FormErrors; status?: ContentfulStatusCode }) {
  const { values, status } = options;
  const errors = options.errors?.fields ?? {};
  const [books, templates, verified] = await Promise.all([
    callApi<Book[]>(c, deps, 'get', '/contactBooks'),
    callApi<{ data: Template[] }>(c, deps, 'get', '/templates', { query: { limit: '100' } }),
    verifiedDomains(c, deps),
  ]);
  const segments = await segmentNames(deps, callerOf(c), { contactBookIds: books.map((book) => book.id) });
  // The template picker keeps the book and segment a segment's page sent the person here with.
  const chosen = (['contactBookId', 'segmentId'] as const).filter((name) => values[name]).map((name) => html`<input type="hidden" name="${name}" value="${values[name]}">`);
  const templatePicker = templates.data.length || errors.templateId
    ? html`<form class="filters panel" method="get" action="/campaigns/new">${chosen}
${select('templateId', 'Template', [{ value: '', label: 'Choose a template' }, ...templates.data.map((t) => ({ value: t.id, label: t.name }))], { value: values.templateId, error: errors.templateId })}
<button type="submit" class="secondary">Use template</button>
</form>`
    : html`<p class="muted">No templates yet: write the HTML below, or <a href="/templates/new">make a template</a> to start from.</p>`;
  return page(c, {
    title: 'New campaign',
    section: 'Campaigns',
    status,
    body: html`<script src="/assets/segments.js" defer></script>${heading('New campaign')}
<div class="grid-2">
<div>
${templatePicker}
<form class="stack panel" method="post" action="/campaigns/new">
${csrfField(c)}
${formError(options.errors?.form)}
${field('name', 'Name', { value: values.name, error: errors.name, required: true, hint: 'For your team’s eyes: recipients never see it.' })}
${senderField({ value: values.from, error: errors.from, verified, name: 'News', local: 'news' })}
${select('contactBookId', 'Contact book', [{ value: '', label: 'Choose a contact book' }, ...books.map((book) => ({ value: book.id, label: `${book.emoji} ${book.name} (${count(book._count.contacts)} ${book._count.contacts === 1 ? 'contact' : 'contacts'})` }))], {
  value: values.contactBookId,
  error: errors.contactBookId,
})}
${segmentField(books, segments, values.segmentId, errors.segmentId)}
${field('subject', 'Subject', { value: values.subject, error: errors.subject, required: true, hint: 'May use {{firstName}}, {{lastName}}, {{email}} and the book’s variables.' })}
${textArea('html', 'HTML', { value: values.html, error: errors.html, rows: 14, hint: 'Must contain the unsubscribe link {{unsubscribeUrl}}.' })}
${field('previewText', 'Preview text', { value: values.previewText, error: errors.previewText, hint: 'The line mail clients show after the subject; may be empty.' })}
${select('when', 'When to send', WHEN, { value: values.when ?? 'draft' })}
${field('scheduledAt', 'Send at', { value: values.scheduledAt, error: errors.scheduledAt, placeholder: 'tomorrow 9am', hint: `For “Send at a time”: ISO 8601, or words like “tomorrow 9am”, “next monday 10:30”, “in 2 hours” (${deps.config.scheduleTimeZone}).` })}
${field('batchSize', 'Batch size', { type: 'number', value: values.batchSize, error: errors.batchSize, placeholder: '500', attrs: html`min="1" max="100000"`, hint: 'Contacts released at a time; empty for 500.' })}
${field('batchWindowMinutes', 'Minutes between batches', { type: 'number', value: values.batchWindowMinutes, error: errors.batchWindowMinutes, placeholder: '0', attrs: html`min="0" max="1440"`, hint: 'Empty or 0: the batches go as fast as delivery allows.' })}
<div class="row-actions">
<button type="submit">Create campaign</button>
<button type="submit" class="secondary" formaction="/campaigns/preview" formtarget="preview" formnovalidate>Preview</button>
</div>
</form>
</div>
<section class="panel">
<h2>Preview</h2>
${mailFrame('Preview of the campaign’s HTML', { name: 'preview' })}
<p class="hint">Press Preview to see the HTML above as a mail client shows it. Scripts in it never run here.</p>
</section>
</div>`,
  });
}

/** The form as the create call's body: numbers as numbers, the schedule as sendNow or scheduledAt. */
function createBody(values: Record<string, string>) {
  return {
    name: values.name ?? '',
    from: values.from ?? '',
    subject: values.subject ?? '',
    contactBookId: values.contactBookId ?? '',
    segmentId: given(values.segmentId),
    html: given(values.html),
    previewText: given(values.previewText),
    sendNow: values.when === 'now' ? true : undefined,
    // "At a time" with none given is sent empty, so the API says the field must not be.
    scheduledAt: values.when === 'later' ? (values.scheduledAt ?? '') : undefined,
    batchSize: given(values.batchSize) === undefined ? undefined : Number(values.batchSize),
    batchWindowMinutes: given(values.batchWindowMinutes) === undefined ? undefined : Number(values.batchWindowMinutes),
  };
}

/** The campaign's counters over time as a Chart.js line chart, or a word on why there is none yet. */
function timelineChart(timeline: CampaignTimeline): Html {
  if (timeline.points.length === 0) return html`<div class="empty">Nothing has been sent yet: the chart starts with the first mail out.</div>`;
  const label = (at: Date) => (timeline.unit === 'hour' ? `${at.toISOString().slice(0, 13).replace('T', ' ')}:00` : at.toISOString().slice(0, 10));
  const lines = LINES.map(([kind, name]) => ({ label: name, colour: CHART_COLOURS[kind], data: timeline.points.map((point) => point[kind]) }));
  return html`<div class="panel">
${lineChart('campaign-chart', `The campaign's counters per ${timeline.unit}`, timeline.points.map((point) => label(point.at)), lines)}
<p class="hint">Emails counted per ${timeline.unit} (UTC), each once per kind as the counters count them. Unsubscribes are counted without a time, so only their card shows them.</p>
</div>`;
}

function batches(campaign: Campaign) {
  const size = `${count(campaign.batchSize)} contacts at a time`;
  return campaign.batchWindowMinutes === 0 ? `${size}, as fast as delivery allows` : `${size}, every ${count(campaign.batchWindowMinutes)} minutes`;
}

function campaignPage(deps: AppDeps) {
  return async (c: C) => {
    const campaignId = c.req.param('id')!;
    const campaign = await callApi<Campaign>(c, deps, 'get', '/campaigns/{campaignId}', { params: { campaignId } });
    const { contactBookId, segmentId } = campaign;
    const [timeline, book, segment] = await Promise.all([
      campaignTimeline(deps, callerOf(c), { campaignId }),
      contactBookId ? callApi<Book>(c, deps, 'get', '/contactBooks/{contactBookId}', { params: { contactBookId } }) : null,
      contactBookId && segmentId ? callApi<Segment>(c, deps, 'get', '/contactBooks/{contactBookId}/segments/{segmentId}', { params: { contactBookId, segmentId } }) : null,
    ]);
    const base = `/campaigns/${campaign.id}`;
    const actions = !mayChange(c, 'campaigns') ? undefined : html`${campaign.status === 'DRAFT' ? actionButton(c, `${base}/send`, 'Send now', { confirm: `Send “${campaign.name}” to ${segment ? `the segment “${segment.name}”` : 'its contact book'} now?` }) : ''}
${campaign.status === 'SCHEDULED' || campaign.status === 'RUNNING' ? actionButton(c, `${base}/pause`, 'Pause', { kind: 'secondary' }) : ''}
${campaign.status === 'PAUSED' ? actionButton(c, `${base}/resume`, 'Resume') : ''}
${actionButton(c, `${base}/delete`, 'Delete', { kind: 'danger', confirm: `Delete “${campaign.name}”? Its mail not yet sent is cancelled.` })}`;
    const share = (n: number, base: keyof typeof BASES) => (campaign[base] === 0 ? '' : `${Number(((n * 100) / campaign[base]).toFixed(1))}% of ${BASES[base]}`);
    return page(c, {
      title: campaign.name,
      section: 'Campaigns',
      body: html`<p><a href="/campaigns">← Campaigns</a></p>
${heading(campaign.name, actions)}
${campaign.pausedReason ? html`<p class="form-error" role="alert"><strong>Paused by the reputation guard:</strong> ${campaign.pausedReason}</p>` : ''}
<div class="panel">${badge(campaign.status)} ${progress(campaign.sent, campaign.total)}</div>
<div class="cards">${COUNTERS.map(
  ([key, label, base]) =>
    card(label, count(campaign[key]), base ? share(campaign[key], base) : undefined),
)}</div>
<h2>Over time</h2>
${timelineChart(timeline)}
<div class="grid-2">
<section class="panel">
<h2>Details</h2>
<dl class="facts">
<dt>Status</dt><dd>${badge(campaign.status)}</dd>
<dt>From</dt><dd>${campaign.from}</dd>
<dt>Subject</dt><dd>${campaign.subject}</dd>
<dt>Preview text</dt><dd>${campaign.previewText || html`<span class="muted">—</span>`}</dd>
<dt>Contact book</dt><dd>${book ? `${book.emoji} ${book.name}` : html`<span class="muted">deleted</span>`}</dd>
<dt>Segment</dt><dd>${segment ? html`<a href="${segmentPath(segment.contactBookId, segment.id)}">${segment.name}</a> <small class="muted">(${count(segment.count)} match now)</small>` : html`<span class="muted">${book ? 'none: the whole book' : '—'}</span>`}</dd>
<dt>Scheduled</dt><dd>${time(campaign.scheduledAt)}</dd>
<dt>Batches</dt><dd>${batches(campaign)}</dd>
<dt>Created</dt><dd>${time(campaign.createdAt)}</dd>
<dt>Updated</dt><dd>${time(campaign.updatedAt)}</dd>
<dt>ID</dt><dd>${copyable(campaign.id)}</dd>
</dl>
</section>
<section class="panel">
<h2>Email</h2>
${mailFrame('The campaign’s HTML', { src: `${base}/body` })}
</section>
</div>`,
    });
  };
}

/**
 * Campaigns: the list with filters, a new campaign (from a template or HTML, previewed in a
 * sandboxed frame), and one campaign with its counters, their chart and its state moves. Every
 * read and change is the API's own call as the person's team.
 */
export function campaignsPages(deps: AppDeps) {
  const app = section(deps, '/campaigns');
  app.get('/', listPage(deps));

  app.get('/new', async (c) => {
    assertMayChange(c, 'campaigns');
    const templateId = c.req.query('templateId');
    // A segment's "Send a campaign" link names its book and itself.
    const audience = { contactBookId: c.req.query('contactBookId') ?? '', segmentId: c.req.query('segmentId') ?? '' };
    if (!templateId) return newCampaignPage(c, deps, { values: audience });
    try {
      const template = await callApi<Template>(c, deps, 'get', '/templates/{templateId}', { params: { templateId } });
      return newCampaignPage(c, deps, { values: { ...audience, templateId, subject: template.subject, html: template.html ?? '' } });
    } catch (error) {
      if (!(error instanceof ApiError) || (error.code !== 'NOT_FOUND' && error.code !== 'VALIDATION_ERROR')) throw error;
      return newCampaignPage(c, deps, { values: audience, errors: { fields: { templateId: 'No such template in this team' } }, status: 404 });
    }
  });

  app.post('/new', async (c) => {
    const values = await formValues(c);
    try {
      const created = await callApi<Campaign>(c, deps, 'post', '/campaigns', { body: createBody(values) });
      return done(c, `/campaigns/${created.id}`, created.status === 'DRAFT' ? 'Campaign saved as a draft' : 'Campaign scheduled');
    } catch (error) {
      return newCampaignPage(c, deps, { values, errors: formErrors(invalidInput(error), FORM_FIELDS), status: 400 });
    }
  });

  app.post('/preview', async (c) => {
    const values = await formValues(c);
    return mailBody(c, values.html || '<p style="font-family:sans-serif;color:#667085">Nothing to preview yet: write the HTML, or start from a template.</p>');
  });

  app.get('/:id', campaignPage(deps));

  app.get('/:id/body', async (c) => {
    const campaign = await callApi<Campaign>(c, deps, 'get', '/campaigns/{campaignId}', { params: { campaignId: c.req.param('id') } });
    return mailBody(c, campaign.html ?? '');
  });

  app.post('/:id/:move{pause|resume|send}', async (c) => {
    const campaignId = c.req.param('id');
    const move = MOVES[c.req.param('move') as keyof typeof MOVES];
    await callApi(c, deps, 'post', move.path, { params: { campaignId }, body: {} });
    return done(c, `/campaigns/${campaignId}`, move.notice);
  });

  app.post('/:id/delete', async (c) => {
    const deleted = await callApi<Campaign>(c, deps, 'delete', '/campaigns/{campaignId}', { params: { campaignId: c.req.param('id') } });
    return done(c, '/campaigns', `Campaign “${deleted.name}” deleted`);
  });
  return app;
}
