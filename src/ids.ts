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

// Time-ordered ids: 9 characters of milliseconds (enough until the year 5138), 4 of a counter
// that orders ids drawn in the same millisecond, and 11 random characters (≈57 bits) that keep
// ids of different processes apart.
const TIME_CHARS = 9;
const COUNTER_CHARS = 4;
const RANDOM_CHARS = 24 - TIME_CHARS - COUNTER_CHARS;
const COUNTER_LIMIT = 36 ** COUNTER_CHARS;
let lastTime = 0;
let timePart = '';
let counter = 0;

function setTime(time: number) {
  lastTime = time;
  timePart = time.toString(36).padStart(TIME_CHARS, '0');
  counter = 0;
}

/**
 * A lower-case alphanumeric id of 24 characters that sorts after every id this process drew
 * before, like upstream's cuids. Rows keyed by such ids are added at the end of their indexes
 * rather than all over them, which touches (and writes to the WAL) far fewer index pages.
 */
export function newSortableId(): string {
  const now = Date.now();
  // A clock that steps back, or a counter that runs out, borrows the next millisecond, so the
  // order holds whatever the clock does.
  if (now > lastTime) setTime(now);
  else if (++counter === COUNTER_LIMIT) setTime(lastTime + 1);
  return timePart + counter.toString(36).padStart(COUNTER_CHARS, '0') + newId(RANDOM_CHARS);
}
