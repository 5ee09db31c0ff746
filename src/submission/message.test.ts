import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { describe, expect, it } from 'vitest';
import { onAThread } from '../../test/helpers/on-a-thread.js';
import { isOwnHeader, isTrustHeader } from '../mail/headers.js';
import { readSubmission, type SubmittedEmail } from './message.js';

/** A message written by hand: header lines, an empty line, the body; CRLF throughout. */
const handWritten = (headers: string[], body: string[] = ['Hello']) => Buffer.from(`${[...headers, '', ...body].join('\r\n')}\r\n`);

/** A message as nodemailer writes it. */
const composed = (options: Mail.Options) => new MailComposer({ from: '"Ada" <ada@example.com>', ...options }).compile().build();

const base64Of = (content: string) => Buffer.from(content, 'base64');

describe('readSubmission: recipients come from the envelope', () => {
  it('an envelope recipient named in To or Cc keeps its field and display name', async () => {
    const raw = handWritten(['From: ada@example.com', 'To: "Jo Smith" <jo@x.example>, b@x.example', 'Cc: Carol <c@x.example>', 'Subject: Hi']);
    const { email } = await readSubmission(raw, ['c@x.example', 'jo@x.example', 'b@x.example']);
    expect(email.to).toStrictEqual(['"Jo Smith" <jo@x.example>', 'b@x.example']);
    expect(email.cc).toStrictEqual(['"Carol" <c@x.example>']);
    expect(email.bcc).toStrictEqual([]);
  });

  it('an envelope recipient the To and Cc fields do not name is Bcc, and a Bcc field is never kept as a header', async () => {
    const raw = handWritten(['From: ada@example.com', 'To: jo@x.example', 'Bcc: "Boss" <boss@secret.example>', 'Subject: Hi']);
    const { email, dropped } = await readSubmission(raw, ['jo@x.example', 'boss@secret.example', 'archive@secret.example']);
    expect(email.to).toStrictEqual(['jo@x.example']);
    expect(email.cc).toStrictEqual([]);
    expect(email.bcc).toStrictEqual(['boss@secret.example', 'archive@secret.example']);
    expect(Object.keys(email.headers!).map((name) => name.toLowerCase())).not.toContain('bcc');
    expect(dropped).toContain('bcc');
  });

  it('an address the header fields name but the envelope does not is no recipient at all', async () => {
    const raw = handWritten([
      'From: ada@example.com',
      'To: jo@x.example, "Stranger" <stranger@elsewhere.example>',
      'Cc: other@elsewhere.example',
      'Bcc: hidden@elsewhere.example',
      'Subject: Hi',
    ]);
    const { email } = await readSubmission(raw, ['jo@x.example']);
    expect([email.to, email.cc, email.bcc]).toStrictEqual([['jo@x.example'], [], []]);
    expect(JSON.stringify(email)).not.toContain('elsewhere.example');
  });

  it('the envelope and the fields are matched whatever the case of the address; the field keeps its form', async () => {
    const raw = handWritten(['From: ada@example.com', 'To: Jo <Jo.Smith@X.Example>', 'Cc: carol@x.example', 'Subject: Hi']);
    const { email } = await readSubmission(raw, ['jo.smith@x.example', 'CAROL@X.EXAMPLE']);
    expect(email.to).toStrictEqual(['"Jo" <Jo.Smith@X.Example>']);
    expect(email.cc).toStrictEqual(['carol@x.example']);
    expect(email.bcc).toStrictEqual([]);
  });

  it('an internationalised domain matches its punycode form, whichever side writes which', async () => {
    const unicodeField = handWritten(['From: ada@example.com', 'To: "Jörg" <j@bücher.de>', 'Subject: Hi']);
    const fromUnicode = (await readSubmission(unicodeField, ['j@xn--bcher-kva.de'])).email;
    expect([fromUnicode.to, fromUnicode.bcc]).toStrictEqual([['"Jörg" <j@bücher.de>'], []]);

    const punycodeField = await composed({ to: 'Jörg <j@bücher.de>', subject: 'Hi', text: 'Hello' });
    const fromPunycode = (await readSubmission(punycodeField, ['j@bücher.de'])).email;
    expect([fromPunycode.to, fromPunycode.bcc]).toStrictEqual([['"Jörg" <j@xn--bcher-kva.de>'], []]);
  });

  it('an address named in To and again in Cc is one recipient, in To', async () => {
    const raw = handWritten(['From: ada@example.com', 'To: jo@x.example', 'Cc: "Jo again" <JO@x.example>, c@x.example', 'Subject: Hi']);
    const { email } = await readSubmission(raw, ['jo@x.example', 'c@x.example']);
    expect([email.to, email.cc, email.bcc]).toStrictEqual([['jo@x.example'], ['c@x.example'], []]);
  });

  it('To: undisclosed-recipients:; makes every envelope recipient a Bcc recipient', async () => {
    const raw = handWritten(['From: ada@example.com', 'To: undisclosed-recipients:;', 'Subject: Hi']);
    const { email } = await readSubmission(raw, ['a@x.example', 'b@x.example']);
    expect([email.to, email.cc, email.bcc]).toStrictEqual([[], [], ['a@x.example', 'b@x.example']]);
  });

  it('the members of a named group are recipients in its field; an empty group names nobody', async () => {
    const raw = handWritten([
      'From: ada@example.com',
      'To: Team: "Jo" <jo@x.example>, b@x.example;, solo@x.example',
      'Cc: Nobody:;, "Carol" <c@x.example>',
      'Subject: Hi',
    ]);
    const { email } = await readSubmission(raw, ['jo@x.example', 'b@x.example', 'solo@x.example', 'c@x.example']);
    expect(email.to).toStrictEqual(['"Jo" <jo@x.example>', 'b@x.example', 'solo@x.example']);
    expect(email.cc).toStrictEqual(['"Carol" <c@x.example>']);
    expect(email.bcc).toStrictEqual([]);
    expect(JSON.stringify(email)).not.toMatch(/Team|Nobody/);
  });

  it('From keeps its display name', async () => {
    const raw = handWritten(['From: "Ada Lovelace" <ada@example.com>', 'To: jo@x.example', 'Subject: Hi']);
    expect((await readSubmission(raw, ['jo@x.example'])).email.from).toBe('"Ada Lovelace" <ada@example.com>');
  });
});

describe('readSubmission: content', () => {
  it('Subject, text and html are kept', async () => {
    const raw = await composed({ to: 'jo@x.example', subject: 'Your order', text: 'Thanks for your order.\nSee you.', html: '<p>Thanks for your <b>order</b>.</p>' });
    const { email } = await readSubmission(raw, ['jo@x.example']);
    expect(email.subject).toBe('Your order');
    expect(email.text?.replace(/\r\n/g, '\n').trimEnd()).toBe('Thanks for your order.\nSee you.');
    expect(email.html?.trimEnd()).toBe('<p>Thanks for your <b>order</b>.</p>');
    expect(email.attachments).toStrictEqual([]);
  });

  it('a non-ASCII subject in RFC 2047 encoded words is decoded', async () => {
    const handRaw = handWritten([
      'From: ada@example.com',
      'To: jo@x.example',
      `Subject: =?UTF-8?B?${Buffer.from('Größe ').toString('base64')}?=`,
      ' =?utf-8?q?=E2=80=9EXL=E2=80=9C_=F0=9F=98=80?=',
    ]);
    expect((await readSubmission(handRaw, ['jo@x.example'])).email.subject).toBe('Größe „XL“ 😀');

    const subject = 'Ihre Bestellung: Größe „XL“ — 日本語のテキスト — 😀 '.repeat(3).trim();
    const composedRaw = await composed({ to: 'jo@x.example', subject, text: 'x' });
    expect(composedRaw.toString()).not.toContain('Größe');
    expect((await readSubmission(composedRaw, ['jo@x.example'])).email.subject).toBe(subject);
  });

  it('a text-only message has no html, and a message without a Subject (or with an empty one) none, as an API call without one', async () => {
    const { email } = await readSubmission(handWritten(['From: ada@example.com', 'To: jo@x.example'], ['Just text']), ['jo@x.example']);
    expect(email.html).toBeNull();
    expect(email.text?.trimEnd()).toBe('Just text');
    expect(email.subject).toBeUndefined();
    const empty = await readSubmission(handWritten(['From: ada@example.com', 'To: jo@x.example', 'Subject: '], ['Just text']), ['jo@x.example']);
    expect(empty.email.subject).toBeUndefined();
  });
});

describe('readSubmission: attachments', () => {
  const binary = Buffer.from(Array.from({ length: 256 }, (_, i) => i));

  it('an attachment is kept as base64 with its file name and content type', async () => {
    const raw = await composed({
      to: 'jo@x.example',
      subject: 'Report',
      text: 'Attached.',
      attachments: [
        { filename: 'report.pdf', content: binary, contentType: 'application/pdf' },
        { filename: 'résumé.txt', content: 'Grüße\n' },
      ],
    });
    const attachments = (await readSubmission(raw, ['jo@x.example'])).email.attachments!;
    expect(attachments.map(({ filename, contentType, contentId }) => ({ filename, contentType, contentId }))).toStrictEqual([
      { filename: 'report.pdf', contentType: 'application/pdf', contentId: undefined },
      { filename: 'résumé.txt', contentType: 'text/plain', contentId: undefined },
    ]);
    expect(attachments[0]!.content).toMatch(/^[A-Za-z0-9+/]*={0,2}$/);
    expect(base64Of(attachments[0]!.content)).toStrictEqual(binary);
    expect(base64Of(attachments[1]!.content).toString()).toBe('Grüße\n');
  });

  it('an inline image keeps its Content-ID, without the angle brackets, and stays apart from the regular attachments', async () => {
    const raw = await composed({
      to: 'jo@x.example',
      subject: 'Logo',
      html: '<p><img src="cid:logo@mail.example"></p>',
      attachments: [
        { filename: 'logo.png', content: binary, contentType: 'image/png', cid: 'logo@mail.example' },
        { filename: 'terms.pdf', content: 'PDF', contentType: 'application/pdf' },
      ],
    });
    expect(raw.toString()).toContain('Content-ID: <logo@mail.example>');
    const attachments = (await readSubmission(raw, ['jo@x.example'])).email.attachments!;
    const logo = attachments.find((attachment) => attachment.filename === 'logo.png')!;
    expect(logo).toMatchObject({ contentType: 'image/png', contentId: 'logo@mail.example' });
    expect(base64Of(logo.content)).toStrictEqual(binary);
    expect(attachments.find((attachment) => attachment.filename === 'terms.pdf')).not.toHaveProperty('contentId');
  });

  it('a part with a Content-ID and no Content-Disposition is inline, written by hand too', async () => {
    const raw = handWritten(
      ['From: ada@example.com', 'To: jo@x.example', 'Subject: Hi', 'MIME-Version: 1.0', 'Content-Type: multipart/related; boundary="rel"'],
      [
        '--rel',
        'Content-Type: text/html; charset=utf-8',
        '',
        '<img src="cid:chart-1">',
        '--rel',
        'Content-Type: image/gif; name="chart.gif"',
        'Content-ID: <chart-1>',
        'Content-Transfer-Encoding: base64',
        '',
        'R0lGODlhAQABAAAAACw=',
        '--rel--',
      ],
    );
    const { email } = await readSubmission(raw, ['jo@x.example']);
    expect(email.html?.trim()).toBe('<img src="cid:chart-1">');
    expect(email.attachments).toStrictEqual([{ filename: 'chart.gif', contentType: 'image/gif', content: 'R0lGODlhAQABAAAAACw=', contentId: 'chart-1' }]);
  });

  it('an attachment without a file name gets one, each its own', async () => {
    const raw = handWritten(
      ['From: ada@example.com', 'To: jo@x.example', 'Subject: Hi', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="mix"'],
      [
        '--mix',
        'Content-Type: text/plain',
        '',
        'See attached.',
        '--mix',
        'Content-Type: application/octet-stream',
        'Content-Disposition: attachment',
        'Content-Transfer-Encoding: base64',
        '',
        'AAEC',
        '--mix',
        'Content-Type: text/csv',
        'Content-Disposition: attachment',
        '',
        'a,b',
        '--mix--',
      ],
    );
    const attachments = (await readSubmission(raw, ['jo@x.example'])).email.attachments!;
    expect(attachments).toHaveLength(2);
    const names = attachments.map((attachment) => attachment.filename);
    for (const name of names) expect(name).toMatch(/^[^\s/\\]+$/);
    expect(new Set(names).size).toBe(2);
    expect(attachments.map((attachment) => attachment.contentType)).toStrictEqual(['application/octet-stream', 'text/csv']);
    expect(base64Of(attachments[0]!.content)).toStrictEqual(Buffer.from([0, 1, 2]));
  });

  it('a forwarded message/rfc822 part stays an attachment: its fields are not the outer message\'s', async () => {
    const raw = handWritten(
      ['From: ada@example.com', 'To: jo@x.example', 'Subject: Fwd: Inner', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="mix"'],
      [
        '--mix',
        'Content-Type: text/plain',
        '',
        'Forwarding this.',
        '--mix',
        'Content-Type: message/rfc822',
        '',
        'From: someone@elsewhere.example',
        'To: inner@elsewhere.example',
        'Subject: Inner',
        '',
        'The inner body.',
        '--mix--',
      ],
    );
    const { email } = await readSubmission(raw, ['jo@x.example']);
    expect(email.subject).toBe('Fwd: Inner');
    expect(email.from).toBe('ada@example.com');
    expect([email.to, email.cc, email.bcc]).toStrictEqual([['jo@x.example'], [], []]);
    expect(email.text?.trim()).toBe('Forwarding this.');
    expect(email.attachments).toHaveLength(1);
    const [forwarded] = email.attachments!;
    expect(forwarded!.contentType).toBe('message/rfc822');
    expect(forwarded!.filename).toMatch(/\S/);
    expect(forwarded).not.toHaveProperty('contentId');
    const inner = base64Of(forwarded!.content).toString();
    expect(inner).toContain('Subject: Inner');
    expect(inner).toContain('The inner body.');
  });
});

describe('readSubmission: header fields', () => {
  it('Reply-To, In-Reply-To, References and custom fields are kept', async () => {
    const raw = handWritten([
      'From: ada@example.com',
      'To: jo@x.example',
      'Reply-To: "Support" <help@x.example>, other@x.example',
      'Subject: Re: Order',
      'In-Reply-To: <order-1@shop.example>',
      'References: <order-0@shop.example> <order-1@shop.example>',
      'X-Campaign: spring',
      'x-lower-case: kept as written',
      'List-Id: <news.shop.example>',
    ]);
    const { email } = await readSubmission(raw, ['jo@x.example']);
    expect(email.replyTo).toStrictEqual(['"Support" <help@x.example>', 'other@x.example']);
    expect(email.headers).toStrictEqual({
      'In-Reply-To': '<order-1@shop.example>',
      References: '<order-0@shop.example> <order-1@shop.example>',
      'X-Campaign': 'spring',
      'x-lower-case': 'kept as written',
      'List-Id': '<news.shop.example>',
    });
  });

  it('a folded field is unfolded: its value holds no line break', async () => {
    const raw = handWritten([
      'From: ada@example.com',
      'To: jo@x.example',
      'Subject: Hi',
      'References: <a@shop.example>',
      ' <b@shop.example>',
      '\t<c@shop.example>',
      'X-Note: one',
      '  two',
    ]);
    const { headers } = (await readSubmission(raw, ['jo@x.example'])).email;
    for (const value of Object.values(headers!)) expect(value).not.toMatch(/[\r\n]/);
    expect(headers!['References']!.split(/[ \t]+/)).toStrictEqual(['<a@shop.example>', '<b@shop.example>', '<c@shop.example>']);
    expect(headers!['X-Note']).toMatch(/^one[ \t]+two$/);
  });

  it("Mailroom's own fields and trace, authentication and routing fields are dropped and reported", async () => {
    const raw = handWritten([
      'Return-Path: <bounce@example.com>',
      'Received: from a.example by b.example; Tue, 2 Jan 2024 03:04:05 +0000',
      'Received: from c.example by a.example; Tue, 2 Jan 2024 03:04:04 +0000',
      'DKIM-Signature: v=1; a=rsa-sha256; d=example.com; s=s1; b=abc',
      'Authentication-Results: mx.example; dkim=pass',
      'ARC-Seal: i=1; a=rsa-sha256; cv=none',
      'Resent-From: other@example.com',
      'Disposition-Notification-To: ada@example.com',
      'From: ada@example.com',
      'Sender: ada@example.com',
      'To: jo@x.example',
      'Bcc: jo@x.example',
      'Subject: Hi',
      'Date: Tue, 2 Jan 2024 03:04:05 +0000',
      'Message-ID: <client-chosen@example.com>',
      'List-Unsubscribe: <https://evil.example/unsub>',
      'X-Mailroom-Feedback: forged',
      'X-Keep: yes',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 7bit',
    ]);
    const { email, dropped } = await readSubmission(raw, ['jo@x.example']);
    expect(email.headers).toStrictEqual({ 'X-Keep': 'yes' });
    expect(dropped).toEqual(
      expect.arrayContaining([
        'return-path', 'received', 'dkim-signature', 'authentication-results', 'arc-seal', 'resent-from', 'disposition-notification-to',
        'sender', 'bcc', 'date', 'message-id', 'list-unsubscribe', 'x-mailroom-feedback', 'mime-version', 'content-type', 'content-transfer-encoding',
      ]),
    );
    expect(dropped).not.toContain('x-keep');
    expect(new Set(dropped).size, 'each name once').toBe(dropped.length);
  });

  it('every kept field is one the API would take: no own or trust field, a valid name', async () => {
    const raw = await composed({
      to: 'jo@x.example',
      cc: 'c@x.example',
      bcc: 'b@x.example',
      replyTo: 'r@x.example',
      subject: 'Hi',
      html: '<p>x</p>',
      inReplyTo: '<p@x.example>',
      references: ['<o@x.example>', '<p@x.example>'],
      priority: 'high',
      headers: { 'X-Campaign': 'spring', 'Received': 'forged', 'ARC-Seal': 'forged' },
      list: { unsubscribe: 'https://x.example/unsub' },
      attachments: [{ filename: 'a.txt', content: 'a' }],
    });
    const { headers } = (await readSubmission(raw, ['jo@x.example', 'c@x.example', 'b@x.example'])).email;
    const names = Object.keys(headers!);
    expect(names).toEqual(expect.arrayContaining(['In-Reply-To', 'References', 'X-Campaign']));
    expect(names.filter((name) => isOwnHeader(name) || isTrustHeader(name))).toStrictEqual([]);
    for (const name of names) expect(name).toMatch(/^[!-9;-~]{1,100}$/);
  });

  it('a field given twice keeps its first value', async () => {
    const raw = handWritten(['From: ada@example.com', 'To: jo@x.example', 'Subject: first', 'X-Tag: first', 'x-tag: second', 'X-TAG: third', 'Subject: second']);
    const { email } = await readSubmission(raw, ['jo@x.example']);
    expect(email.headers).toStrictEqual({ 'X-Tag': 'first' });
    expect(email.subject).toBe('first');
  });

  it('a message of 50,000 fields is read in one pass: each name kept once, the first value of each', async () => {
    const fields = Array.from({ length: 50_000 }, (_, i) => `X-Field-${i % 25_000}: ${i}`);
    const raw = handWritten(['From: ada@example.com', 'To: jo@x.example', 'Subject: Hi', ...fields]);
    const { email } = await onAThread<SubmittedEmail>(new URL('./message.ts', import.meta.url), 'readSubmission', raw, ['jo@x.example']);
    expect(Object.keys(email.headers!)).toHaveLength(25_000);
    expect(email.headers!['X-Field-24999']).toBe('24999');
  });

  it('a field with a malformed name is dropped', async () => {
    const longName = `X-${'n'.repeat(100)}`;
    const raw = handWritten(['From: ada@example.com', 'To: jo@x.example', 'Subject: Hi', 'Bad Name: x', `${longName}: y`, 'X-Fine: z']);
    const { email, dropped } = await readSubmission(raw, ['jo@x.example']);
    expect(email.headers).toStrictEqual({ 'X-Fine': 'z' });
    expect(dropped).toEqual(expect.arrayContaining(['bad name', longName.toLowerCase()]));
  });
});

describe('readSubmission: the event loop is never held by a message', () => {
  it('a message is parsed off the event loop: a callback queued after the read began runs before the read ends', async () => {
    // 20,000 lines of 7bit HTML: on the calling thread postal-mime would parse them in one stretch,
    // every step a microtask, so nothing queued behind it could run until the whole message was read.
    const lines = Array.from({ length: 20_000 }, (_, i) => `<p>Line ${i} of a long newsletter</p>`);
    const raw = handWritten(['From: ada@example.com', 'To: jo@x.example', 'Subject: Hi', 'Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: 7bit'], lines);
    const order: string[] = [];
    const read = readSubmission(raw, ['jo@x.example']).then((submitted) => {
      order.push('read');
      return submitted;
    });
    setImmediate(() => order.push('the loop turned'));
    const { email } = await read;
    expect(order).toStrictEqual(['the loop turned', 'read']);
    expect(email.html?.split('\n').filter(Boolean)).toHaveLength(20_000);
  });
});
