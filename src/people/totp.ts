import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

// One-time codes of authenticator apps: HOTP (RFC 4226) over the time step (RFC 6238), with the
// parameters every app supports: HMAC-SHA-1, 6 digits, steps of 30 seconds.
export const DIGITS = 6;
export const PERIOD_SECONDS = 30;
// A code of the step before or after the server's is accepted too: the phone's clock and the
// person's typing may be that far off.
const DRIFT_STEPS = 1;
const SECRET_BYTES = 20;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 without padding, as authenticator apps take secrets. */
export function base32Encode(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let text = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      text += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) text += BASE32[(value << (5 - bits)) & 31];
  return text;
}

export function base32Decode(text: string): Buffer {
  const bytes: number[] = [];
  let bits = 0;
  let value = 0;
  for (const char of text.replace(/=+$/, '').toUpperCase()) {
    const digit = BASE32.indexOf(char);
    if (digit < 0) throw new Error('Not base32 text');
    value = ((value << 5) | digit) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(bytes);
}

/** A new secret: 160 random bits (the length RFC 4226 recommends), in base32. */
export const newTotpSecret = () => base32Encode(randomBytes(SECRET_BYTES));

/** RFC 4226: the HMAC-SHA-1 of the 8-byte counter, dynamically truncated to `digits` decimal digits. */
export function hotp(key: Buffer, counter: number, digits = DIGITS): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', key).update(message).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

const CODE = new RegExp(`^\\d{${DIGITS}}$`);
/** Whether the text has the form of a code (its digits), not whether it is right. */
export const looksLikeTotpCode = (text: string) => CODE.test(text);

/** RFC 6238: the number of whole periods since the epoch. */
export const timeStep = (at: Date) => Math.floor(at.getTime() / 1000 / PERIOD_SECONDS);

/**
 * The time step whose code `code` is, within DRIFT_STEPS of `at`'s; null when none is. Every
 * candidate is compared, in constant time, so the answer's timing does not tell which matched.
 */
export function matchingStep(secret: string, code: string, at: Date): number | null {
  if (!looksLikeTotpCode(code)) return null;
  const key = base32Decode(secret);
  const now = timeStep(at);
  let found: number | null = null;
  for (let step = now - DRIFT_STEPS; step <= now + DRIFT_STEPS; step++) {
    if (timingSafeEqual(Buffer.from(hotp(key, step)), Buffer.from(code)) && found === null) found = step;
  }
  return found;
}

/** The URI authenticator apps read (Key Uri Format), for the person to paste or type. */
export function otpauthUri(issuer: string, account: string, secret: string): string {
  // '@' may stand in a URI's path as it is: the address reads as typed.
  const label = [issuer, account].map((part) => encodeURIComponent(part).replace(/%40/g, '@')).join(':');
  const params = new URLSearchParams({ secret, issuer, algorithm: 'SHA1', digits: String(DIGITS), period: String(PERIOD_SECONDS) });
  return `otpauth://totp/${label}?${params}`;
}
