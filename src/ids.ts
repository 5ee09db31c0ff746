import { randomBytes } from 'node:crypto';

const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';

// Bulk imports draw thousands of ids at once: taking random bytes from a pool refilled 8 KiB at a
// time costs a fraction of one randomBytes call per id.
const POOL_SIZE = 8192;
let pool = randomBytes(POOL_SIZE);
let offset = 0;

function nextByte(): number {
  if (offset === POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  return pool[offset++]!;
}

/** A random lower-case alphanumeric id (24 characters ≈ 124 bits), like the cuids of upstream. */
export function newId(length = 24): string {
  let id = '';
  while (id.length < length) {
    const byte = nextByte();
    // 252 is the largest multiple of 36 below 256: rejecting above it keeps every character equally likely.
    if (byte < 252) id += alphabet[byte % 36];
  }
  return id;
}
