import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import type { Caller } from '../../services/caller.js';
import { callApi } from '../api-call.js';
import { actionButton, fieldErrors } from '../layout.js';
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

/** The signed-in person as a service's caller: the whole team, as a full-permission key. */
export const callerOf = (c: Context<DashboardEnv>): Caller => ({ teamId: c.get('user').teamId, domainId: null });

/** A posted form's text fields. */
export async function formOf(c: Context<DashboardEnv>): Promise<Record<string, string>> {
  const body = await c.req.parseBody();
  return Object.fromEntries(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/**
 * Why a form was refused, by field, and the status to show it again with; a conflict (an address
 * another contact has) belongs to `conflictField`. Anything else is not the form's fault and goes on up.
 */
export function refusal(error: unknown, conflictField = ''): { errors: Errors; status: ContentfulStatusCode } {
  if (!(error instanceof ApiError)) throw error;
  const status = error.status as ContentfulStatusCode;
  if (error.code === 'CONFLICT') return { errors: { [conflictField]: error.message }, status };
  if (error.code === 'VALIDATION_ERROR' || error.code === 'BAD_REQUEST') return { errors: fieldErrors(error), status };
  throw error;
}

/** The delete button of a book, saying first how many contacts go with it. */
export const deleteBookButton = (c: Context<DashboardEnv>, book: Book) =>
  actionButton(c, `${bookPath(book.id)}/delete`, 'Delete', {
    kind: 'danger',
    confirm: `Delete the contact book "${book.name}" and its ${book._count.contacts.toLocaleString('en')} contacts? This cannot be undone.`,
  });
