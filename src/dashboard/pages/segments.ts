import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import { segmentContacts } from '../../services/segments.js';
import { callApi, callerOf } from '../api-call.js';
import { assertMayChange, formValues, mayChange } from '../forms.js';
import { actionButton, card, done, formError, heading, page, pager, table, time } from '../layout.js';
import type { DashboardEnv } from '../session.js';
import { breakableAddress, contactPath, fullName, PAGE_SIZE, pageNumberOf, statusBadge } from './contacts-book.js';
import { bookPath, getBook, type Book } from './contacts-common.js';
import {
  countTyped,
  countWords,
  filterText,
  mistakes,
  NEW_SEGMENT,
  parsedFilter,
  segmentErrors,
  segmentForm,
  segmentPath,
  segmentsPath,
  type Segment,
} from './segment-form.js';
import { filterInWords } from './segment-words.js';

type Ctx = Context<DashboardEnv>;

const SEGMENTS_ROUTE = '/contactBooks/{contactBookId}/segments';
const SEGMENT_ROUTE = '/contactBooks/{contactBookId}/segments/{segmentId}';

const getSegment = (c: Ctx, deps: AppDeps, bookId: string, segmentId: string) =>
  callApi<Segment>(c, deps, 'get', SEGMENT_ROUTE, { params: { contactBookId: bookId, segmentId } });

const deleteButton = (c: Ctx, segment: Segment) =>
  actionButton(c, `${segmentPath(segment.contactBookId, segment.id)}/delete`, 'Delete', {
    kind: 'danger',
    confirm: `Delete the segment “${segment.name}”? Its contacts stay in the book.`,
  });

/** A campaign form already set to the book and the segment. */
const campaignTo = (segment: Segment) => `/campaigns/new?${new URLSearchParams({ contactBookId: segment.contactBookId, segmentId: segment.id })}`;

async function listPage(c: Ctx, deps: AppDeps) {
  const book = await getBook(c, deps, c.req.param('bookId')!);
  const { data: segments } = await callApi<{ data: Segment[] }>(c, deps, 'get', SEGMENTS_ROUTE, { params: { contactBookId: book.id } });
  const path = segmentsPath(book.id);
  const changes = mayChange(c, 'audience');
  return page(c, {
    title: `Segments of ${book.name}`,
    section: 'Contacts',
    body: html`<p><a href="${bookPath(book.id)}">← ${book.emoji} ${book.name}</a></p>
${heading('Segments', changes ? html`<a class="button" href="${path}/new">New segment</a>` : undefined)}
<p class="muted">Saved filters over the book’s ${book._count.contacts.toLocaleString('en')} contact${book._count.contacts === 1 ? '' : 's'}: a campaign can go to one instead of the whole book. Counts are as of now.</p>
${table(
  segments,
  [
    {
      label: 'Segment',
      className: 'words',
      cell: (segment) => html`<a href="${segmentPath(book.id, segment.id)}" class="segment-name">${segment.name}</a><br><small class="muted">changed ${time(segment.updatedAt)}</small>`,
    },
    { label: 'Matches', className: 'num', cell: (segment) => html`<span class="segment-count">${segment.count.toLocaleString('en')}</span>` },
    ...(changes
      ? [{ label: 'Actions', cell: (segment: Segment) => html`<div class="row-actions"><a class="button secondary" href="${segmentPath(book.id, segment.id)}/edit">Edit</a>${deleteButton(c, segment)}</div>` }]
      : []),
  ],
  changes ? html`No segments yet. <a href="${path}/new">Make one</a> to send a campaign to part of this book.` : 'No segments yet.',
)}`,
  });
}

/** One segment: what it matches now, its filter in words, and the contacts it matches a page at a time. */
async function segmentPage(c: Ctx, deps: AppDeps, refused?: { message: string; status: ContentfulStatusCode }) {
  const book = await getBook(c, deps, c.req.param('bookId')!);
  const segment = await getSegment(c, deps, book.id, c.req.param('segmentId')!);
  const pageNumber = pageNumberOf(c);
  const { contacts, total } = await segmentContacts(deps, callerOf(c), { contactBookId: book.id, segmentId: segment.id, page: pageNumber, limit: PAGE_SIZE });
  const path = segmentPath(book.id, segment.id);
  const first = (pageNumber - 1) * PAGE_SIZE + 1;
  return page(c, {
    title: segment.name,
    section: 'Contacts',
    status: refused?.status,
    body: html`<link rel="stylesheet" href="/assets/segments.css"><p><a href="${segmentsPath(book.id)}">← Segments of ${book.emoji} ${book.name}</a></p>
${heading(
  segment.name,
  html`${mayChange(c, 'campaigns') ? html`<a class="button" href="${campaignTo(segment)}">Send a campaign</a>` : ''}${
    mayChange(c, 'audience') ? html`<a class="button secondary" href="${path}/edit">Edit</a>${deleteButton(c, segment)}` : ''
  }`,
)}
${formError(refused?.message)}
<div class="cards">${card('Match now', total.toLocaleString('en'), `of ${book._count.contacts.toLocaleString('en')} in ${book.emoji} ${book.name}`)}</div>
<section class="panel">
<h2>Filter</h2>
<div class="filter-words">${filterInWords(segment.filter)}</div>
<details><summary>As JSON</summary><pre>${filterText(segment.filter)}</pre></details>
<p class="hint">Created ${time(segment.createdAt)} · changed ${time(segment.updatedAt)}. A campaign to this segment mails the subscribed contacts it matches as each batch goes out.</p>
</section>
<h2>Contacts it matches</h2>
${contacts.length > 0 ? html`<p class="muted" data-summary>Showing ${first.toLocaleString('en')}–${(first + contacts.length - 1).toLocaleString('en')} of ${total.toLocaleString('en')}</p>` : ''}
${table(
  contacts,
  [
    {
      label: 'Contact',
      className: 'words',
      cell: (contact) => html`<a href="${contactPath(book.id, contact.id)}">${breakableAddress(contact.email)}</a>${fullName(contact) ? html`<br><small class="muted">${fullName(contact)}</small>` : ''}`,
    },
    { label: 'Status', cell: statusBadge },
  ],
  pageNumber > 1 ? html`No contacts on this page. <a href="${path}">Back to the first</a>` : 'No contact of the book matches this segment now.',
)}
${pager(path, {}, pageNumber, pageNumber * PAGE_SIZE < total)}`,
  });
}

/** Saves the form (or, for "Count matches", counts its filter without saving), re-shown with what was wrong. */
async function submit(c: Ctx, deps: AppDeps, book: Book, segment?: Segment) {
  // Refused before the filter is read, as the API would refuse the call.
  assertMayChange(c, 'audience');
  const form = await formValues(c);
  const values = { name: form.name ?? '', filter: form.filter ?? '' };
  try {
    if (form.intent === 'count') return segmentForm(c, book, { values, count: await countTyped(c, deps, book.id, values.filter) }, segment);
    const call = { params: { contactBookId: book.id, ...(segment && { segmentId: segment.id }) }, body: { name: values.name, filter: parsedFilter(values.filter) } };
    const saved = segment ? await callApi<Segment>(c, deps, 'patch', SEGMENT_ROUTE, call) : await callApi<Segment>(c, deps, 'post', SEGMENTS_ROUTE, call);
    return done(c, segmentPath(book.id, saved.id), `Segment “${saved.name}” saved: ${countWords(saved.count, book)}`);
  } catch (error) {
    return segmentForm(c, book, { values, errors: segmentErrors(error), status: 400 }, segment);
  }
}

/**
 * A book's segments, under its page: the list with their counts, making and editing one (with the
 * filter builder and its count), one segment with the contacts it matches, and deleting one. The
 * reads and changes are the API's own calls; counting a filter not yet saved is its service's.
 */
export function segmentPages(app: Hono<DashboardEnv>, deps: AppDeps) {
  app.get('/:bookId/segments', (c) => listPage(c, deps));

  app.get('/:bookId/segments/new', async (c) => {
    assertMayChange(c, 'audience');
    return segmentForm(c, await getBook(c, deps, c.req.param('bookId')), { values: NEW_SEGMENT });
  });

  app.post('/:bookId/segments/new', async (c) => submit(c, deps, await getBook(c, deps, c.req.param('bookId'))));

  // The builder's live count: JSON for segments.js, sent with the session's CSRF header.
  app.post('/:bookId/segments/count', async (c) => {
    const book = await getBook(c, deps, c.req.param('bookId'));
    const { filter } = await formValues(c);
    try {
      const count = await countTyped(c, deps, book.id, filter ?? '');
      return c.json({ count, text: countWords(count, book) });
    } catch (error) {
      return c.json({ errors: mistakes(error) }, 400);
    }
  });

  app.get('/:bookId/segments/:segmentId', (c) => segmentPage(c, deps));

  app.get('/:bookId/segments/:segmentId/edit', async (c) => {
    assertMayChange(c, 'audience');
    const book = await getBook(c, deps, c.req.param('bookId'));
    const segment = await getSegment(c, deps, book.id, c.req.param('segmentId'));
    return segmentForm(c, book, { values: { name: segment.name, filter: filterText(segment.filter) }, count: segment.count }, segment);
  });

  app.post('/:bookId/segments/:segmentId/edit', async (c) => {
    const book = await getBook(c, deps, c.req.param('bookId'));
    return submit(c, deps, book, await getSegment(c, deps, book.id, c.req.param('segmentId')));
  });

  app.post('/:bookId/segments/:segmentId/delete', async (c) => {
    const bookId = c.req.param('bookId');
    try {
      await callApi(c, deps, 'delete', SEGMENT_ROUTE, { params: { contactBookId: bookId, segmentId: c.req.param('segmentId') } });
    } catch (error) {
      // In use by a campaign not yet sent: said on the segment's page, which is kept.
      if (!(error instanceof ApiError) || error.code !== 'CONFLICT') throw error;
      return segmentPage(c, deps, { message: error.message, status: 409 });
    }
    return done(c, segmentsPath(bookId), 'Segment deleted');
  });

  return app;
}
