import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppDeps } from '../../http/deps.js';
import { contactsCsv } from '../../services/contact-csv.js';
import { listContacts } from '../../services/contacts.js';
import { callApi, callerOf } from '../api-call.js';
import { actionButton, csrfField, done, field, formError, heading, page, pager, select, table, time } from '../layout.js';
import { assertMayChange, correctable, formValues, mayChange } from '../forms.js';
import type { DashboardEnv } from '../session.js';
import { bookPath, deleteBookButton, getBook, type Book, type Contact, type Errors } from './contacts-common.js';
import { segmentsPath } from './segment-form.js';

export const PAGE_SIZE = 50;
const MAX_SEARCH = 320;
// Far past any book's end; a larger page would overflow the database's offset.
const MAX_PAGE = 1_000_000;
const CONTACTS_ROUTE = '/contactBooks/{contactBookId}/contacts';
const CONTACT_ROUTE = '/contactBooks/{contactBookId}/contacts/{contactId}';

const STATUS_CHOICES = [
  { value: '', label: 'Any status' },
  { value: 'true', label: 'Subscribed' },
  { value: 'false', label: 'Not subscribed' },
] as const;

type Filter = { q: string; subscribed: '' | 'true' | 'false'; page: number };
type ContactValues = { email: string; firstName: string; lastName: string; subscribed: boolean };
type FormState = { values: ContactValues; errors?: Errors; status?: ContentfulStatusCode };

export const contactPath = (bookId: string, contactId: string) => `${bookPath(bookId)}/contacts/${encodeURIComponent(contactId)}`;
export const fullName = (contact: Contact) => [contact.firstName, contact.lastName].filter(Boolean).join(' ');

/** An address that may wrap before its @, so the row's buttons still fit a phone's width. */
export function breakableAddress(email: string) {
  const at = email.lastIndexOf('@');
  return html`${email.slice(0, at)}<wbr>${email.slice(at)}`;
}

export function statusBadge(contact: Contact) {
  const badge = (label: string, kind: string) => html`<span class="badge badge-${kind}">${label}</span>`;
  if (contact.subscribed) return badge('Subscribed', 'success');
  if (contact.unsubscribeReason === 'BOUNCED') return badge('Bounced', 'bounced');
  if (contact.unsubscribeReason === 'COMPLAINED') return badge('Complained', 'complained');
  if (contact.unsubscribeReason === 'UNSUBSCRIBED') return badge('Unsubscribed', 'paused');
  // Only a double opt-in contact that has not confirmed yet is unsubscribed without a reason.
  return badge('Awaiting confirmation', 'pending');
}

/** The page of a list of contacts the query asks for: 1 unless it names a page, never past MAX_PAGE. */
export const pageNumberOf = (c: Context<DashboardEnv>) => Math.min(MAX_PAGE, Math.max(1, Number.parseInt(c.req.query('page') ?? '', 10) || 1));

function filterOf(c: Context<DashboardEnv>): Filter {
  const subscribed = c.req.query('subscribed');
  return {
    // Postgres cannot take a NUL (nor a lone surrogate) in a query, and no stored name holds one.
    q: (c.req.query('q') ?? '').replace(/[\0\p{Cs}]/gu, '').trim().slice(0, MAX_SEARCH),
    subscribed: subscribed === 'true' || subscribed === 'false' ? subscribed : '',
    page: pageNumberOf(c),
  };
}

/** A page of the book's contacts: the API's own list service, with the dashboard's search by part of an address or name. */
async function contactsOf(c: Context<DashboardEnv>, deps: AppDeps, bookId: string, filter: Filter): Promise<{ contacts: Contact[]; total: number }> {
  const subscribed = filter.subscribed === '' ? undefined : filter.subscribed === 'true';
  return listContacts(deps, callerOf(c), { contactBookId: bookId, page: filter.page, limit: PAGE_SIZE, text: filter.q || undefined, subscribed });
}

/** Where a row's button sends the person back to: the list page they were on, never elsewhere. */
function backTo(form: Record<string, string>, bookId: string) {
  const base = bookPath(bookId);
  return form.back && (form.back === base || form.back.startsWith(`${base}?`)) ? form.back : base;
}

async function bookPage(c: Context<DashboardEnv>, deps: AppDeps) {
  const book = await getBook(c, deps, c.req.param('bookId')!);
  const filter = filterOf(c);
  const { contacts, total } = await contactsOf(c, deps, book.id, filter);
  const path = bookPath(book.id);
  const url = new URL(c.req.url);
  const back = { back: url.pathname + url.search };
  const filtered = filter.q !== '' || filter.subscribed !== '';
  const first = (filter.page - 1) * PAGE_SIZE + 1;
  const changes = mayChange(c, 'audience');
  const segments = html`<a class="button secondary" href="${segmentsPath(book.id)}">Segments</a>`;
  const exported = html`<a class="button secondary" href="${path}/export.csv" download>Export CSV</a>`;
  const empty = filtered
    ? html`No contact matches this search. <a href="${path}">Show all contacts</a>`
    : changes
      ? html`This book has no contacts yet. <a href="${path}/new">Add one</a> or <a href="${path}/import">import a CSV file</a>.`
      : 'This book has no contacts yet.';
  return page(c, {
    title: book.name,
    section: 'Contacts',
    body: html`<p><a href="/contacts">← Contact books</a></p>
${heading(
  `${book.emoji} ${book.name}`,
  changes
    ? html`<a class="button" href="${path}/new">Add contact</a>${segments}<a class="button secondary" href="${path}/import">Import CSV</a>${exported}<a class="button secondary" href="${path}/edit">Rename</a>${deleteBookButton(c, book)}`
    : html`${segments}${exported}`,
)}
<p class="muted">${book._count.contacts.toLocaleString('en')} contact${book._count.contacts === 1 ? '' : 's'} · created ${time(book.createdAt)}${
      book.doubleOptInEnabled ? ' · double opt-in: new contacts are subscribed once they confirm' : ''
    }</p>
<form method="get" action="${path}" class="filters" role="search">
${field('q', 'Search', { type: 'search', value: filter.q, placeholder: 'Address or name' })}
${select('subscribed', 'Status', STATUS_CHOICES, { value: filter.subscribed })}
<button type="submit" class="secondary">Search</button>${filtered ? html`<a class="button secondary" href="${path}">Clear</a>` : ''}
</form>
${contacts.length > 0 ? html`<p class="muted" data-summary>Showing ${first.toLocaleString('en')}–${(first + contacts.length - 1).toLocaleString('en')} of ${total.toLocaleString('en')}</p>` : ''}
${table(
  contacts,
  [
    {
      label: 'Contact',
      cell: (contact) => html`<a href="${contactPath(book.id, contact.id)}">${breakableAddress(contact.email)}</a>${fullName(contact) ? html`<br><small class="muted">${fullName(contact)}</small>` : ''}`,
    },
    { label: 'Status', cell: statusBadge },
    ...(changes ? [{ label: 'Actions', cell: (contact: Contact) => rowActions(c, book, contact, back) }] : []),
  ],
  empty,
)}
${pager(path, { q: filter.q, subscribed: filter.subscribed }, filter.page, filter.page * PAGE_SIZE < total)}`,
  });
}

const rowActions = (c: Context<DashboardEnv>, book: Book, contact: Contact, back: Record<string, string>) =>
  html`<div class="row-actions">${
    contact.subscribed ? actionButton(c, `${contactPath(book.id, contact.id)}/unsubscribe`, 'Unsubscribe', { kind: 'secondary', fields: back }) : ''
  }${actionButton(c, `${contactPath(book.id, contact.id)}/delete`, 'Delete', { kind: 'danger', confirm: `Delete ${contact.email} from this book?`, fields: back })}</div>`;

/** A contact as a role that may not change it reads it: its facts, without the form. */
function contactFacts(c: Context<DashboardEnv>, book: Book, contact: Contact) {
  return page(c, {
    title: contact.email,
    section: 'Contacts',
    body: html`<p><a href="${bookPath(book.id)}">← ${book.emoji} ${book.name}</a></p>
${heading(contact.email)}
<div class="panel"><dl class="facts">
<dt>Name</dt><dd>${fullName(contact) || html`<span class="muted">—</span>`}</dd>
<dt>Status</dt><dd>${statusBadge(contact)}</dd>
<dt>Added</dt><dd>${time(contact.createdAt)}</dd>
</dl></div>`,
  });
}

function contactPage(c: Context<DashboardEnv>, book: Book, form: FormState, contact?: Contact) {
  const path = bookPath(book.id);
  const errors = form.errors ?? {};
  const { values } = form;
  const title = contact ? 'Edit contact' : 'Add contact';
  const awaiting = contact !== undefined && !contact.subscribed && contact.unsubscribeReason === null;
  const subscribedHint =
    book.doubleOptInEnabled && (!contact || awaiting)
      ? 'This book uses double opt-in: a new contact is subscribed once they confirm the email we send them, whatever this box says.'
      : 'Unticked, no campaign of this book mails them.';
  return page(c, {
    title,
    section: 'Contacts',
    status: form.status,
    body: html`<p><a href="${path}">← ${book.emoji} ${book.name}</a></p>
${heading(title)}
${contact ? html`<p class="muted">${statusBadge(contact)} · added ${time(contact.createdAt)}</p>` : ''}
<form method="post" action="${contact ? contactPath(book.id, contact.id) : `${path}/new`}" class="stack panel">${csrfField(c)}
${formError(errors[''])}
${field('email', 'Email', { type: 'email', value: values.email, error: errors.email, required: true, placeholder: 'ada@example.com' })}
<div class="grid-2">
${field('firstName', 'First name', { value: values.firstName, error: errors.firstName })}
${field('lastName', 'Last name', { value: values.lastName, error: errors.lastName })}
</div>
<div class="field${errors.subscribed ? ' has-error' : ''}">
<label class="check"><input type="checkbox" name="subscribed" value="true"${values.subscribed ? html` checked` : ''}> Subscribed</label>
<small class="hint">${subscribedHint}</small>
${errors.subscribed ? html`<small class="error">${errors.subscribed}</small>` : ''}
</div>
<div class="row-actions"><button type="submit">${contact ? 'Save contact' : 'Add contact'}</button><a class="button secondary" href="${path}">Cancel</a></div>
</form>`,
  });
}

const CONTACT_FIELDS = ['email', 'firstName', 'lastName', 'subscribed'];

const valuesOf = (form: Record<string, string>): ContactValues => ({
  email: form.email ?? '',
  firstName: form.firstName ?? '',
  lastName: form.lastName ?? '',
  subscribed: form.subscribed === 'true',
});

// The form shows the whole contact, so an emptied name clears it.
const bodyOf = (values: ContactValues) => ({
  email: values.email,
  firstName: values.firstName.trim() || null,
  lastName: values.lastName.trim() || null,
  subscribed: values.subscribed,
});

const valuesOfContact = (contact: Contact): ContactValues => ({
  email: contact.email,
  firstName: contact.firstName ?? '',
  lastName: contact.lastName ?? '',
  subscribed: contact.subscribed,
});

/** One book: its contacts with search and pages, adding, editing, unsubscribing and deleting one, and the CSV export. */
export function bookPages(app: Hono<DashboardEnv>, deps: AppDeps) {
  const contactOf = (c: Context<DashboardEnv>, bookId: string) =>
    callApi<Contact>(c, deps, 'get', CONTACT_ROUTE, { params: { contactBookId: bookId, contactId: c.req.param('contactId')! } });

  app.get('/:bookId', (c) => bookPage(c, deps));

  app.get('/:bookId/new', async (c) => {
    assertMayChange(c, 'audience');
    const book = await getBook(c, deps, c.req.param('bookId'));
    return contactPage(c, book, { values: { email: '', firstName: '', lastName: '', subscribed: true } });
  });

  app.post('/:bookId/new', async (c) => {
    const book = await getBook(c, deps, c.req.param('bookId'));
    const values = valuesOf(await formValues(c));
    try {
      await callApi(c, deps, 'post', CONTACTS_ROUTE, { params: { contactBookId: book.id }, body: bodyOf(values) });
      return done(c, bookPath(book.id), `Saved ${values.email.trim()}`);
    } catch (error) {
      return contactPage(c, book, { values, ...correctable(error, CONTACT_FIELDS, 'email') });
    }
  });

  app.get('/:bookId/contacts/:contactId', async (c) => {
    const book = await getBook(c, deps, c.req.param('bookId'));
    const contact = await contactOf(c, book.id);
    if (!mayChange(c, 'audience')) return contactFacts(c, book, contact);
    return contactPage(c, book, { values: valuesOfContact(contact) }, contact);
  });

  app.post('/:bookId/contacts/:contactId', async (c) => {
    const book = await getBook(c, deps, c.req.param('bookId'));
    const contact = await contactOf(c, book.id);
    const values = valuesOf(await formValues(c));
    try {
      await callApi(c, deps, 'patch', CONTACT_ROUTE, { params: { contactBookId: book.id, contactId: contact.id }, body: bodyOf(values) });
      return done(c, bookPath(book.id), `Saved ${values.email.trim()}`);
    } catch (error) {
      return contactPage(c, book, { values, ...correctable(error, CONTACT_FIELDS, 'email') }, contact);
    }
  });

  app.post('/:bookId/contacts/:contactId/unsubscribe', async (c) => {
    const bookId = c.req.param('bookId');
    await callApi(c, deps, 'patch', CONTACT_ROUTE, { params: { contactBookId: bookId, contactId: c.req.param('contactId') }, body: { subscribed: false } });
    return done(c, backTo(await formValues(c), bookId), 'Contact unsubscribed');
  });

  app.post('/:bookId/contacts/:contactId/delete', async (c) => {
    const bookId = c.req.param('bookId');
    await callApi(c, deps, 'delete', CONTACT_ROUTE, { params: { contactBookId: bookId, contactId: c.req.param('contactId') } });
    return done(c, backTo(await formValues(c), bookId), 'Contact deleted');
  });

  app.get('/:bookId/export.csv', async (c) => {
    const book = await getBook(c, deps, c.req.param('bookId'));
    const pages = await contactsCsv(deps, callerOf(c), { contactBookId: book.id });
    const encoder = new TextEncoder();
    // Pulled a page at a time as the download drains it: the book is never held in memory.
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await pages.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      },
      async cancel() {
        await pages.return(undefined);
      },
    });
    const fileName = `${book.name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '') || 'contacts'}.csv`;
    return c.body(body, 200, { 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="${fileName}"` });
  });
}
