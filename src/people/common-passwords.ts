import { readFileSync } from 'node:fs';

// NIST SP 800-63B (5.1.1.2) asks that a new password be checked against passwords known to be
// commonly used: they are the first an attacker tries. common-passwords.txt holds those of a list of
// the 49,233 most common that are long enough to pass the length rule (its first lines say where
// they come from), all lower case, so the check ignores case.
let common: Set<string> | undefined;

function load(): Set<string> {
  const lines = readFileSync(new URL('./common-passwords.txt', import.meta.url), 'utf8').split('\n');
  return new Set(lines.filter((line) => line !== '' && !line.startsWith('#')));
}

/** Whether the password is one of the most common ones, in any case. */
export function isCommonPassword(password: string): boolean {
  common ??= load();
  return common.has(password.normalize('NFC').toLowerCase());
}
