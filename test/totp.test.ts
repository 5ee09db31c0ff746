import { describe, expect, it } from 'vitest';
import { base32Decode, base32Encode, hotp, matchingStep, otpauthUri, timeStep } from '../src/people/totp.js';

// The secret of both RFCs' test vectors: the ASCII of "12345678901234567890".
const KEY = Buffer.from('12345678901234567890', 'ascii');
const SECRET = base32Encode(KEY);

describe('HOTP and TOTP as the RFCs define them', () => {
  it('HOTP gives the values of RFC 4226 Appendix D for counters 0 to 9', () => {
    const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
    expect(expected.map((_, counter) => hotp(KEY, counter))).toEqual(expected);
  });

  // RFC 6238 Appendix B, SHA-1 column: 8-digit values; a 6-digit code is their last six digits.
  const APPENDIX_B: Array<[seconds: number, code: string]> = [
    [59, '94287082'],
    [1111111109, '07081804'],
    [1111111111, '14050471'],
    [1234567890, '89005924'],
    [2000000000, '69279037'],
    [20000000000, '65353130'],
  ];

  it('TOTP gives the SHA-1 values of RFC 6238 Appendix B, in 8 digits and in the 6 Mailroom uses', () => {
    for (const [seconds, code] of APPENDIX_B) {
      const step = timeStep(new Date(seconds * 1000));
      expect(hotp(KEY, step, 8), `T=${seconds}`).toBe(code);
      expect(hotp(KEY, step), `T=${seconds}`).toBe(code.slice(-6));
    }
  });

  it('a code is accepted in its own 30-second step and the one before and after, never further off', () => {
    const at = new Date(1111111111 * 1000);
    const step = timeStep(at);
    for (const offset of [-1, 0, 1]) expect(matchingStep(SECRET, hotp(KEY, step + offset), at), `offset ${offset}`).toBe(step + offset);
    for (const offset of [-3, -2, 2, 3]) expect(matchingStep(SECRET, hotp(KEY, step + offset), at), `offset ${offset}`).toBeNull();
  });

  it('only six digits are a code: shorter, longer or lettered input matches nothing', () => {
    const at = new Date(59_000);
    const code = hotp(KEY, timeStep(at));
    for (const typed of ['', code.slice(1), `${code}0`, `94${code}`, code.replace(/^./, 'a'), ` ${code}`]) expect(matchingStep(SECRET, typed, at), typed).toBeNull();
  });

  it('base32 (RFC 4648 test vectors) round-trips, and the secret is the RFC key', () => {
    const vectors: Array<[string, string]> = [['', ''], ['f', 'MY'], ['fo', 'MZXQ'], ['foo', 'MZXW6'], ['foob', 'MZXW6YQ'], ['fooba', 'MZXW6YTB'], ['foobar', 'MZXW6YTBOI']];
    for (const [plain, encoded] of vectors) {
      expect(base32Encode(Buffer.from(plain))).toBe(encoded);
      expect(base32Decode(encoded).toString()).toBe(plain);
    }
    expect(SECRET).toBe('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
  });

  it('the otpauth URI names Mailroom and the address, with the secret and the parameters the apps need', () => {
    expect(otpauthUri('Mailroom', 'ann@example.test', SECRET)).toBe(
      `otpauth://totp/Mailroom:ann@example.test?secret=${SECRET}&issuer=Mailroom&algorithm=SHA1&digits=6&period=30`,
    );
  });
});
