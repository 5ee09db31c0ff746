/**
 * Marks a statement the hot paths run again and again with the same text: each connection (on
 * PostgreSQL, src/db/pg-client.ts; the embedded database's one, src/db/pglite-dialect.ts) prepares
 * it once and then only binds and runs it, sparing the parse and the plan.
 */
export const REUSED = '/* reused */';

const preparedNames = new Map<string, string>();

/** The name a reused statement is prepared under: one per text, the same on every connection. */
export function preparedName(text: string): string {
  let name = preparedNames.get(text);
  if (!name) preparedNames.set(text, (name = `reused_${preparedNames.size}`));
  return name;
}
