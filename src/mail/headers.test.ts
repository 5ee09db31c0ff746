import { describe, expect, it } from 'vitest';
import { isOwnHeader, isTrustHeader, OWN_HEADER_PREFIXES, OWN_HEADERS, TRUST_HEADER_PREFIXES, TRUST_HEADERS } from './headers.js';
import { buildMessage, type OutgoingEmail } from './mime.js';
import { FEEDBACK_TAG_HEADER } from './verp.js';

/** Every header field name of a message and of its MIME parts (lines that start a field). */
function fieldNames(message: string): string[] {
  const names = new Set<string>();
  const blocks = message.split(/\r\n--[^\r\n]+\r\n/);
  for (const block of blocks) {
    const head = block.split('\r\n\r\n')[0]!;
    for (const line of head.split('\r\n')) {
      const match = /^([!-9;-~]+):/.exec(line);
      if (match) names.add(match[1]!);
    }
  }
  return [...names];
}

describe('the header names Mailroom owns', () => {
  it('every listed name is owned whatever its case', () => {
    for (const name of OWN_HEADERS) {
      expect(isOwnHeader(name), name).toBe(true);
      expect(isOwnHeader(name.toUpperCase()), name.toUpperCase()).toBe(true);
    }
    expect(isOwnHeader('fRoM')).toBe(true);
    expect(isOwnHeader('Message-ID')).toBe(true);
    expect(isOwnHeader('DKIM-Signature')).toBe(true);
    expect(isOwnHeader('BCC')).toBe(true);
  });

  it('the addressing, identity and signature fields are all owned', () => {
    for (const name of ['From', 'To', 'Cc', 'Bcc', 'Subject', 'Date', 'Message-ID', 'Return-Path', 'DKIM-Signature', 'MIME-Version', 'Sender', 'Reply-To']) {
      expect(isOwnHeader(name), name).toBe(true);
    }
  });

  it('a caller cannot forge the feedback tag header that proves a report is about our mail', () => {
    expect(isOwnHeader(FEEDBACK_TAG_HEADER)).toBe(true);
    expect(isOwnHeader('x-mailroom-feedback')).toBe(true);
    expect(isOwnHeader('X-MAILROOM-FEEDBACK')).toBe(true);
  });

  it('any Content-* and List-Unsubscribe* field is owned', () => {
    expect(OWN_HEADER_PREFIXES).toStrictEqual(['content-', 'list-unsubscribe']);
    for (const name of ['Content-Type', 'content-transfer-encoding', 'Content-Disposition', 'CONTENT-ID', 'Content-X-Anything', 'List-Unsubscribe', 'List-Unsubscribe-Post', 'list-unsubscribe-anything']) {
      expect(isOwnHeader(name), name).toBe(true);
    }
  });

  it('a caller\'s own fields are not owned', () => {
    for (const name of ['X-Campaign', 'X-Mailer', 'In-Reply-To', 'References', 'List-Id', 'List-Help', 'Contents', 'Content', 'Fromage', 'X-From', 'Subjects', 'Precedence', 'Auto-Submitted']) {
      expect(isOwnHeader(name), name).toBe(false);
    }
  });

  it('every header field the MIME builder writes is one a caller may not set', () => {
    const email: OutgoingEmail = {
      id: 'e1',
      from: '"Sender" <s@example.com>',
      to: ['t@example.com'],
      cc: ['c@example.com'],
      bcc: ['b@example.com'],
      replyTo: ['r@example.com'],
      subject: 'Hello',
      html: '<p>Hi</p>',
      text: 'Hi',
      headers: {},
      attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: 'aGk=' }],
      messageId: '<e1@example.com>',
    };
    const names = fieldNames(buildMessage(email, new Date(0)).toString());
    expect(names).toEqual(expect.arrayContaining(['From', 'To', 'Cc', 'Reply-To', 'Subject', 'Date', 'Message-ID', 'MIME-Version', 'Content-Type', 'Content-Transfer-Encoding', 'Content-Disposition']));
    for (const name of names) expect(isOwnHeader(name), name).toBe(true);
  });
});

describe('the header names receiving servers own', () => {
  it('a caller cannot fake authentication results, a trace or a receipt address, in any case', () => {
    for (const name of ['Received', 'Received-SPF', 'Authentication-Results', 'DomainKey-Signature', 'Delivered-To', 'X-Original-To', 'Return-Receipt-To', 'Disposition-Notification-To', 'Errors-To']) {
      expect(isTrustHeader(name), name).toBe(true);
      expect(isTrustHeader(name.toUpperCase()), name.toUpperCase()).toBe(true);
      expect(isTrustHeader(name.toLowerCase()), name.toLowerCase()).toBe(true);
    }
    for (const name of TRUST_HEADERS) expect(isTrustHeader(name), name).toBe(true);
  });

  it('any ARC-* and Resent-* field is a trust field', () => {
    expect(TRUST_HEADER_PREFIXES).toStrictEqual(['arc-', 'resent-']);
    for (const name of ['ARC-Seal', 'ARC-Message-Signature', 'arc-authentication-results', 'Resent-From', 'Resent-To', 'RESENT-MESSAGE-ID', 'Resent-Date']) {
      expect(isTrustHeader(name), name).toBe(true);
    }
  });

  it('a caller\'s own fields, and names that only start alike, are not trust fields', () => {
    for (const name of ['X-Campaign', 'In-Reply-To', 'References', 'List-Id', 'Archive', 'Arc', 'Resentment', 'Receiveds', 'X-Received-Note', 'Errors']) {
      expect(isTrustHeader(name), name).toBe(false);
    }
  });
});
