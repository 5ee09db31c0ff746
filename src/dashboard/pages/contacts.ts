import type { Context } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppDeps } from '../../http/deps.js';
import { callApi } from '../api-call.js';
import { csrfField, done, field, formError, heading, page, table, time } from '../layout.js';
import { assertMayChange, correctable, formValues, mayChange } from '../forms.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';
import { bookPages } from './contacts-book.js';
import { BOOK_ROUTE, bookPath, deleteBookButton, getBook, type Book, type Errors } from './contacts-common.js';
import { importPages } from './contacts-import.js';

type BookForm = { name?: string; emoji?: string; errors?: Errors; status?: ContentfulStatusCode };

async function booksPage(c: Context<DashboardEnv>, deps: AppDeps, form: BookForm = {}) {
  const books = await callApi<Book[]>(c, deps, 'get', '/contactBooks');
  const errors = form.errors ?? {};
  const changes = mayChange(c, 'audience');
  return page(c, {
    title: 'Contacts',
    section: 'Contacts',
    status: form.status,
    body: html`${heading('Contacts')}
${changes ? html`${formError(errors[''])}
<form method="post" action="/contacts" class="filters">${csrfField(c)}
${field('name', 'New contact book', { value: form.name, error: errors.name, required: true, placeholder: 'Newsletter readers' })}
<button type="submit">Create book</button>
</form>` : ''}
${table(
  books,
  [
    { label: 'Book', cell: (book) => html`<a href="${bookPath(book.id)}">${book.emoji} ${book.name}</a>` },
    { label: 'Contacts', cell: (book) => book._count.contacts.toLocaleString('en'), className: 'num' },
    { label: 'Created', cell: (book) => time(book.createdAt) },
    ...(changes
      ? [{ label: 'Actions', cell: (book: Book) => html`<div class="row-actions"><a class="button secondary" href="${bookPath(book.id)}/edit">Rename</a>${deleteBookButton(c, book)}</div>` }]
      : []),
  ],
  changes ? 'No contact books yet. Create one above, then add contacts or import a CSV file.' : 'No contact books yet.',
)}`,
  });
}

async function renamePage(c: Context<DashboardEnv>, book: Book, form: BookForm = {}) {
  const errors = form.errors ?? {};
  return page(c, {
    title: `Rename ${book.name}`,
    section: 'Contacts',
    status: form.status,
    body: html`<p><a href="${bookPath(book.id)}">← ${book.name}</a></p>
${heading('Rename contact book')}
<form method="post" action="${bookPath(book.id)}/edit" class="stack panel">${csrfField(c)}
${formError(errors[''])}
${field('name', 'Name', { value: form.name ?? book.name, error: errors.name, required: true })}
${field('emoji', 'Emoji', { value: form.emoji ?? book.emoji, error: errors.emoji, hint: 'Shown before the name in lists.' })}
<div class="row-actions"><button type="submit">Save</button><a class="button secondary" href="${bookPath(book.id)}">Cancel</a></div>
</form>`,
  });
}

/**
 * Contacts (/contacts): the team's contact books with create, rename and delete; one book's
 * contacts (contacts-book.ts) and its CSV import (contacts-import.ts). Everything goes through
 * the API's own routes, so the rules are the API's.
 */
export function contactsPages(deps: AppDeps) {
  const app = section(deps, '/contacts');

  app.get('/', (c) => booksPage(c, deps));

  app.post('/', async (c) => {
    const form = await formValues(c);
    try {
      const book = await callApi<Book>(c, deps, 'post', '/contactBooks', { body: { name: form.name ?? '' } });
      return done(c, bookPath(book.id), `Contact book "${book.name}" created`);
    } catch (error) {
      return booksPage(c, deps, { name: form.name, ...correctable(error, ['name']) });
    }
  });

  app.get('/:bookId/edit', async (c) => {
    assertMayChange(c, 'audience');
    return renamePage(c, await getBook(c, deps, c.req.param('bookId')));
  });

  app.post('/:bookId/edit', async (c) => {
    const book = await getBook(c, deps, c.req.param('bookId'));
    const form = await formValues(c);
    try {
      // An empty emoji field keeps the book's emoji rather than failing the form.
      const body = { name: form.name ?? '', ...(form.emoji?.trim() ? { emoji: form.emoji } : {}) };
      const saved = await callApi<Book>(c, deps, 'patch', BOOK_ROUTE, { params: { contactBookId: book.id }, body });
      return done(c, bookPath(book.id), `Contact book renamed to "${saved.name}"`);
    } catch (error) {
      return renamePage(c, book, { name: form.name, emoji: form.emoji, ...correctable(error, ['name', 'emoji']) });
    }
  });

  app.post('/:bookId/delete', async (c) => {
    const result = await callApi<{ message: string }>(c, deps, 'delete', BOOK_ROUTE, { params: { contactBookId: c.req.param('bookId') } });
    return done(c, '/contacts', result.message);
  });

  bookPages(app, deps);
  importPages(app, deps);
  return app;
}
