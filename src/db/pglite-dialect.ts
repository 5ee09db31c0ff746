import { parse, protocol, type PGlite, type Results } from '@electric-sql/pglite';
import {
  AbortedTransactionError,
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { isCopyRows } from './copy.js';
import { preparedName, REUSED } from './reused-statements.js';
import { SCRIPT } from './scripts.js';

const BYTEA_OID = 17;

/**
 * bytea in PostgreSQL's hex form, converted by Buffer's native code. PGlite's own goes byte by
 * byte through an array of strings: a 25 MiB message cost it gigabytes of heap and seconds. They
 * are made the instance's own rather than given with each query: PGlite copies its 318 parsers
 * into a new object for every query given parsers, 65 µs each time.
 */
const BYTEA = {
  serializers: { [BYTEA_OID]: (value: Uint8Array) => `\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}` },
  parsers: { [BYTEA_OID]: (value: string) => Buffer.from(value.slice(2), 'hex') },
};

/**
 * Kysely on the embedded PGlite: PostgreSQL's SQL, one connection. Kysely 0.28 (the last to run
 * on Node 20) has no dialect of its own for PGlite.
 *
 * PGlite is one backend: a statement sent while another caller's transaction is open would run
 * inside that transaction. So the driver lends its one connection to one caller at a time, in the
 * order they asked, a transaction holding it from BEGIN to COMMIT. Nothing else in the process
 * uses the PGlite instance while the dialect has it.
 */
export class PGliteDialect implements Dialect {
  readonly #driver: PGliteDriver;

  constructor(pglite: PGlite) {
    this.#driver = new PGliteDriver(pglite);
  }

  /** Callers holding the connection or waiting for it. */
  get running(): number {
    return this.#driver.running;
  }

  createAdapter() {
    return new PGliteAdapter();
  }

  createDriver(): Driver {
    return this.#driver;
  }

  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }

  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
}

class PGliteAdapter extends PostgresAdapter {
  // Kysely's migrator takes an advisory lock on a second connection; one connection holding the
  // lock already excludes everyone else.
  override async acquireMigrationLock(): Promise<void> {}
  override async releaseMigrationLock(): Promise<void> {}
}

class PGliteDriver implements Driver {
  readonly #pglite: PGlite;
  readonly #connection: PGliteConnection;
  // Settles when the last caller to ask has let go: the tail of the queue.
  #tail: Promise<void> = Promise.resolve();
  // Lets the next caller in; set by whoever holds the connection now.
  #letNextIn: (() => void) | undefined;
  running = 0;

  constructor(pglite: PGlite) {
    this.#pglite = pglite;
    this.#connection = new PGliteConnection(pglite);
  }

  async init(): Promise<void> {
    await this.#pglite.waitReady;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    this.running++;
    const ahead = this.#tail;
    let letNextIn!: () => void;
    this.#tail = new Promise((resolve) => (letNextIn = resolve));
    await ahead;
    this.#letNextIn = letNextIn;
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    this.running--;
    const letNextIn = this.#letNextIn!;
    this.#letNextIn = undefined;
    letNextIn();
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const mode = [settings.isolationLevel && `ISOLATION LEVEL ${settings.isolationLevel.toUpperCase()}`, settings.accessMode?.toUpperCase()];
    await connection.executeQuery(CompiledQuery.raw(['START TRANSACTION', ...mode.filter(Boolean)].join(' ')));
  }

  /**
   * A COMMIT of a transaction that an error left aborted rolls it back, and PGlite answers it with
   * a ROLLBACK tag: that fails here as on Kysely's PostgreSQL driver.
   */
  async commitTransaction(): Promise<void> {
    const { command } = (await this.#pglite.query('COMMIT')) as { command?: string };
    if (command === 'ROLLBACK') throw new AbortedTransactionError();
  }

  async rollbackTransaction(): Promise<void> {
    await this.#pglite.query('ROLLBACK');
  }

  async destroy(): Promise<void> {
    if (!this.#pglite.closed) await this.#pglite.close();
  }
}

/** A value as the text PostgreSQL reads for its parameter's type. */
type Serializer = (value: never) => string;

/** A statement prepared under its name, with how to write each of its parameters (by the type the server reads it as). */
type Prepared = { name: string; serializers: Array<Serializer | undefined> };

const joined = (...messages: Uint8Array[]) => Buffer.concat(messages);

class PGliteConnection implements DatabaseConnection {
  readonly #pglite: PGlite;
  readonly #prepared = new Map<string, Prepared>();

  constructor(pglite: PGlite) {
    this.#pglite = pglite;
    Object.assign(pglite.serializers, BYTEA.serializers);
    Object.assign(pglite.parsers, BYTEA.parsers);
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const { rows, affectedRows } = await this.#run(query.sql, query.parameters);
    return { rows: rows as R[], numAffectedRows: affectedRows === undefined ? undefined : BigInt(affectedRows) };
  }

  /**
   * PGlite reads COPY input from the blob given with the query, as the file /dev/blob; and runs a
   * script with exec, its one way to take many statements at once.
   */
  async #run(text: string, params: readonly unknown[]): Promise<Results> {
    if (text.startsWith(SCRIPT)) return (await this.#pglite.exec(text)).at(-1) ?? { rows: [], fields: [] };
    if (text.startsWith(REUSED) && !isCopyRows(params)) return this.#runPrepared(text, params);
    if (!isCopyRows(params)) return this.#pglite.query(text, [...params]);
    const fromBlob = text.replace(/FROM STDIN\s*$/, "FROM '/dev/blob'");
    return this.#pglite.query(fromBlob, [], { blob: new Blob([params[0].text]) });
  }

  /**
   * A statement the hot paths run again and again, prepared once under its name and then only
   * bound and run, in one call into the database: PGlite's query() parses, plans and describes
   * every statement anew, in five calls, which cost the accept path's insert more than its rows.
   */
  async #runPrepared(text: string, params: readonly unknown[]): Promise<Results> {
    const { serialize } = protocol;
    let prepared = this.#prepared.get(text);
    if (!prepared) {
      const name = preparedName(text);
      const { messages } = await this.#pglite.execProtocol(
        joined(serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()),
        { syncToFs: false },
      );
      const serializers = parse.parseDescribeStatementResults(messages).map((type) => this.#pglite.serializers[type]);
      prepared = { name, serializers };
      this.#prepared.set(text, prepared);
    }
    const { serializers } = prepared;
    const values = params.map((value, index) => {
      if (value === null || value === undefined) return null;
      const serializer = serializers[index];
      return serializer ? serializer(value as never) : String(value);
    });
    const { messages } = await this.#pglite.execProtocol(
      joined(serialize.bind({ statement: prepared.name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()),
      { syncToFs: false },
    );
    return parse.parseResults(messages, this.#pglite.parsers)[0]!;
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite cannot stream a query');
  }
}
