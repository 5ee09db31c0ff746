/** `text` as an ILIKE pattern matching it anywhere, its own `%`, `_` and `\` taken literally (the default escape). */
export const containing = (text: string) => `%${text.replace(/[\\%_]/g, '\\$&')}%`;
