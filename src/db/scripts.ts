import { sql } from 'kysely';
import type { Db } from './connection.js';

/**
 * Marks a query that is a script: many statements in one text, run as one by the simple query
 * protocol (pg sends a query without parameters that way; PGlite's exec). A statement of it may
 * hold semicolons anywhere, as a PL/pgSQL body does.
 */
export const SCRIPT = '/* script */';

/** Runs `text`, any number of statements, on `db` (inside its transaction when `db` is one). */
export async function runScript(db: Db, text: string): Promise<void> {
  await sql.raw(`${SCRIPT}\n${text}`).execute(db);
}
