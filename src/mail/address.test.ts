import { describe, expect, it } from 'vitest';
import { addressOf, asciiHostname, domainOf, formatMailbox, isEmail, normalizeEmail, parseMailbox, splitAddressList } from './address.js';

const label63 = 'a'.repeat(63);

describe('asciiHostname', () => {
  it('an IDN domain becomes its punycode form', () => {
    expect(asciiHostname('bücher.de')).toBe('xn--bcher-kva.de');
    expect(asciiHostname('BÜCHER.de')).toBe('xn--bcher-kva.de');
    expect(asciiHostname('例子.广告')).toBe('xn--fsqu00a.xn--4rr70v');
  });

  it('an ASCII name comes back lower-cased, a punycode name as it is', () => {
    expect(asciiHostname('Mail.Example.COM')).toBe('mail.example.com');
    expect(asciiHostname('xn--bcher-kva.de')).toBe('xn--bcher-kva.de');
    expect(asciiHostname('a-b.c-d.example')).toBe('a-b.c-d.example');
  });

  it.each([
    [''],
    ['localhost'],
    ['example.com.'],
    ['.example.com'],
    ['a..example.com'],
    ['exa mple.com'],
    ['example.com\r\n'],
    ['exa\nmple.com'],
    ['a@example.com'],
    ['example.com/path'],
    ['exa\\mple.com'],
    ['[127.0.0.1]'],
    ['127.0.0.1'],
    ['example.123'],
    ['-example.com'],
    ['example-.com'],
    ['ex_ample.com'],
    ['example.com:25'],
    ['exa#mple.com'],
    ['xn--zz.com'],
  ])('%j is no host name', (name) => {
    expect(asciiHostname(name)).toBeNull();
  });

  it('a label holds at most 63 characters', () => {
    expect(asciiHostname(`${label63}.com`)).toBe(`${label63}.com`);
    expect(asciiHostname(`${label63}a.com`)).toBeNull();
  });

  it('a name holds at most 253 characters, counted in its ASCII form', () => {
    const longest = [label63, label63, label63, 'a'.repeat(61)].join('.');
    expect(longest).toHaveLength(253);
    expect(asciiHostname(longest)).toBe(longest);
    expect(asciiHostname(`${longest}a`)).toBeNull();
    // 60 Unicode characters but far more in punycode.
    expect(asciiHostname(`${'ü'.repeat(60)}.${'ü'.repeat(60)}.${'ü'.repeat(60)}.de`)).toBeNull();
  });

  it('asking twice gives the same answer (the memo keeps no wrong answer)', () => {
    expect(asciiHostname('Twice.Example')).toBe('twice.example');
    expect(asciiHostname('Twice.Example')).toBe('twice.example');
    expect(asciiHostname('twice..example')).toBeNull();
    expect(asciiHostname('twice..example')).toBeNull();
  });

  // node's domainToASCII reads a URL host and percent-decodes it: `ex%2Eample.com` would be stored
  // as written yet delivered to ex.ample.com.
  it('a percent-encoded name is no host name', () => {
    expect(asciiHostname('ex%61mple.com')).toBeNull();
    expect(asciiHostname('ex%2Eample.com')).toBeNull();
    expect(normalizeEmail('a@ex%2Eample.com')).toBeNull();
  });
});

describe('normalizeEmail', () => {
  it('trims, lower-cases the domain and keeps the local part as written', () => {
    expect(normalizeEmail('  Ada.Lovelace@Example.COM \n')).toBe('Ada.Lovelace@example.com');
  });

  it('an IDN domain is kept in Unicode, lower-cased', () => {
    expect(normalizeEmail('José.Müller@BÜCHER.De')).toBe('José.Müller@bücher.de');
    expect(normalizeEmail('用户@例子.广告')).toBe('用户@例子.广告');
  });

  it('atext local parts with every allowed special character are accepted', () => {
    expect(normalizeEmail("a!#$%&'*+/=?^_`{|}~-b.c@example.com")).toBe("a!#$%&'*+/=?^_`{|}~-b.c@example.com");
  });

  describe('an address with a quoted local part survives normalisation', () => {
    it.each([
      ['"john doe"@Example.com', '"john doe"@example.com'],
      ['"john..doe"@example.com', '"john..doe"@example.com'],
      ['"a@b"@example.com', '"a@b"@example.com'],
      ['"a\\"b"@example.com', '"a\\"b"@example.com'],
      ['"a,b"@example.com', '"a,b"@example.com'],
      ['""@example.com', '""@example.com'],
    ])('%s', (input, normalized) => {
      expect(normalizeEmail(input)).toBe(normalized);
    });
  });

  it.each([
    [''],
    ['   '],
    ['plain'],
    ['@example.com'],
    ['a@'],
    ['a@localhost'],
    ['.a@example.com'],
    ['a.@example.com'],
    ['a..b@example.com'],
    ['a b@example.com'],
    ['a\r\nb@example.com'],
    ['a@example.com\r\nBcc: x@evil.example'],
    ['a@exa\r\nmple.com'],
    ['"a\nb"@example.com'],
    ['"a"b"@example.com'],
    ['a"b@example.com'],
    ['a(b)@example.com'],
    ['a<b>@example.com'],
    ['a@[127.0.0.1]'],
    ['a@127.0.0.1'],
    ['a@example.com.'],
    ['a@ex_ample.com'],
    ['a@b@example.com'],
  ])('%j is refused', (input) => {
    expect(normalizeEmail(input)).toBeNull();
    expect(isEmail(input)).toBe(false);
  });

  it('a local part holds at most 64 bytes, counted in UTF-8', () => {
    expect(normalizeEmail(`${'a'.repeat(64)}@example.com`)).toBe(`${'a'.repeat(64)}@example.com`);
    expect(normalizeEmail(`${'a'.repeat(65)}@example.com`)).toBeNull();
    expect(normalizeEmail(`${'é'.repeat(32)}@example.com`)).toBe(`${'é'.repeat(32)}@example.com`);
    expect(normalizeEmail(`${'é'.repeat(33)}@example.com`)).toBeNull();
  });

  it('an address holds at most 254 characters', () => {
    const domain = [label63, label63, label63, 'a'.repeat(60)].join('.');
    expect(normalizeEmail(`x@${domain}`)).toBe(`x@${domain}`);
    expect(`x@${domain}`).toHaveLength(254);
    expect(normalizeEmail(`xy@${domain}`)).toBeNull();
  });

  it('isEmail agrees with normalizeEmail', () => {
    expect(isEmail(' a@Example.com ')).toBe(true);
    expect(isEmail('a@b')).toBe(false);
  });
});

describe('parseMailbox', () => {
  it.each([
    ['"Jo Smith" <a@X.com>', { name: 'Jo Smith', address: 'a@x.com' }],
    ['Jo Smith <a@X.com>', { name: 'Jo Smith', address: 'a@x.com' }],
    ['"Jo Smith"<a@x.com>', { name: 'Jo Smith', address: 'a@x.com' }],
    ['  <a@x.com>  ', { name: null, address: 'a@x.com' }],
    ['"" <a@x.com>', { name: null, address: 'a@x.com' }],
    ['a@X.com', { name: null, address: 'a@x.com' }],
    ['Jö Ünïcødé <a@bücher.de>', { name: 'Jö Ünïcødé', address: 'a@bücher.de' }],
    ['"Jo" <"john doe"@example.com>', { name: 'Jo', address: '"john doe"@example.com' }],
    ['"Jo > Bo" <a@x.com>', { name: 'Jo > Bo', address: 'a@x.com' }],
  ])('%j', (input, expected) => {
    expect(parseMailbox(input)).toStrictEqual(expected);
  });

  it.each([
    ['Jo a@x.com'],
    ['Jo <a@x.com'],
    ['Jo <a@x.com> extra'],
    ['Jo <<a@x.com>>'],
    ['Jo <a@x.com>, Bo <b@x.com>'],
    ['Jo <not-an-address>'],
    ['Jo <>'],
    [''],
  ])('%j is no mailbox', (input) => {
    expect(parseMailbox(input)).toBeNull();
  });
});

describe('formatMailbox', () => {
  it('a mailbox without a name is stored as its bare address', () => {
    expect(formatMailbox({ name: null, address: 'a@x.com' })).toBe('a@x.com');
    expect(formatMailbox({ name: '', address: 'a@x.com' })).toBe('a@x.com');
  });

  it('a mailbox with a name is stored quoted', () => {
    expect(formatMailbox({ name: 'Jo Smith', address: 'a@x.com' })).toBe('"Jo Smith" <a@x.com>');
    expect(formatMailbox({ name: 'Smith, Jo', address: 'a@x.com' })).toBe('"Smith, Jo" <a@x.com>');
  });

  it('a mailbox name with quotes is stored so it parses back to the same name', () => {
    const stored = formatMailbox({ name: 'He said "hi" \\o/', address: 'a@x.com' });
    expect(stored).toBe('"He said hi o/" <a@x.com>');
    expect(parseMailbox(stored)).toStrictEqual({ name: 'He said hi o/', address: 'a@x.com' });
    // Stored again, it does not change.
    expect(formatMailbox(parseMailbox(stored)!)).toBe(stored);
  });

  it('every mailbox that parses is stored in a form that parses back to the same name and address', () => {
    for (const input of [
      '"Jo Smith" <a@X.com>',
      'Smith, Jo <a@x.com>',
      '"Smith, Jo" <a@x.com>',
      'Jö Ünïcødé <a@bücher.de>',
      '"Jo" <"john doe"@example.com>',
      '"Jo > Bo" <a@x.com>',
      '"a\\b" <a@x.com>',
      '"=?UTF-8?B?SGk=?=" <a@x.com>',
      'a@x.com',
    ]) {
      const parsed = parseMailbox(input)!;
      expect(parsed, input).not.toBeNull();
      const reparsed = parseMailbox(formatMailbox(parsed));
      expect(reparsed?.address, input).toBe(parsed.address);
      expect(reparsed?.name, input).toBe(parsed.name?.replace(/["\\]/g, '') || null);
    }
  });

  it('a name with CR/LF is kept in one piece, so the MIME builder can encode it', () => {
    const stored = formatMailbox({ name: 'Jo\r\nBcc: victim@x.com', address: 'a@x.com' });
    expect(parseMailbox(stored)).toStrictEqual({ name: 'Jo\r\nBcc: victim@x.com', address: 'a@x.com' });
  });

  it('a mailbox name with "<" or ">" is stored so it parses back to the same address', () => {
    for (const name of ['a < b', 'a > b', '<b>', '<']) {
      const stored = formatMailbox({ name, address: 'x@y.com' });
      expect(parseMailbox(stored)?.address, name).toBe('x@y.com');
      expect(addressOf(stored), name).toBe('x@y.com');
    }
  });
});

describe('addressOf and domainOf', () => {
  it('the bare address of a stored mailbox, its domain in ASCII', () => {
    expect(addressOf('"Jö" <José@BÜCHER.de>')).toBe('José@xn--bcher-kva.de');
    expect(addressOf('a@bücher.de')).toBe('a@xn--bcher-kva.de');
    expect(addressOf('"Jo" <a@x.com>')).toBe('a@x.com');
    expect(addressOf('a@x.com')).toBe('a@x.com');
    expect(addressOf('"Jo" <"john doe"@example.com>')).toBe('"john doe"@example.com');
  });

  it('a string that is no mailbox comes back as it is', () => {
    expect(addressOf('junk')).toBe('junk');
  });

  it('the domain is what follows the last @', () => {
    expect(domainOf('a@x.com')).toBe('x.com');
    expect(domainOf('"a@b"@x.com')).toBe('x.com');
    expect(domainOf('a@bücher.de')).toBe('bücher.de');
  });
});

describe('splitAddressList', () => {
  it('splits at commas outside quotes and angle brackets, trims and drops empty parts', () => {
    expect(splitAddressList('"Smith, Jo" <j@x.com>, b@x.com,, <c,d@x.com> ,  ')).toStrictEqual(['"Smith, Jo" <j@x.com>', 'b@x.com', '<c,d@x.com>']);
  });

  it('a quoted local part with a comma is one address', () => {
    expect(splitAddressList('"a,b"@x.com, c@x.com')).toStrictEqual(['"a,b"@x.com', 'c@x.com']);
  });

  it('a < inside quotes opens no angle bracket', () => {
    expect(splitAddressList('"a<b" <a@x.com>, c@x.com')).toStrictEqual(['"a<b" <a@x.com>', 'c@x.com']);
  });

  it('nothing comes out of an empty or blank list', () => {
    expect(splitAddressList('')).toStrictEqual([]);
    expect(splitAddressList(' , ,')).toStrictEqual([]);
  });

  it('an escaped quote inside a quoted local part does not end the quotes', () => {
    expect(splitAddressList('"a\\"b"@x.com, c@x.com')).toStrictEqual(['"a\\"b"@x.com', 'c@x.com']);
    expect(splitAddressList('"a\\\\"@x.com, "Jo \\"J\\"" <c@x.com>, d@x.com')).toStrictEqual(['"a\\\\"@x.com', '"Jo \\"J\\"" <c@x.com>', 'd@x.com']);
  });
});
