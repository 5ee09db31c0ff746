import type { Readable } from 'node:stream';
import { CsvError, parse, type Parser } from 'csv-parse';
import { stringify } from 'csv-stringify/sync';
import { contactsAfter, type ExportCursor } from '../data/contact-export.js';
import { findBookForContacts } from '../data/contacts.js';
import type { Deps } from '../deps.js';
import { ApiError, notFound } from '../errors.js';
import type { Caller } from './caller.js';

/** The columns an export writes and an import reads, in this order. */
export const CSV_COLUMNS = ['email', 'firstName', 'lastName', 'subscribed'] as const;
type Column = (typeof CSV_COLUMNS)[number];

// No contact needs more (an address is at most 254 characters, a name 255): a longer record is
// almost always a quote left open swallowing the rest of the file, and the cap keeps one record
// from holding a whole upload in memory.
export const MAX_RECORD_CHARS = 64 * 1024;
const EXPORT_PAGE = 2_000;

/** Header names as people write them: "First name", "first_name", "FirstName", "E-mail". */
const HEADER_NAMES: Record<string, Column> = {
  email: 'email',
  emailaddress: 'email',
  firstname: 'firstName',
  lastname: 'lastName',
  subscribed: 'subscribed',
};
const YES = new Set(['true', 'yes', 'y', '1']);
const NO = new Set(['false', 'no', 'n', '0']);

// The export prefixes these (csv-stringify's escape_formulas, OWASP's advice on CSV injection); an
// apostrophe before one of them is that prefix coming back, and dropping it makes a round trip exact.
const GUARDED = /^'[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;
const unguard = (cell: string) => (GUARDED.test(cell) ? cell.slice(1) : cell);

/** The file is not CSV the import can read: a 400 saying where. */
export class CsvFormatError extends ApiError {
  constructor(message: string) {
    super('BAD_REQUEST', message);
  }
}

export type CsvContact = { email: string; firstName?: string; lastName?: string; subscribed?: boolean };
/** A data row of the file: a contact for the bulk upsert to check, or why it could not be read. */
export type CsvRow = { line: number; contact: CsvContact } | { line: number; email: string; message: string };

const lineBreaks = (cells: string[]) => cells.reduce((sum, cell) => sum + (cell.match(/\r\n|\r|\n/g)?.length ?? 0), 0);
const crlfs = (cells: string[]) => cells.reduce((sum, cell) => sum + (cell.match(/\r\n/g)?.length ?? 0), 0);

/** Hands the parser a chunk (or the end of the file); answers what it found wrong, if anything. */
function feed(parser: Parser, chunk?: Buffer): Promise<Error | undefined> {
  return new Promise((resolve) => {
    const done = (error?: Error | null) => resolve(error ?? undefined);
    if (chunk) parser.write(chunk, done);
    else parser.end(done);
  });
}

/**
 * Reads a CSV of contacts as it streams in, chunk by chunk and one record at a time (at most
 * MAX_RECORD_CHARS), so a file of any size takes the same memory. The first non-blank line names
 * the columns; a file that is not CSV stops the reading with a CsvFormatError naming the line,
 * after every row before it. The input is left open then, for the caller to drain.
 */
export class ContactCsvReader {
  /** Header cells naming no column an import reads; known once the first row has been read. */
  ignoredColumns: string[] = [];
  private columns: Array<Column | null> | null = null;
  // csv-parse counts a CRLF inside a quoted field as two lines, and every line after it one too many.
  private drift = 0;
  private nextLine = 1;

  constructor(private readonly input: Readable) {}

  async *rows(): AsyncGenerator<CsvRow> {
    const parsed: Array<{ cells: string[]; lines: number }> = [];
    const parser = parse({
      bom: true,
      relax_column_count: true,
      max_record_size: MAX_RECORD_CHARS,
      // Records are taken as they are parsed: the stream's own buffer is dropped when a later
      // record of the same chunk turns out broken, and those rows must still count.
      on_record: (cells: string[], context) => {
        parsed.push({ cells, lines: context.lines });
        return null;
      },
    });
    // Errors arrive through feed(); this keeps them from being thrown a second time.
    parser.on('error', () => undefined);
    const chunks = this.input.iterator({ destroyOnReturn: false });
    try {
      for (;;) {
        const next = await chunks.next();
        const failure = await feed(parser, next.done ? undefined : (next.value as Buffer));
        yield* this.take(parsed);
        if (failure) {
          throw new CsvFormatError(failure instanceof CsvError ? csvProblem(failure, this.nextLine, this.drift) : failure.message);
        }
        if (next.done) break;
      }
    } finally {
      // Lets go of the input without destroying it: its listeners would keep it from being drained.
      await chunks.return?.();
    }
    if (!this.columns) throw new CsvFormatError('The file is empty: its first line must name the columns, one of them "email".');
  }

  private *take(parsed: Array<{ cells: string[]; lines: number }>): Generator<CsvRow> {
    for (const { cells, lines } of parsed.splice(0)) {
      this.drift += crlfs(cells);
      const end = lines - this.drift;
      this.nextLine = end + 1;
      if (cells.every((cell) => cell.trim() === '')) continue;
      if (this.columns) yield this.row(this.columns, cells, end - lineBreaks(cells));
      else this.columns = this.header(cells);
    }
  }

  private header(cells: string[]): Array<Column | null> {
    const seen = new Set<Column>();
    const columns = cells.map((cell) => {
      const column = HEADER_NAMES[cell.trim().toLowerCase().replace(/[\s_-]/g, '')];
      if (!column || seen.has(column)) {
        if (cell.trim()) this.ignoredColumns.push(cell.trim());
        return null;
      }
      seen.add(column);
      return column;
    });
    if (!seen.has('email')) {
      throw new CsvFormatError(`The first line must name the columns, one of them "email" (with firstName, lastName, subscribed if you have them); it reads: ${cells.join(', ').slice(0, 200)}`);
    }
    return columns;
  }

  private row(columns: Array<Column | null>, record: string[], line: number): CsvRow {
    const cells = new Map<Column, string>();
    columns.forEach((column, i) => column && cells.set(column, unguard(record[i] ?? '')));
    const contact: CsvContact = { email: cells.get('email') ?? '' };
    for (const name of ['firstName', 'lastName'] as const) {
      const value = cells.get(name);
      if (value?.trim()) contact[name] = value;
    }
    const word = cells.get('subscribed')?.trim().toLowerCase() ?? '';
    if (YES.has(word)) contact.subscribed = true;
    else if (NO.has(word)) contact.subscribed = false;
    else if (word !== '') return { line, email: contact.email, message: `subscribed: must be true or false (or yes/no, 1/0), not "${word.slice(0, 50)}"` };
    return { line, contact };
  }
}

function csvProblem(error: CsvError, nextLine: number, drift: number): string {
  switch (error.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return `The row starting on line ${nextLine} opens a quoted field that is never closed.`;
    case 'CSV_MAX_RECORD_SIZE':
      return `The row starting on line ${nextLine} is longer than ${MAX_RECORD_CHARS.toLocaleString('en')} characters; is a quote left open?`;
    default: {
      const line = typeof error.lines === 'number' ? error.lines - drift : nextLine;
      return `Line ${line} is not valid CSV: ${error.message.replace(/ at line \d+/, '')}`;
    }
  }
}

/**
 * The book's contacts as CSV (CSV_COLUMNS, UTF-8 with a BOM so spreadsheets read it as such),
 * page by page in creation order. Cells a spreadsheet would run as a formula start with an
 * apostrophe. The book is checked before the first page, so a missing one is a 404 and not an
 * empty download.
 */
export async function contactsCsv(deps: Pick<Deps, 'db'>, caller: Caller, { contactBookId }: { contactBookId: string }): Promise<AsyncGenerator<string>> {
  if (!(await findBookForContacts(deps.db, caller.teamId, contactBookId))) throw notFound('Contact book');
  return csvPages(deps, caller.teamId, contactBookId);
}

// csv-stringify quotes a field holding the record delimiter, but not a lone CR or LF, which a
// reader would take as the end of the row.
const CSV_OPTIONS = { escape_formulas: true, record_delimiter: 'windows', quoted_match: /[\r\n]/ } as const;

async function* csvPages({ db }: Pick<Deps, 'db'>, teamId: number, bookId: string): AsyncGenerator<string> {
  yield stringify([], { ...CSV_OPTIONS, bom: true, header: true, columns: [...CSV_COLUMNS] });
  let after: ExportCursor | null = null;
  for (;;) {
    const rows = await contactsAfter(db, teamId, bookId, after, EXPORT_PAGE);
    if (rows.length > 0) {
      yield stringify(
        rows.map((row) => [row.email, row.first_name ?? '', row.last_name ?? '', String(row.subscribed)]),
        CSV_OPTIONS,
      );
    }
    if (rows.length < EXPORT_PAGE) return;
    const last = rows.at(-1)!;
    after = { createdAt: last.created_at_text, id: last.id };
  }
}
