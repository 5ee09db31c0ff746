import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RecipientTokens, type LinkFields } from './tokens.js';

const SECRET = 'test-secret';
const tokens = new RecipientTokens(SECRET);

/** A token made by hand, the way the wire format is specified: base64url JSON, a dot, HMAC-SHA256 of that text. */
function forge(body: unknown, secret = SECRET): string {
  const encoded = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)).toString('base64url');
  return `${encoded}.${createHmac('sha256', secret).update(encoded).digest('base64url')}`;
}

const bodyOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as unknown;

const unsubscribe: LinkFields['unsubscribe'] = { teamId: 7, campaignId: 'cmp1', emailId: 'em1', bookId: 'bk1', contactId: 'ct1' };
const confirm: LinkFields['confirm'] = { teamId: 7, bookId: 'bk1', contactId: 'ct1', expiresAt: 1_700_000_000_000 };
const open: LinkFields['open'] = { emailId: 'em1' };
const click: LinkFields['click'] = { emailId: 'em1', url: 'https://example.com/a?b=1&c=2' };

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('RecipientTokens', () => {
  it('a signed token of each kind verifies to exactly the fields it was signed with', () => {
    expect(tokens.verify(tokens.sign('unsubscribe', unsubscribe), 'unsubscribe')).toStrictEqual(unsubscribe);
    expect(tokens.verify(tokens.sign('confirm', confirm), 'confirm')).toStrictEqual(confirm);
    expect(tokens.verify(tokens.sign('open', open), 'open')).toStrictEqual(open);
    expect(tokens.verify(tokens.sign('click', click), 'click')).toStrictEqual(click);
  });

  it('a token is URL-safe: base64url body, one dot, base64url signature', () => {
    const token = tokens.sign('click', { emailId: 'em1', url: 'https://example.com/ü?x=<>&y=ÿÿÿ' });
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  });

  describe('the wire format stays compatible with links already in inboxes', () => {
    it('an unsubscribe token written by hand with the documented letters verifies', () => {
      const token = forge('{"k":"u","t":1,"m":"c","e":"e","b":"b","c":"c"}');
      expect(tokens.verify(token, 'unsubscribe')).toStrictEqual({ teamId: 1, campaignId: 'c', emailId: 'e', bookId: 'b', contactId: 'c' });
    });

    it('signing writes that same body, byte for byte, so the token is the same string', () => {
      const token = tokens.sign('unsubscribe', { teamId: 1, campaignId: 'c', emailId: 'e', bookId: 'b', contactId: 'c' });
      expect(token).toBe(forge('{"k":"u","t":1,"m":"c","e":"e","b":"b","c":"c"}'));
    });

    it('a token issued before is still believed (fixed test vector)', () => {
      // Computed once with secret "test-secret"; if this changes, every link already sent breaks.
      const issued = 'eyJrIjoidSIsInQiOjEsIm0iOiJjIiwiZSI6ImUiLCJiIjoiYiIsImMiOiJjIn0.GyaB6PuZI8YUFTV2eNOVnHRLSnjlLuBGDspHT1OT36Q';
      expect(tokens.verify(issued, 'unsubscribe')).toStrictEqual({ teamId: 1, campaignId: 'c', emailId: 'e', bookId: 'b', contactId: 'c' });
    });

    it('each kind has its one-letter tag and one-letter keys', () => {
      expect(bodyOf(tokens.sign('unsubscribe', unsubscribe))).toStrictEqual({ k: 'u', t: 7, m: 'cmp1', e: 'em1', b: 'bk1', c: 'ct1' });
      expect(bodyOf(tokens.sign('confirm', confirm))).toStrictEqual({ k: 'c', t: 7, b: 'bk1', c: 'ct1', x: 1_700_000_000_000 });
      expect(bodyOf(tokens.sign('open', open))).toStrictEqual({ k: 'o', e: 'em1' });
      expect(bodyOf(tokens.sign('click', click))).toStrictEqual({ k: 'l', e: 'em1', u: 'https://example.com/a?b=1&c=2' });
    });

    it('hand-written confirm, open and click tokens verify as their kind', () => {
      expect(tokens.verify(forge({ k: 'c', t: 3, b: 'b', c: 'c', x: 5 }), 'confirm')).toStrictEqual({ teamId: 3, bookId: 'b', contactId: 'c', expiresAt: 5 });
      expect(tokens.verify(forge({ k: 'o', e: 'e1' }), 'open')).toStrictEqual({ emailId: 'e1' });
      expect(tokens.verify(forge({ k: 'l', e: 'e1', u: 'https://x.example/' }), 'click')).toStrictEqual({ emailId: 'e1', url: 'https://x.example/' });
    });
  });

  describe('a tampered token is never believed', () => {
    it('a token signed under another secret is refused', () => {
      const other = new RecipientTokens('another-secret');
      expect(tokens.verify(other.sign('open', open), 'open')).toBeNull();
      expect(tokens.verify(forge({ k: 'o', e: 'em1' }, 'test-secreT'), 'open')).toBeNull();
    });

    it('a body changed in any one character is refused', () => {
      const token = tokens.sign('unsubscribe', unsubscribe);
      const [body, mac] = token.split('.') as [string, string];
      for (let i = 0; i < body.length; i++) {
        const replacement = BASE64URL[(BASE64URL.indexOf(body[i]!) + 1) % 64]!;
        const tampered = `${body.slice(0, i)}${replacement}${body.slice(i + 1)}.${mac}`;
        expect(tokens.verify(tampered, 'unsubscribe'), `body character ${i}`).toBeNull();
      }
    });

    it('a body re-encoded with other fields keeps no signature: changing the team id is refused', () => {
      const token = tokens.sign('unsubscribe', unsubscribe);
      const mac = token.split('.')[1]!;
      const forged = Buffer.from(JSON.stringify({ k: 'u', t: 8, m: 'cmp1', e: 'em1', b: 'bk1', c: 'ct1' })).toString('base64url');
      expect(tokens.verify(`${forged}.${mac}`, 'unsubscribe')).toBeNull();
    });

    it('a signature changed in any one character is refused, the last one included', () => {
      const token = tokens.sign('open', open);
      const [body, mac] = token.split('.') as [string, string];
      expect(mac).toHaveLength(43);
      for (let i = 0; i < mac.length; i++) {
        for (const replacement of BASE64URL) {
          if (replacement === mac[i]) continue;
          const tampered = `${body}.${mac.slice(0, i)}${replacement}${mac.slice(i + 1)}`;
          expect(tokens.verify(tampered, 'open'), `signature character ${i} as ${replacement}`).toBeNull();
        }
      }
    });

    // 43 base64url characters carry 258 bits for a 256-bit MAC, and base64url decoding forgives
    // padding, the standard alphabet and characters that are no base64: a signature compared as
    // decoded bytes would let all of these through. A token has exactly one accepted spelling.
    it('no other spelling of a signature is accepted (the last character\'s spare bits, +/ for -_, padding, junk)', () => {
      const token = tokens.sign('open', open);
      const [body, mac] = token.split('.') as [string, string];
      const last = BASE64URL.indexOf(mac.at(-1)!);
      const spellings = [
        `${mac.slice(0, -1)}${BASE64URL[last ^ 1]}`,
        `${mac.slice(0, -1)}${BASE64URL[last ^ 2]}`,
        `${mac}=`,
        `${mac.slice(0, 10)}!${mac.slice(10)}`,
        `${mac.slice(0, 10)} ${mac.slice(10)}`,
        // The standard alphabet with its padding.
        Buffer.from(mac, 'base64url').toString('base64'),
      ];
      // The spellings really do decode to the same MAC, so only a comparison of the text refuses them.
      const bytes = Buffer.from(mac, 'base64url');
      for (const spelling of spellings) expect(Buffer.from(spelling, 'base64url').equals(bytes), spelling).toBe(true);
      for (const spelling of spellings) expect(tokens.verify(`${body}.${spelling}`, 'open'), spelling).toBeNull();
    });

    it('a truncated or extended signature is refused', () => {
      const token = tokens.sign('open', open);
      expect(tokens.verify(token.slice(0, -4), 'open')).toBeNull();
      expect(tokens.verify(`${token}AAAA`, 'open')).toBeNull();
    });

    it('malformed tokens are refused, not thrown on', () => {
      const token = tokens.sign('open', open);
      for (const bad of ['', '.', 'abc', `${token}.`, `${token}.x`, `.${token.split('.')[1]}`, `${token.split('.')[0]}.`, '...', '\u0000.\u0000']) {
        expect(tokens.verify(bad, 'open'), JSON.stringify(bad)).toBeNull();
      }
    });

    it('a validly signed body that is not a JSON object is refused', () => {
      for (const body of ['not json', 'null', '42', '"o"', '[]', '["o","em1"]', 'true', '{"k":"o","e":']) {
        expect(tokens.verify(forge(body), 'open'), body).toBeNull();
      }
    });
  });

  describe('a token is only believed as the kind it was made for', () => {
    it('a token of one kind is refused as every other kind', () => {
      const signed = {
        unsubscribe: tokens.sign('unsubscribe', unsubscribe),
        confirm: tokens.sign('confirm', confirm),
        open: tokens.sign('open', open),
        click: tokens.sign('click', click),
      };
      const kinds = Object.keys(signed) as (keyof typeof signed)[];
      for (const made of kinds) {
        for (const asked of kinds) {
          if (made !== asked) expect(tokens.verify(signed[made], asked), `${made} as ${asked}`).toBeNull();
        }
      }
    });

    it('a click token, which carries every field of an open token, is still not an open', () => {
      expect(tokens.verify(tokens.sign('click', click), 'open')).toBeNull();
    });

    it('a body with every field of a kind but another tag, or none, is refused', () => {
      expect(tokens.verify(forge({ k: 'l', e: 'em1' }), 'open')).toBeNull();
      expect(tokens.verify(forge({ e: 'em1' }), 'open')).toBeNull();
      expect(tokens.verify(forge({ k: 'O', e: 'em1' }), 'open')).toBeNull();
      expect(tokens.verify(forge({ k: 'open', e: 'em1' }), 'open')).toBeNull();
    });
  });

  describe('every field of the kind must be present and of its type', () => {
    const valid = { k: 'u', t: 1, m: 'c', e: 'e', b: 'b', c: 'c' };

    it('a missing field is refused', () => {
      for (const key of ['t', 'm', 'e', 'b', 'c']) {
        const body: Record<string, unknown> = { ...valid };
        delete body[key];
        expect(tokens.verify(forge(body), 'unsubscribe'), `without ${key}`).toBeNull();
      }
    });

    it('a number field given as a string is refused (team id "1")', () => {
      expect(tokens.verify(forge({ ...valid, t: '1' }), 'unsubscribe')).toBeNull();
      expect(tokens.verify(forge({ k: 'c', t: 1, b: 'b', c: 'c', x: '5' }), 'confirm')).toBeNull();
    });

    it('a string field given as a number, null, array or object is refused', () => {
      for (const wrong of [1, null, ['e'], { e: 'e' }, true]) {
        expect(tokens.verify(forge({ ...valid, e: wrong }), 'unsubscribe'), JSON.stringify(wrong)).toBeNull();
      }
      expect(tokens.verify(forge({ k: 'l', e: 'em1', u: null }), 'click')).toBeNull();
    });

    it('wire keys that are not fields of the kind never reach the caller', () => {
      const verified = tokens.verify(forge('{"k":"o","e":"em1","u":"https://evil.example/","t":1,"__proto__":{"x":1}}'), 'open');
      expect(verified).toStrictEqual({ emailId: 'em1' });
    });
  });
  describe('address tags (VERP return paths, the List-Unsubscribe mailto, the feedback header)', () => {
    it('a tag is 16 lower-case hex digits of the HMAC-SHA256 of "address:" and the email id', () => {
      const expected = createHmac('sha256', SECRET).update('address:em1').digest('hex').slice(0, 16);
      expect(tokens.addressTag('em1')).toBe(expected);
      expect(tokens.addressTag('em1')).toMatch(/^[0-9a-f]{16}$/);
    });

    it('an address tag issued before still checks (fixed test vector)', () => {
      // Computed once with secret "test-secret"; bounces of mail already sent come back with it.
      expect(tokens.addressTag('em1')).toBe('4e0b2b6fc6e24d4d');
      expect(tokens.checkAddressTag('em1', '4e0b2b6fc6e24d4d')).toBe(true);
    });

    it('a tag checks for its email in any case, since mail servers change the case of local parts', () => {
      const tag = tokens.addressTag('em1');
      expect(tokens.checkAddressTag('em1', tag)).toBe(true);
      expect(tokens.checkAddressTag('em1', tag.toUpperCase())).toBe(true);
    });

    it('a tag made for one email, or under another secret, never speaks for another', () => {
      expect(tokens.checkAddressTag('em2', tokens.addressTag('em1'))).toBe(false);
      expect(tokens.checkAddressTag('em1', new RecipientTokens('another-secret').addressTag('em1'))).toBe(false);
    });

    it('a tag changed in any one digit, shortened, lengthened or empty is refused', () => {
      const tag = tokens.addressTag('em1');
      for (let i = 0; i < tag.length; i++) {
        const changed = `${tag.slice(0, i)}${tag[i] === '0' ? '1' : '0'}${tag.slice(i + 1)}`;
        expect(tokens.checkAddressTag('em1', changed), changed).toBe(false);
      }
      expect(tokens.checkAddressTag('em1', tag.slice(0, -1))).toBe(false);
      expect(tokens.checkAddressTag('em1', `${tag}0`)).toBe(false);
      expect(tokens.checkAddressTag('em1', '')).toBe(false);
      expect(tokens.checkAddressTag('em1', 'é'.repeat(8))).toBe(false);
    });

    it('an address tag is no link token, and a link signature is no address tag', () => {
      const tag = tokens.addressTag('em1');
      expect(tokens.verify(tag, 'open')).toBeNull();
      const mac = tokens.sign('open', open).split('.')[1]!;
      expect(tokens.checkAddressTag('em1', Buffer.from(mac, 'base64url').toString('hex').slice(0, 16))).toBe(false);
    });
  });
});
