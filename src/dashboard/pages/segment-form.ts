import type { Context } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import { filterSchema } from '../../audience/segment-filter.js';
import type { ErrorDetail } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import { parseInput } from '../../http/input.js';
import { countFilter } from '../../services/segments.js';
import { validationError } from '../../validation.js';
import { callerOf } from '../api-call.js';
import { invalidInput } from '../forms.js';
import { csrfField, csrfMeta, field, formError, heading, jsonData, page } from '../layout.js';
import type { DashboardEnv } from '../session.js';
import { bookPath, type Book } from './contacts-common.js';
import { builderVocabulary, FILTER_SYNTAX } from './segment-words.js';

type Ctx = Context<DashboardEnv>;

export type Segment = { id: string; contactBookId: string; name: string; filter: Record<string, unknown>; count: number; createdAt: string; updatedAt: string };

export const segmentsPath = (bookId: string) => `${bookPath(bookId)}/segments`;
export const segmentPath = (bookId: string, segmentId: string) => `${segmentsPath(bookId)}/${encodeURIComponent(segmentId)}`;

/** The segment form as typed: its name, and its filter as the JSON the builder writes. */
export type SegmentValues = { name: string; filter: string };
/** What was wrong with it: the name, the filter at each of its paths (`filter.all[2].op`), the rest. */
type SegmentErrors = { name?: string; filter: ErrorDetail[]; form?: string };
type FormState = { values: SegmentValues; errors?: SegmentErrors; count?: number; status?: ContentfulStatusCode };

export const filterText = (filter: unknown) => JSON.stringify(filter, null, 2);

/** A new segment starts as the book's subscribed contacts: something to count, and to narrow. */
export const NEW_SEGMENT: SegmentValues = { name: '', filter: filterText({ all: [{ field: 'subscribed', op: 'eq', value: true }] }) };

export const countWords = (count: number, book: Book) =>
  `${count.toLocaleString('en')} of ${book._count.contacts.toLocaleString('en')} ${book._count.contacts === 1 ? 'contact matches' : 'contacts match'} now`;

const isFilterPath = (path: string) => path === 'filter' || path.startsWith('filter.') || path.startsWith('filter[');

/** What was wrong with the input, each at its path ("" for the whole); anything but a mistake in it is thrown on. */
export function mistakes(error: unknown): ErrorDetail[] {
  const invalid = invalidInput(error);
  return invalid.details ?? [{ path: '', message: invalid.message }];
}

/** A refused segment's errors, by what each is about. */
export function segmentErrors(error: unknown): SegmentErrors {
  const details = mistakes(error);
  const others = details.filter((detail) => detail.path !== 'name' && !isFilterPath(detail.path));
  return {
    name: details.find((detail) => detail.path === 'name')?.message,
    filter: details.filter((detail) => isFilterPath(detail.path)),
    form: others.length > 0 ? others.map((detail) => (detail.path && detail.path !== '(body)' ? `${detail.path} ${detail.message}` : detail.message)).join('; ') : undefined,
  };
}

/** The filter field's JSON, or a 400 naming the field when it is not JSON. */
export function parsedFilter(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw validationError([{ path: 'filter', message: `must be JSON: ${(error as Error).message}` }]);
  }
}

const countBody = z.object({ filter: filterSchema });

/** How many of the book's contacts the typed filter matches now, checked as saving it would check it. */
export async function countTyped(c: Ctx, deps: AppDeps, bookId: string, text: string): Promise<number> {
  const { filter } = parseInput(countBody, { filter: parsedFilter(text) });
  return (await countFilter(deps, callerOf(c), { contactBookId: bookId, filter })).count;
}

/** Errors each at its path (`filter.all[2].op`), as a list; `id` lets a field name it as what describes it. */
export const detailList = (details: readonly ErrorDetail[], id?: string) =>
  details.length === 0 ? '' : html`<ul class="error filter-errors"${id ? html` id="${id}"` : ''}>${details.map((detail) => html`<li><code>${detail.path}</code> ${detail.message}</li>`)}</ul>`;

type BuilderOptions = {
  value: string;
  /** The filter's errors, their paths starting at `filter`. */
  errors: readonly ErrorDetail[];
  /** Where the builder POSTs the filter as typed for its live count (JSON `{ count, text }` or `{ errors }`). */
  countUrl: string;
  count?: string;
  /** What the builder offers beyond a segment's filter (an automation's send steps). */
  vocabulary?: Partial<typeof builderVocabulary> & Record<string, unknown>;
  hint?: string;
};

/**
 * The filter field: its JSON, which segments.js turns into the builder (writing the JSON, counting
 * it as it changes); without the script the JSON is typed by hand. It brings the session's CSRF
 * token as a meta tag: the count is a fetch, not a form post.
 */
export function filterBuilder(c: Ctx, options: BuilderOptions) {
  const { errors } = options;
  return html`<link rel="stylesheet" href="/assets/segments.css"><script src="/assets/segments.js" defer></script>${csrfMeta(c)}
${jsonData('segment-vocabulary', { ...builderVocabulary, ...options.vocabulary })}${jsonData('segment-errors', errors)}
<div class="field filter-field${errors.length > 0 ? ' has-error' : ''}">
<label for="f-filter">Filter</label>
<div class="filter-builder" data-builder="f-filter" data-count-url="${options.countUrl}" hidden></div>
<textarea id="f-filter" name="filter" rows="12" spellcheck="false"${errors.length > 0 ? html` aria-invalid="true" aria-describedby="f-filter-error"` : ''}>${options.value}</textarea>
<small class="hint">${FILTER_SYNTAX} Text compares ignoring case; dates are ISO 8601 or relative, like “30 days ago”.${options.hint ? ` ${options.hint}` : ''}</small>
${detailList(errors, 'f-filter-error')}
</div>
<p class="live-count" role="status" data-live-count>${options.count ?? ''}</p>`;
}

/**
 * A segment's form: its name, and its filter as JSON, which segments.js turns into a builder that
 * writes the JSON (and counts it as it changes); without the script the JSON is typed by hand, and
 * "Count matches" counts it without saving.
 */
export function segmentForm(c: Ctx, book: Book, state: FormState, segment?: Segment) {
  const list = segmentsPath(book.id);
  const back = segment ? segmentPath(book.id, segment.id) : list;
  const errors = state.errors ?? { filter: [] };
  const title = segment ? 'Edit segment' : 'New segment';
  return page(c, {
    title,
    section: 'Contacts',
    status: state.status,
    body: html`<p><a href="${back}">← ${segment ? segment.name : `Segments of ${book.emoji} ${book.name}`}</a></p>
${heading(title)}
<form method="post" action="${segment ? `${back}/edit` : `${list}/new`}" class="stack panel segment-form">${csrfField(c)}
${formError(errors.form)}
${field('name', 'Name', { value: state.values.name, error: errors.name, required: true, placeholder: 'Engaged readers' })}
${filterBuilder(c, { value: state.values.filter, errors: errors.filter, countUrl: `${list}/count`, count: state.count === undefined ? '' : countWords(state.count, book) })}
<div class="row-actions"><button type="submit">Save segment</button><button type="submit" class="secondary" name="intent" value="count" formnovalidate>Count matches</button><a class="button secondary" href="${back}">Cancel</a></div>
</form>`,
  });
}
