import type { PGlite, Transaction } from '@electric-sql/pglite';
import type { PGliteDialectConfig } from 'kysely';
import { isCopyRows } from './copy.js';
import { SCRIPT } from './scripts.js';

type KyselyPGlite = Extract<PGliteDialectConfig['pglite'], { query: unknown }>;

/**
 * PGlite reads COPY input from the blob given with the query, as the file /dev/blob; and runs a
 * script with exec, its one way to take many statements at once.
 */
async function query(target: PGlite | Transaction, text: string, params?: unknown[], options?: object) {
  if (text.startsWith(SCRIPT)) return (await target.exec(text, options)).at(-1) ?? { rows: [], fields: [] };
  if (!isCopyRows(params)) return target.query(text, params, options);
  const fromBlob = text.replace(/FROM STDIN\s*$/, "FROM '/dev/blob'");
  return target.query(fromBlob, [], { ...options, blob: new Blob([params[0].text]) });
}

/**
 * The PGlite instance as Kysely's dialect sees it, running CopyRows queries as COPY and scripts
 * whole, and counting the statements and transactions under way (`running`: PGlite runs them one
 * at a time).
 */
export function pgliteClient(pglite: PGlite): KyselyPGlite & { readonly running: number } {
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
