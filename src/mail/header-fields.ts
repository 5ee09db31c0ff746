/** One header field as written: its name lower-cased, and its raw text with any folded lines (joined by CRLF). */
export type HeaderField = { name: string; raw: string };

/**
 * The fields of a header block whose lines end in CRLF. A line that starts with white space
 * continues the field above it; a line without a colon is a field with no name, which matches
 * nothing. The signer, the verifier and the report reader all read a block through this one
 * function, so none of them can see a field the others do not.
 */
export function parseHeaderFields(block: string): HeaderField[] {
  const fields: HeaderField[] = [];
  for (const line of block.split('\r\n')) {
    if (line === '') continue;
    const last = fields[fields.length - 1];
    if (/^[ \t]/.test(line) && last) last.raw += `\r\n${line}`;
    else fields.push({ name: line.includes(':') ? line.slice(0, line.indexOf(':')).trim().toLowerCase() : '', raw: line });
  }
  return fields;
}

/** A field's value, its folded lines joined and the ends trimmed. */
export const fieldValue = (field: HeaderField) => field.raw.slice(field.raw.indexOf(':') + 1).replace(/\r\n/g, '').trim();
