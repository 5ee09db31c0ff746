import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { ApiError } from '../errors.js';

// scrypt with N=2^15, r=8: 32 MiB and tens of milliseconds per guess, the cost OWASP names for
// scrypt. The parameters are stored with each hash, so raising them later leaves old ones readable.
const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;

// scrypt runs on libuv's pool of 4 threads, which file I/O (PGlite's), DNS lookups and DKIM signing
// share: a burst of sign-ins would hold every thread for as long as it lasts. So at most RUNNING
// derivations run at once and at most WAITING wait their turn; past that one is refused at once.
const RUNNING = 2;
const WAITING = 32;
/** How soon a derivation refused for a full queue may be tried again: the queue drains in about that. */
export const BUSY_RETRY_SECONDS = 2;

let running = 0;
const waiting: Array<() => void> = [];

async function inTurn<T>(work: () => Promise<T>): Promise<T> {
  if (running < RUNNING) running++;
  else if (waiting.length < WAITING) await new Promise<void>((resolve) => waiting.push(resolve));
  else throw new ApiError('RATE_LIMITED', 'Too many sign-in attempts, try again shortly');
  try {
    return await work();
  } finally {
    // The slot passes straight to the next in line, so nothing can overtake the queue.
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/** Every use of the KDF comes through here: it waits its turn, or is refused (RATE_LIMITED) when too many wait. */
function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r };
  return inTurn(() => new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, KEY_LENGTH, options, (error, key) => (error ? reject(error) : resolve(key)))));
}

/** `scrypt$N$r$p$salt$key`, salt and key in base64url. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

const STORED = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([\w-]+)\$([\w-]+)$/;

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const match = STORED.exec(stored);
  if (!match) return false;
  const [, n, r, p, salt, key] = match;
  const expected = Buffer.from(key!, 'base64url');
  const actual = await derive(password, Buffer.from(salt!, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

// Compared against when the address is unknown, so a wrong address costs what a wrong password
// does and the time of the answer does not tell which addresses have accounts. Made once; a making
// refused for a full queue is not kept, so the next sign-in makes it.
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex')).catch((error: unknown) => {
    decoy = undefined;
    throw error;
  });
  return decoy;
}
