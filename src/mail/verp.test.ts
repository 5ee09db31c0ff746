import { describe, expect, it } from 'vitest';
import { RecipientTokens } from './tokens.js';
import {
  bounceAddress,
  FEEDBACK_TAG_HEADER,
  feedbackTagValue,
  parseFeedbackTag,
  parseVerp,
  returnPathHost,
  unsubscribeAddress,
} from './verp.js';

const TAG = '0123456789abcdef';
const tagged = { emailId: 'k3j4h5g6f7d8s9a0q1w2e3r4', tag: TAG };

describe('VERP addresses', () => {
  it('the return-path host is the subdomain of the sending domain', () => {
    expect(returnPathHost('example.com', 'mail')).toBe('mail.example.com');
  });

  it('a bounce and an unsubscribe address name their email and its tag on the return-path host', () => {
    expect(bounceAddress({ emailId: '01hx9abc', tag: TAG }, 'example.com', 'mail')).toBe('bounces+01hx9abc.0123456789abcdef@mail.example.com');
    expect(unsubscribeAddress({ emailId: '01hx9abc', tag: TAG }, 'example.com', 'bounce')).toBe('unsubscribe+01hx9abc.0123456789abcdef@bounce.example.com');
  });

  it('what Mailroom writes, it reads back to the same email and tag', () => {
    expect(parseVerp(bounceAddress(tagged, 'example.com', 'mail'))).toStrictEqual({ kind: 'bounces', ...tagged, host: 'mail.example.com' });
    expect(parseVerp(unsubscribeAddress(tagged, 'example.com', 'mail'))).toStrictEqual({ kind: 'unsubscribe', ...tagged, host: 'mail.example.com' });
    expect(parseVerp('fbl@mail.example.com')).toStrictEqual({ kind: 'fbl', host: 'mail.example.com' });
  });

  it('an address made with a real tag proves its email, and only that email', () => {
    const tokens = new RecipientTokens('test-secret');
    const parsed = parseVerp(bounceAddress({ emailId: 'email123', tag: tokens.addressTag('email123') }, 'example.com', 'mail'));
    expect(parsed?.kind).toBe('bounces');
    if (parsed?.kind !== 'bounces') return;
    expect(tokens.checkAddressTag(parsed.emailId, parsed.tag)).toBe(true);
    expect(tokens.checkAddressTag('email124', parsed.tag)).toBe(false);
    expect(new RecipientTokens('other-secret').checkAddressTag(parsed.emailId, parsed.tag)).toBe(false);
  });

  describe('parsing is case-insensitive where mail servers change case', () => {
    it('an upper-case address still names the email; kind, tag and host come back lower-case', () => {
      expect(parseVerp('BOUNCES+abc123.0123456789ABCDEF@MAIL.Example.COM')).toStrictEqual({
        kind: 'bounces',
        emailId: 'abc123',
        tag: '0123456789abcdef',
        host: 'mail.example.com',
      });
      expect(parseVerp('UnSubscribe+abc123.0123456789abcdef@mail.example.com')).toStrictEqual({
        kind: 'unsubscribe',
        emailId: 'abc123',
        tag: '0123456789abcdef',
        host: 'mail.example.com',
      });
      expect(parseVerp('FBL@Mail.Example.com')).toStrictEqual({ kind: 'fbl', host: 'mail.example.com' });
    });

    it('an upper-cased tag still checks against its email', () => {
      const tokens = new RecipientTokens('test-secret');
      const address = bounceAddress({ emailId: 'email123', tag: tokens.addressTag('email123') }, 'example.com', 'mail').toUpperCase();
      const parsed = parseVerp(address);
      if (parsed?.kind !== 'bounces') throw new Error(`not parsed: ${address}`);
      // The id comes back as the server wrote it; the tag is case-free.
      expect(parsed.emailId).toBe('EMAIL123');
      expect(tokens.checkAddressTag('email123', parsed.tag)).toBe(true);
    });

    it('the email id is given back exactly as written (ids are compared as stored)', () => {
      expect(parseVerp(`bounces+AbC_1-2.${TAG}@h.example`)).toStrictEqual({ kind: 'bounces', emailId: 'AbC_1-2', tag: TAG, host: 'h.example' });
    });
  });

  describe('foreign local parts are refused', () => {
    it.each([
      ['postmaster@mail.example.com'],
      ['bounces@mail.example.com'],
      ['bounces+@mail.example.com'],
      [`bounces+.${TAG}@mail.example.com`],
      [`bounce+abc123.${TAG}@mail.example.com`],
      [`bounces-abc123.${TAG}@mail.example.com`],
      [`bouncesx+abc123.${TAG}@mail.example.com`],
      [`xbounces+abc123.${TAG}@mail.example.com`],
      [`bounces+abc123.${TAG}+x@mail.example.com`],
      [`bounces+abc+123.${TAG}@mail.example.com`],
      [`bounces+abc 123.${TAG}@mail.example.com`],
      [`bounces+abc123.${TAG}\r\n@mail.example.com`],
      [`"bounces+abc123.${TAG}"@mail.example.com`],
      [`unsubscribe+abc/123.${TAG}@mail.example.com`],
      [`fbl+abc123.${TAG}@mail.example.com`],
      ['fbl2@mail.example.com'],
      [`x@bounces+abc123.${TAG}@mail.example.com`],
    ])('%j is none of Mailroom\'s', (address) => {
      expect(parseVerp(address)).toBeNull();
    });

    it('an untagged address is refused: knowing an email\'s id is not enough', () => {
      expect(parseVerp('bounces+abc123@mail.example.com')).toBeNull();
      expect(parseVerp('unsubscribe+abc123@mail.example.com')).toBeNull();
    });

    it('a tag that is not 16 hex digits is refused', () => {
      for (const tag of ['0123456789abcde', '0123456789abcdef0', '0123456789abcdeg', '', '0123456789abcde-']) {
        expect(parseVerp(`bounces+abc123.${tag}@h.example`), tag).toBeNull();
      }
    });

    it('an email id of fewer than 3 or more than 64 characters is refused; 3 and 64 are read', () => {
      expect(parseVerp(`bounces+ab.${TAG}@h.example`)).toBeNull();
      expect(parseVerp(`bounces+${'a'.repeat(65)}.${TAG}@h.example`)).toBeNull();
      expect(parseVerp(`bounces+abc.${TAG}@h.example`)).toStrictEqual({ kind: 'bounces', emailId: 'abc', tag: TAG, host: 'h.example' });
      expect(parseVerp(`bounces+${'a'.repeat(64)}.${TAG}@h.example`)).toStrictEqual({ kind: 'bounces', emailId: 'a'.repeat(64), tag: TAG, host: 'h.example' });
    });

    it('an email id with non-ASCII letters is refused', () => {
      expect(parseVerp(`bounces+abcé12.${TAG}@h.example`)).toBeNull();
    });

    it('an address without a local part or without a host is refused', () => {
      expect(parseVerp('')).toBeNull();
      expect(parseVerp('fbl')).toBeNull();
      expect(parseVerp('@mail.example.com')).toBeNull();
      expect(parseVerp(`bounces+abc123.${TAG}@`)).toBeNull();
      expect(parseVerp('fbl@')).toBeNull();
    });
  });
});

describe('the feedback tag header', () => {
  it('is X-Mailroom-Feedback and carries the id and tag as the return path does', () => {
    expect(FEEDBACK_TAG_HEADER).toBe('X-Mailroom-Feedback');
    expect(feedbackTagValue(tagged)).toBe('k3j4h5g6f7d8s9a0q1w2e3r4.0123456789abcdef');
  });

  it('reads back to the same id and tag, trimmed, the tag lower-cased', () => {
    expect(parseFeedbackTag(feedbackTagValue(tagged))).toStrictEqual(tagged);
    expect(parseFeedbackTag('  AbC123.0123456789ABCDEF \r\n')).toStrictEqual({ emailId: 'AbC123', tag: '0123456789abcdef' });
  });

  it.each([
    [''],
    ['abc123'],
    ['abc123.'],
    [`.${TAG}`],
    [`ab.${TAG}`],
    [`abc123.${TAG}0`],
    [`abc123.${TAG.slice(1)}`],
    [`abc123.${TAG.slice(1)}g`],
    [`abc123.${TAG}; x`],
    [`abc 123.${TAG}`],
    [`abc.123.${TAG}`],
    [`<abc123.${TAG}>`],
  ])('%j is no feedback tag', (value) => {
    expect(parseFeedbackTag(value)).toBeNull();
  });
});
