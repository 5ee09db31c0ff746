import pg from 'pg';
import { isCopyRows } from './copy.js';
import { CopyFromStdin, type CopyResult } from './pg-copy-from-stdin.js';
import { preparedName, REUSED } from './reused-statements.js';

/**
 * The pg client of our pool: a query whose parameter is CopyRows runs as COPY … FROM STDIN, and
 * one whose text starts with REUSED is prepared once per connection. A script (scripts.ts) needs
 * nothing of its own: a query without parameters goes by the simple protocol, which takes many
 * statements.
 */
export class PgClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // A connection the server ends while the client is checked out and between statements (a batch
    // idle past idle_in_transaction_session_timeout, a server restart) is reported here: with no
    // listener that would crash the process. The transaction's next statement fails instead, and
    // the pool drops the client when it is released with that error.
    this.on('error', () => {});
  }

  // pg's query() has a dozen overloads; this adds two cases in front of them all.
  override query(...args: any[]): any {
    const [text, values] = args;
    if (typeof text === 'string' && text.startsWith(REUSED) && !isCopyRows(values)) {
      return (super.query as (...queryArgs: unknown[]) => unknown)({ name: preparedName(text), text, values }, ...args.slice(2));
    }
    if (typeof text !== 'string' || !isCopyRows(values)) return (super.query as (...queryArgs: unknown[]) => unknown)(...args);
    const copy = new CopyFromStdin(text, values[0]);
    return new Promise<CopyResult>((resolve, reject) => {
      copy.callback = (error, result) => (error ? reject(error) : resolve(result!));
      (super.query as (query: CopyFromStdin) => void)(copy);
    });
  }
}
