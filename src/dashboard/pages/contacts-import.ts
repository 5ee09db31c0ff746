import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError, badRequest } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import { ContactCsvReader, CSV_COLUMNS, CsvFormatError, MAX_RECORD_CHARS, type CsvContact } from '../../services/contact-csv.js';
import { callApi } from '../api-call.js';
import { assertMayChange } from '../forms.js';
import { csrfMeta, heading, page, table } from '../layout.js';
import type { DashboardEnv } from '../session.js';
import { bookPath, getBook } from './contacts-common.js';

// Rows per call to the bulk route (whose limit is 10,000): what the import holds in memory at once.
const BATCH = 5_000;
const LISTED_REJECTIONS = 100;
const BULK_ROUTE = '/contactBooks/{contactBookId}/contacts/bulk';

type Rejection = { line: number; email: string | null; message: string };
type Row = { line: number; contact: CsvContact };
type BulkResult = { created: number; updated: number; errors: Array<{ index: number; email: string | null; message: string }> };

/** What an import did, kept small whatever the file's size: counts, and only the first rejections. */
class ImportReport {
  created = 0;
  updated = 0;
  rejected = 0;
  readonly listed: Rejection[] = [];
  problem: string | null = null;
  ignoredColumns: string[] = [];

  add(counts: { created: number; updated: number }, rejections: Rejection[]) {
    this.created += counts.created;
    this.updated += counts.updated;
    this.rejected += rejections.length;
    rejections.sort((a, b) => a.line - b.line);
    this.listed.push(...rejections.slice(0, LISTED_REJECTIONS - this.listed.length));
  }
}

/**
 * The rows a bulk call refused as a whole, by index, with why: the API's input check refuses the
 * request for a string Postgres cannot store (a NUL, say) in any row, which here is that row's fault.
 */
function refusedRows(error: unknown): Map<number, string> | null {
  if (!(error instanceof ApiError) || error.code !== 'VALIDATION_ERROR' || !error.details) return null;
  const refused = new Map<number, string>();
  for (const detail of error.details) {
    const match = /^\[(\d+)\](?:\.(.+))?$/.exec(detail.path);
    if (!match) return null;
    refused.set(Number(match[1]), match[2] ? `${match[2]}: ${detail.message}` : detail.message);
  }
  return refused;
}

/** Upserts one batch through the API's bulk route, which checks every row by its own rules. */
async function upsert(c: Context<DashboardEnv>, deps: AppDeps, bookId: string, rows: Row[]) {
  const rejections: Rejection[] = [];
  let pending = rows;
  while (pending.length > 0) {
    const sent = pending;
    try {
      const result = await callApi<BulkResult>(c, deps, 'post', BULK_ROUTE, { params: { contactBookId: bookId }, body: sent.map((row) => row.contact) });
      for (const error of result.errors) {
        // The route numbers rows within its request ("repeats the address of row 3"); the person knows the file's lines.
        const message = error.message.replace(/\brow (\d+)\b/, (_, index: string) => `line ${sent[Number(index)]?.line ?? '?'}`);
        rejections.push({ line: sent[error.index]!.line, email: error.email, message });
      }
      return { created: result.created, updated: result.updated, rejections };
    } catch (error) {
      const refused = refusedRows(error);
      if (!refused) throw error;
      for (const [index, message] of refused) rejections.push({ line: sent[index]!.line, email: sent[index]!.contact.email, message });
      pending = sent.filter((_, index) => !refused.has(index));
    }
  }
  return { created: 0, updated: 0, rejections };
}

/** Reads the file batch by batch, saving each before reading on, so memory stays flat. */
async function importCsv(c: Context<DashboardEnv>, deps: AppDeps, bookId: string, reader: ContactCsvReader) {
  const report = new ImportReport();
  let rows: Row[] = [];
  let unreadable: Rejection[] = [];
  const save = async () => {
    const result = await upsert(c, deps, bookId, rows);
    report.add(result, [...unreadable, ...result.rejections]);
    rows = [];
    unreadable = [];
  };
  try {
    for await (const row of reader.rows()) {
      if ('message' in row) unreadable.push(row);
      else rows.push(row);
      if (rows.length + unreadable.length >= BATCH) await save();
    }
  } catch (error) {
    if (!(error instanceof CsvFormatError)) throw error;
    report.problem = error.message;
  }
  // The rows read before a broken line are saved too: what the report says was imported, was.
  await save();
  report.ignoredColumns = reader.ignoredColumns;
  return report;
}

const count = (n: number, noun: string) => `${n.toLocaleString('en')} ${noun}${n === 1 ? '' : 's'}`;

function reportFragment(report: ImportReport, bookId: string) {
  const anything = report.created + report.updated + report.rejected > 0;
  return html`<div role="status" data-import-report>
${report.problem ? html`<p class="form-error" role="alert">${report.problem} ${anything ? 'The rows before it were imported as counted below; nothing after it was read.' : 'Nothing was imported.'}</p>` : ''}
<h2>${report.problem ? 'Import stopped' : 'Import finished'}</h2>
<div class="cards">
<div class="card"><div class="label">Added</div><div class="value" data-count="created">${report.created.toLocaleString('en')}</div></div>
<div class="card"><div class="label">Updated</div><div class="value" data-count="updated">${report.updated.toLocaleString('en')}</div></div>
<div class="card"><div class="label">Rejected</div><div class="value" data-count="rejected">${report.rejected.toLocaleString('en')}</div></div>
</div>
${report.ignoredColumns.length > 0 ? html`<p class="muted">Ignored columns: ${report.ignoredColumns.join(', ')}.</p>` : ''}
${
  report.rejected > 0
    ? html`<h3>Rejected rows</h3>
${table(
  report.listed,
  [
    { label: 'Line', cell: (row) => row.line.toLocaleString('en'), className: 'num' },
    { label: 'Email', cell: (row) => row.email ?? '', className: 'wrap' },
    { label: 'Reason', cell: (row) => row.message },
  ],
  '',
)}
${report.rejected > report.listed.length ? html`<p class="muted">Showing the first ${count(report.listed.length, 'rejected row')} of ${report.rejected.toLocaleString('en')}.</p>` : ''}`
    : ''
}
<p><a href="${bookPath(bookId)}">See the contacts of this book</a></p>
</div>`;
}

/** Reads whatever of the upload is left, so the browser, still sending, gets the answer instead of a reset connection. */
async function drain(source: Readable) {
  source.resume();
  await finished(source).catch(() => undefined);
}

/** The CSV import: its page, and the upload it sends (the file as the raw request body, see app.js). */
export function importPages(app: Hono<DashboardEnv>, deps: AppDeps) {
  app.get('/:bookId/import', async (c) => {
    assertMayChange(c, 'audience');
    const book = await getBook(c, deps, c.req.param('bookId'));
    const path = bookPath(book.id);
    return page(c, {
      title: `Import into ${book.name}`,
      section: 'Contacts',
      body: html`${csrfMeta(c)}<p><a href="${path}">← ${book.emoji} ${book.name}</a></p>
${heading('Import contacts from CSV')}
<div class="panel">
<p>The first line names the columns: <code>${CSV_COLUMNS.join(',')}</code> (<code>email</code> is required; <code>first_name</code>, <code>First name</code> and the like work too, other columns are ignored). <code>subscribed</code> is true or false (yes/no, 1/0); left empty, a new contact is subscribed and an existing one keeps its status.</p>
<p class="muted">A contact whose address is already in the book is updated. Files of any size are read as they upload; a row may be at most ${MAX_RECORD_CHARS.toLocaleString('en')} characters.${
        book.doubleOptInEnabled ? ' This book uses double opt-in: each new contact is sent a confirmation email and is subscribed once they confirm.' : ''
      }</p>
<form method="post" action="${path}/import" data-upload>
<div class="field"><label for="f-file">CSV file</label><input id="f-file" name="file" type="file" accept=".csv,text/csv" required></div>
<p class="row-actions"><button type="submit">Import</button><a class="button secondary" href="${path}">Cancel</a></p>
<div data-upload-result aria-live="polite"></div>
</form>
</div>`,
    });
  });

  app.post('/:bookId/import', async (c) => {
    try {
      // Before reading a byte: a role that may not change contacts is refused (an empty file would
      // otherwise make no call that checks it), and another team's book is a 404 like a missing one.
      assertMayChange(c, 'audience');
      const book = await getBook(c, deps, c.req.param('bookId'));
      if (!c.req.raw.body) throw badRequest('Choose a CSV file to import.');
      const source = Readable.fromWeb(c.req.raw.body as NodeReadableStream<Uint8Array>);
      const report = await importCsv(c, deps, book.id, new ContactCsvReader(source));
      if (report.problem) await drain(source);
      return c.html(reportFragment(report, book.id), report.problem ? 400 : 200);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return c.html(html`<p class="form-error" role="alert">${error.message}</p>`, error.status as ContentfulStatusCode);
    }
  });
}
