import { randomBytes } from 'node:crypto';

const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A random lower-case alphanumeric id (24 characters ≈ 124 bits), like the cuids of upstream. */
export function newId(length = 24): string {
  let id = '';
  while (id.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 252 is the largest multiple of 36 below 256: rejecting above it keeps every character equally likely.
      if (byte < 252 && id.length < length) id += alphabet[byte % 36];
    }
  }
  return id;
}
