import type { PGlite, Transaction } from '@electric-sql/pglite';
import type { PGliteDialectConfig } from 'kysely';
import pg from 'pg';

/**
 * Rows for `COPY table (columns) FROM STDIN`, in COPY's text format, given to that statement as its
 * only parameter (`CompiledQuery.raw(sql, [rows])`): both connections below stream them to the
 * server instead of binding a parameter. COPY parses plain text and writes whole pages at a time,
 * for about a third less database time than an INSERT of the same rows unpacked from arrays.
 */
export class CopyRows {
  constructor(readonly text: string) {}
}

export type CopyValue = string | boolean | null;

const SPECIAL = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function field(value: CopyValue): string {
  if (value === null) return '\\N';
  if (typeof value === 'boolean') return value ? 't' : 'f';
  return SPECIAL.test(value) ? value.replace(/[\\\t\n\r]/g, (char) => ESCAPES[char]!) : value;
}

export function copyRows(rows: ReadonlyArray<ReadonlyArray<CopyValue>>): CopyRows {
  const lines = rows.map((row) => row.map(field).join('\t'));
  lines.push('');
  return new CopyRows(lines.join('\n'));
}

const isCopy = (params: unknown): params is [CopyRows] =>
  Array.isArray(params) && params.length === 1 && params[0] instanceof CopyRows;

type CopyResult = { command: 'COPY'; rowCount: number; rows: never[] };
type CopyConnection = { query(text: string): void; sendCopyFromChunk(chunk: Buffer): void; endCopyFrom(): void };

/** pg's interface for a query of our own: send the statement, then the rows when asked for them. */
class CopyFromStdin {
  callback?: (error: Error | null, result?: CopyResult) => void;
  private readonly result: CopyResult = { command: 'COPY', rowCount: 0, rows: [] };

  constructor(
    private readonly text: string,
    private readonly rows: CopyRows,
  ) {}

  submit(connection: CopyConnection) {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection) {
    connection.sendCopyFromChunk(Buffer.from(this.rows.text));
    connection.endCopyFrom();
  }

  handleCommandComplete(message: { text: string }) {
    this.result.rowCount = Number(message.text.split(' ')[1]);
  }

  // After an error pg hands the ReadyForQuery that follows to no query, so this is the last word.
  handleError(error: Error) {
    this.callback?.(error);
  }

  handleReadyForQuery() {
    this.callback?.(null, this.result);
  }

  handleRowDescription() {}
  handleDataRow() {}
  handleEmptyQuery() {}
  handlePortalSuspended() {}
  handleCopyData() {}
}

/**
 * Marks a statement the hot paths run again and again with the same text: on PostgreSQL each
 * connection prepares it once and then only binds and runs it, sparing the parse and the plan.
 */
export const REUSED = '/* reused */';

const preparedNames = new Map<string, string>();
const preparedName = (text: string) => {
  let name = preparedNames.get(text);
  if (!name) preparedNames.set(text, (name = `reused_${preparedNames.size}`));
  return name;
};

/**
 * The pg client of our pool: a query whose parameter is CopyRows runs as COPY … FROM STDIN, and
 * one whose text starts with REUSED is prepared once per connection.
 */
export class CopyingClient extends pg.Client {
  // pg's query() has a dozen overloads; this adds two cases in front of them all.
  override query(...args: any[]): any {
    const [text, values] = args;
    if (typeof text === 'string' && text.startsWith(REUSED) && !isCopy(values)) {
      return (super.query as (...queryArgs: unknown[]) => unknown)({ name: preparedName(text), text, values }, ...args.slice(2));
    }
    if (typeof text !== 'string' || !isCopy(values)) return (super.query as (...queryArgs: unknown[]) => unknown)(...args);
    const copy = new CopyFromStdin(text, values[0]);
    return new Promise<CopyResult>((resolve, reject) => {
      copy.callback = (error, result) => (error ? reject(error) : resolve(result!));
      (super.query as (query: CopyFromStdin) => void)(copy);
    });
  }
}

type KyselyPGlite = Extract<PGliteDialectConfig['pglite'], { query: unknown }>;

/** PGlite reads COPY input from the blob given with the query, as the file /dev/blob. */
function query(target: PGlite | Transaction, text: string, params?: unknown[], options?: object) {
  if (!isCopy(params)) return target.query(text, params, options);
  const fromBlob = text.replace(/FROM STDIN\s*$/, "FROM '/dev/blob'");
  return target.query(fromBlob, [], { ...options, blob: new Blob([params[0].text]) });
}

/**
 * The PGlite instance as Kysely's dialect sees it, running CopyRows queries as COPY, and counting
 * the statements and transactions under way (`running`: PGlite runs them one at a time).
 */
export function pgliteWithCopy(pglite: PGlite): KyselyPGlite & { readonly running: number } {
  let running = 0;
  const counted = <T>(work: Promise<T>): Promise<T> => {
    running++;
    return work.finally(() => running--);
  };
  return {
    get running() {
      return running;
    },
    get closed() {
      return pglite.closed;
    },
    get ready() {
      return pglite.ready;
    },
    get waitReady() {
      return pglite.waitReady;
    },
    close: () => pglite.close(),
    query: (text, params, options) => counted(query(pglite, text, params, options)) as never,
    transaction: (callback) =>
      counted(pglite.transaction((tx) => callback({ query: (text, params, options) => query(tx, text, params, options) as never, rollback: () => tx.rollback() }))),
  };
}
