import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../src/db/connection.js';
import { runScript } from '../src/db/scripts.js';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';

let database: TestDatabase | undefined;
let handle: DatabaseHandle | undefined;
afterEach(async () => {
  await handle?.close();
  await database?.drop();
});

async function emptyDatabase() {
  database = await createTestDatabase({ empty: true });
  handle = await openDatabase(database.source);
  return handle.db;
}

// What a migration file may hold now that it runs whole: a PL/pgSQL body laid out over lines that
// end in semicolons, comments, and a string with a semicolon at the end of one of its lines.
const SCRIPT = `
CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL, words integer);

-- Counts a note's words as it is written; the body's statements each end their own line.
CREATE FUNCTION count_words() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n integer;
BEGIN
  n := coalesce(array_length(regexp_split_to_array(trim(NEW.body), '\\s+'), 1), 0);
  NEW.words := n;
  RETURN NEW;
END
$$;
CREATE TRIGGER notes_words BEFORE INSERT ON notes FOR EACH ROW EXECUTE FUNCTION count_words();

INSERT INTO notes (body) VALUES ('first line;
second line');
`;

describe('a migration runs as one script', () => {
  it('runs as written: a PL/pgSQL body over many lines, comments, and a string with a semicolon ending a line', async () => {
    const db = await emptyDatabase();
    await db.transaction().execute((tx) => runScript(tx, SCRIPT));
    const { rows } = await sql<{ body: string; words: number }>`SELECT body, words FROM notes`.execute(db);
    expect(rows).toEqual([{ body: 'first line;\nsecond line', words: 4 }]);
  });

  it('a script that fails inside its transaction leaves none of its statements behind', async () => {
    const db = await emptyDatabase();
    const failing = `${SCRIPT}\nINSERT INTO notes (body) VALUES (NULL);`;
    await expect(db.transaction().execute((tx) => runScript(tx, failing))).rejects.toThrow(/null value/);
    const { rows } = await sql<{ found: string | null }>`SELECT to_regclass('notes')::text AS found`.execute(db);
    expect(rows).toEqual([{ found: null }]);
  });
});
