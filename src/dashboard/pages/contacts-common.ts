import type { Context } from 'hono';
import type { AppDeps } from '../../http/deps.js';
import { callApi } from '../api-call.js';
import { actionButton } from '../layout.js';
import type { DashboardEnv } from '../session.js';

export type Book = {
  id: string;
  name: string;
  emoji: string;
  doubleOptInEnabled: boolean;
  createdAt: string;
  _count: { contacts: number };
};

export type Contact = {
  id: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  subscribed: boolean;
  unsubscribeReason: 'UNSUBSCRIBED' | 'BOUNCED' | 'COMPLAINED' | null;
  createdAt: string;
};

export type Errors = Record<string, string>;

export const BOOK_ROUTE = '/contactBooks/{contactBookId}';

export const bookPath = (bookId: string) => `/contacts/${encodeURIComponent(bookId)}`;

/** The book as the API shows it to this person's team: another team's is a 404 like a missing one. */
export const getBook = (c: Context<DashboardEnv>, deps: AppDeps, bookId: string) => callApi<Book>(c, deps, 'get', BOOK_ROUTE, { params: { contactBookId: bookId } });

/** The delete button of a book, saying first how many contacts go with it. */
export const deleteBookButton = (c: Context<DashboardEnv>, book: Book) =>
  actionButton(c, `${bookPath(book.id)}/delete`, 'Delete', {
    kind: 'danger',
    confirm: `Delete the contact book "${book.name}" and its ${book._count.contacts.toLocaleString('en')} contacts? This cannot be undone.`,
  });
