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
