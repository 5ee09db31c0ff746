import PostalMime from 'postal-mime';
import { describe, expect, it } from 'vitest';
import { buildMessage, encodeHeaderValue, envelopeOf, quotedPrintable, rfc5322Date, type OutgoingEmail } from './mime.js';

const DATE = new Date(Date.UTC(2024, 0, 2, 3, 4, 5));

const email = (overrides: Partial<OutgoingEmail> = {}): OutgoingEmail => ({
  id: 'e1',
  from: '"Ada Lovelace" <ada@example.com>',
  to: ['to@example.com'],
  cc: [],
  bcc: [],
  replyTo: [],
  subject: 'Hello',
  html: null,
  text: 'Hi',
  headers: {},
  attachments: [],
  messageId: '<e1@example.com>',
  ...overrides,
});

const build = (overrides: Partial<OutgoingEmail> = {}) => buildMessage(email(overrides), DATE).toString();

/** The header block of a message, unfolded: one string per field. */
function headerFields(message: string): string[] {
  const head = message.slice(0, message.indexOf('\r\n\r\n'));
  return head.split(/\r\n(?![ \t])/).map((field) => field.replace(/\r\n(?=[ \t])/g, ''));
}

const field = (message: string, name: string) =>
  headerFields(message).find((f) => f.toLowerCase().startsWith(`${name.toLowerCase()}:`))?.slice(name.length + 2);

/** The words of a value encoded as RFC 2047 B-words, decoded one by one (a word alone must be whole UTF-8). */
function decodeWords(value: string): { words: string[]; text: string } {
  const words = value.split(/\s+/).filter(Boolean);
  const strict = new TextDecoder('utf-8', { fatal: true });
  const text = words
    .map((word) => {
      const match = /^=\?UTF-8\?B\?([A-Za-z0-9+/=]*)\?=$/.exec(word);
      if (!match) throw new Error(`not an encoded word: ${word}`);
      return strict.decode(Buffer.from(match[1]!, 'base64'));
    })
    .join('');
  return { words, text };
}

function decodeQuotedPrintable(encoded: string): string {
  const joined = encoded.replace(/=\r\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    if (joined[i] === '=') {
      expect(joined.slice(i + 1, i + 3)).toMatch(/^[0-9A-F]{2}$/);
      bytes.push(parseInt(joined.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(joined.charCodeAt(i));
  }
  return Buffer.from(bytes).toString('utf8');
}

const linesOver998 = (message: string) => message.split('\r\n').filter((line) => line.length > 998).map((line) => `${line.slice(0, 40)}… (${line.length})`);

describe('rfc5322Date', () => {
  it('is the UTC date-time with a +0000 zone, days zero-padded', () => {
    expect(rfc5322Date(DATE)).toBe('Tue, 02 Jan 2024 03:04:05 +0000');
    expect(rfc5322Date(new Date(0))).toBe('Thu, 01 Jan 1970 00:00:00 +0000');
    expect(rfc5322Date(new Date('2024-12-31T23:59:59.999-05:00'))).toBe('Wed, 01 Jan 2025 04:59:59 +0000');
  });
});

describe('encodeHeaderValue', () => {
  it('printable ASCII stays as it is', () => {
    expect(encodeHeaderValue('Hello, world! =?not-a-word?= ~')).toBe('Hello, world! =?not-a-word?= ~');
  });

  it('non-ASCII becomes UTF-8 B encoded words', () => {
    expect(encodeHeaderValue('Grüße')).toBe('=?UTF-8?B?R3LDvMOfZQ==?=');
  });

  it('CR/LF in a value is encoded, never written as a line break', () => {
    const value = encodeHeaderValue('Hi\r\nBcc: victim@x.example');
    expect(value).toBe(`=?UTF-8?B?${Buffer.from('Hi\r\nBcc: victim@x.example').toString('base64')}?=`);
    expect(value).not.toMatch(/[\r\n]/);
    expect(encodeHeaderValue('a\nb')).not.toMatch(/[\r\n]/);
    expect(encodeHeaderValue('tab\there')).toBe(`=?UTF-8?B?${Buffer.from('tab\there').toString('base64')}?=`);
  });

  it('a long value is split into encoded words of at most 75 characters, one per line', () => {
    const subject = 'Größenänderung für Ihre Bestellung — 日本語のテキスト — 😀🎉 '.repeat(4);
    const encoded = encodeHeaderValue(subject);
    const lines = encoded.split('\r\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const [index, line] of lines.entries()) {
      expect(line.startsWith(' ')).toBe(index > 0);
      expect(line.trim().length).toBeLessThanOrEqual(75);
    }
    expect(decodeWords(encoded).text).toBe(subject);
  });

  it('RFC 2047 encoded words never split a character, whatever its size', () => {
    for (const char of ['é', '日', '😀', 'a']) {
      for (const prefix of ['', 'a', 'ab', 'abc']) {
        const value = `${prefix}${char.repeat(60)}ü`;
        const { words, text } = decodeWords(encodeHeaderValue(value));
        expect(text).toBe(value);
        for (const word of words) expect(word.length).toBeLessThanOrEqual(75);
      }
    }
  });

  it('a word holds at most 45 bytes, so it is 72 characters at most', () => {
    const encoded = encodeHeaderValue('é'.repeat(23));
    expect(encoded).toBe(`=?UTF-8?B?${Buffer.from('é'.repeat(22)).toString('base64')}?=\r\n =?UTF-8?B?${Buffer.from('é').toString('base64')}?=`);
  });
});

describe('quotedPrintable', () => {
  it('encodes =, non-ASCII and control bytes, keeps printable ASCII', () => {
    expect(quotedPrintable('a=b é ~')).toBe('a=3Db =C3=A9 ~');
    expect(quotedPrintable('\u0000\u007f')).toBe('=00=7F');
  });

  it('encodes whitespace at the end of a line, keeps it inside one', () => {
    expect(quotedPrintable('a b \nc\t\r\nd')).toBe('a b=20\r\nc=09\r\nd');
  });

  it('line breaks become CRLF; a lone CR is encoded', () => {
    expect(quotedPrintable('a\nb\r\nc\rd')).toBe('a\r\nb\r\nc=0Dd');
  });

  it('quoted-printable soft breaks keep lines at 76 characters, the = included', () => {
    expect(quotedPrintable('a'.repeat(80))).toBe(`${'a'.repeat(75)}=\r\n${'a'.repeat(5)}`);
    expect(quotedPrintable('a'.repeat(75))).toBe('a'.repeat(75));
  });

  it('a soft break never splits an =XX escape', () => {
    expect(quotedPrintable(`${'a'.repeat(73)}é`)).toBe(`${'a'.repeat(73)}=\r\n=C3=A9`);
    const encoded = quotedPrintable(`${'x'.repeat(7)}${'ü'.repeat(100)}`);
    for (const line of encoded.split('\r\n')) {
      expect(line.length).toBeLessThanOrEqual(76);
      expect(line.replace(/=$/, '')).toMatch(/^(?:[!-<>-~ \t]|=[0-9A-F]{2})*$/);
    }
  });

  it('decodes back to the text (CRLF line breaks)', () => {
    const text = `First line with spaces   \nGrüße = ${'long '.repeat(40)}\n\ttabbed\t\n${'日本'.repeat(50)}\n`;
    expect(decodeQuotedPrintable(quotedPrintable(text))).toBe(text.replace(/\n/g, '\r\n'));
  });
});

describe('buildMessage', () => {
  it('a text-only email is one text/plain part, written exactly so', () => {
    expect(build({ text: 'Hi & bye\nLine 2' })).toBe(
      'From: Ada Lovelace <ada@example.com>\r\n' +
        'To: to@example.com\r\n' +
        'Subject: Hello\r\n' +
        'Date: Tue, 02 Jan 2024 03:04:05 +0000\r\n' +
        'Message-ID: <e1@example.com>\r\n' +
        'MIME-Version: 1.0\r\n' +
        'Content-Type: text/plain; charset=utf-8\r\n' +
        'Content-Transfer-Encoding: 7bit\r\n' +
        '\r\n' +
        'Hi & bye\r\nLine 2\r\n',
    );
  });

  it('text, html and an attachment: multipart/mixed around multipart/alternative, written exactly so', () => {
    const message = build({
      to: ['"Smith, Jo" <jo@x.example>', 'b@bücher.de'],
      cc: ['c@x.example'],
      bcc: ['hidden@secret.example'],
      replyTo: ['"Jö" <r@x.example>'],
      html: '<p>Hi &amp; bye</p>',
      text: 'Hi & bye',
      headers: { 'X-Campaign': 'spring' },
      attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: 'aGVsbG8=' }],
    });
    expect(message).toBe(
      'From: Ada Lovelace <ada@example.com>\r\n' +
        'To: "Smith, Jo" <jo@x.example>,\r\n b@xn--bcher-kva.de\r\n' +
        'Cc: c@x.example\r\n' +
        'Reply-To: =?UTF-8?B?SsO2?= <r@x.example>\r\n' +
        'Subject: Hello\r\n' +
        'Date: Tue, 02 Jan 2024 03:04:05 +0000\r\n' +
        'Message-ID: <e1@example.com>\r\n' +
        'MIME-Version: 1.0\r\n' +
        'X-Campaign: spring\r\n' +
        'Content-Type: multipart/mixed; boundary="=_mr_m_e1"\r\n' +
        '\r\n' +
        '--=_mr_m_e1\r\n' +
        'Content-Type: multipart/alternative; boundary="=_mr_a_e1"\r\n' +
        '\r\n' +
        '--=_mr_a_e1\r\n' +
        'Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\nHi & bye\r\n' +
        '--=_mr_a_e1\r\n' +
        'Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n<p>Hi &amp; bye</p>\r\n' +
        '--=_mr_a_e1--\r\n' +
        '--=_mr_m_e1\r\n' +
        'Content-Type: text/plain; name="a.txt"\r\nContent-Disposition: attachment; filename="a.txt"\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8=\r\n' +
        '--=_mr_m_e1--\r\n',
    );
  });

  it('html without attachments is multipart/alternative, text first so the html is preferred', () => {
    const message = build({ html: '<p>Hi</p>', text: 'Hi' });
    expect(field(message, 'Content-Type')).toBe('multipart/alternative; boundary="=_mr_a_e1"');
    expect(message.indexOf('text/plain')).toBeLessThan(message.indexOf('text/html'));
  });

  describe('a Bcc address never appears in the built message', () => {
    it('neither as a field nor anywhere in the text', () => {
      const message = build({ to: ['to@example.com'], cc: ['cc@example.com'], bcc: ['"Secret Boss" <hidden@secret.example>', 'b2@secret.example'] });
      expect(message).not.toMatch(/^bcc:/im);
      expect(message).not.toContain('hidden@secret.example');
      expect(message).not.toContain('b2@secret.example');
      expect(message).not.toContain('Secret Boss');
      expect(message).not.toContain('secret.example');
    });

    it('but the envelope delivers to it', () => {
      expect(envelopeOf(email({ bcc: ['"Secret Boss" <hidden@secret.example>'] }), 'bounces+e1@mail.example.com')).toStrictEqual({
        from: 'bounces+e1@mail.example.com',
        to: ['to@example.com', 'hidden@secret.example'],
      });
    });
  });

  it('Cc and Reply-To are left out when empty, written when given', () => {
    const bare = build();
    expect(field(bare, 'Cc')).toBeUndefined();
    expect(field(bare, 'Reply-To')).toBeUndefined();
    const full = build({ cc: ['a@x.example', 'b@x.example'], replyTo: ['r@x.example'] });
    expect(field(full, 'Cc')).toBe('a@x.example, b@x.example');
    expect(field(full, 'Reply-To')).toBe('r@x.example');
  });

  describe('display names', () => {
    it('a name of atoms is written bare', () => {
      expect(field(build({ from: '"Ada Lovelace" <ada@example.com>' }), 'From')).toBe('Ada Lovelace <ada@example.com>');
    });

    it('a name with specials is quoted, so a comma does not make two mailboxes', () => {
      expect(field(build({ to: ['"Smith, Jo" <jo@x.example>'] }), 'To')).toBe('"Smith, Jo" <jo@x.example>');
      expect(field(build({ to: ['"Dr. Jo (MD)" <jo@x.example>'] }), 'To')).toBe('"Dr. Jo (MD)" <jo@x.example>');
      expect(field(build({ to: ['"a\\b" <jo@x.example>'] }), 'To')).toBe('"a\\\\b" <jo@x.example>');
    });

    it('a non-ASCII name becomes encoded words, the IDN domain punycode', () => {
      expect(field(build({ from: '"Jörg Müller" <j@bücher.de>' }), 'From')).toBe(`=?UTF-8?B?${Buffer.from('Jörg Müller').toString('base64')}?= <j@xn--bcher-kva.de>`);
    });

    it('a CR/LF in a display name never starts a header line', () => {
      const message = build({ from: '"Ada\r\nBcc: victim@x.example" <ada@example.com>', to: ['"Jo\nX-Evil: 1" <jo@x.example>'] });
      expect(message).not.toMatch(/^(?:Bcc|X-Evil):/im);
      expect(field(message, 'From')).toBe(`=?UTF-8?B?${Buffer.from('Ada\r\nBcc: victim@x.example').toString('base64')}?= <ada@example.com>`);
    });

    // BUG: encodeMailbox joins the encoded words of a name with a space on one line instead of
    // folding (`\r\n `) as encodeHeaderValue does, so a long non-ASCII name (the API takes a `from`
    // of up to 1000 characters) makes a header line of thousands of characters, past RFC 5322's 998.
    it.fails('a long non-ASCII display name is folded, so no line exceeds 998 characters', () => {
      const message = build({ from: `"${'Ö'.repeat(500)}" <ada@example.com>` });
      expect(linesOver998(message)).toStrictEqual([]);
    });
  });

  describe('header values', () => {
    it('a non-ASCII subject is encoded and reads back the same', () => {
      const subject = 'Ihre Bestellung: Größe „XL“ — 😀';
      const value = field(build({ subject }), 'Subject')!;
      expect(value).not.toMatch(/[^\x20-\x7e]/);
      expect(decodeWords(value).text).toBe(subject);
    });

    it('a subject or custom header value with CR/LF never starts a header line', () => {
      const message = build({ subject: 'Hi\r\nBcc: victim@x.example', headers: { 'X-Note': 'a\r\nX-Injected: 1' } });
      expect(message).not.toMatch(/^(?:Bcc|X-Injected):/im);
      expect(decodeWords(field(message, 'Subject')!).text).toBe('Hi\r\nBcc: victim@x.example');
      expect(decodeWords(field(message, 'X-Note')!).text).toBe('a\r\nX-Injected: 1');
    });

    it('custom headers are written after MIME-Version, in order, non-ASCII encoded', () => {
      const fields = headerFields(build({ headers: { 'X-First': '1', 'X-Second': 'Grüße' } }));
      const at = fields.indexOf('MIME-Version: 1.0');
      expect(fields.slice(at + 1, at + 3)).toStrictEqual(['X-First: 1', 'X-Second: =?UTF-8?B?R3LDvMOfZQ==?=']);
    });

    // BUG (minor): RFC 2047 section 2 limits each line of a header field holding encoded words to 76
    // characters; the first word (up to 72 characters) is written on the field name's line, so
    // `Subject: ` + 72 makes 81. Clients tolerate it; strict checkers flag it.
    it.fails('a header line holding encoded words stays within 76 characters (RFC 2047)', () => {
      const message = build({ subject: 'Grüße '.repeat(20), headers: { 'X-Note': 'é'.repeat(40) } });
      const encodedLines = message.slice(0, message.indexOf('\r\n\r\n')).split('\r\n').filter((line) => line.includes('=?UTF-8?B?'));
      expect(encodedLines.length).toBeGreaterThan(2);
      expect(encodedLines.filter((line) => line.length > 76)).toStrictEqual([]);
    });

    // BUG: encodeHeaderValue writes printable ASCII as it is, never folded, and the API takes a
    // subject of up to 998 characters: `Subject: ` + 998 is a 1007-character line (RFC 5322 allows
    // 998), which strict receivers refuse. A custom header of a 100-character name and a
    // 900-character value (both allowed by the API) is 1002.
    it.fails('a 998-character ASCII subject (the API maximum) is folded so no line exceeds 998 characters', () => {
      const message = build({ subject: `${'word '.repeat(199)}end` });
      expect(linesOver998(message)).toStrictEqual([]);
    });
  });

  describe('bodies', () => {
    it('short-lined ASCII goes as 7bit with CRLF line breaks', () => {
      const message = build({ text: 'one\ntwo\r\nthree' });
      expect(field(message, 'Content-Transfer-Encoding')).toBe('7bit');
      expect(message.endsWith('\r\n\r\none\r\ntwo\r\nthree\r\n')).toBe(true);
    });

    it('non-ASCII goes as quoted-printable and decodes back', () => {
      const message = build({ text: 'Grüße\nvon 日本 😀' });
      expect(field(message, 'Content-Transfer-Encoding')).toBe('quoted-printable');
      const body = message.slice(message.indexOf('\r\n\r\n') + 4, -2);
      expect(body).toBe('Gr=C3=BC=C3=9Fe\r\nvon =E6=97=A5=E6=9C=AC =F0=9F=98=80');
      expect(decodeQuotedPrintable(body)).toBe('Grüße\r\nvon 日本 😀');
    });

    it('998-character lines go as 7bit; a 999-character line goes as quoted-printable with soft breaks', () => {
      const fits = build({ text: `${'a'.repeat(998)}\r\nb` });
      expect(field(fits, 'Content-Transfer-Encoding')).toBe('7bit');
      const long = build({ text: `b\n${'a'.repeat(999)}` });
      expect(field(long, 'Content-Transfer-Encoding')).toBe('quoted-printable');
      expect(linesOver998(long)).toStrictEqual([]);
      const body = long.slice(long.indexOf('\r\n\r\n') + 4, -2);
      expect(decodeQuotedPrintable(body)).toBe(`b\r\n${'a'.repeat(999)}`);
      expect(Math.max(...body.split('\r\n').map((line) => line.length))).toBe(76);
    });

    it('a body cannot close its MIME part early: text naming the boundary is quoted-printable', () => {
      const message = build({ html: '<p>x</p>\n--=_mr_a_e1--\nContent-Type: text/html\n\n<script>evil()</script>', text: '--=_mr_a_e1\nfake part' });
      const delimiters = message.split('\r\n').filter((line) => line.startsWith('--=_mr_a_e1'));
      expect(delimiters).toStrictEqual(['--=_mr_a_e1', '--=_mr_a_e1', '--=_mr_a_e1--']);
      expect(message).toContain('--=3D_mr_a_e1--');
    });

    it('no line of a built message ends in a bare LF', () => {
      const message = build({ text: 'a\nb\n\nc\n', html: '<p>\n</p>\n', attachments: [{ filename: 'f.bin', contentType: 'application/octet-stream', content: 'QUJD'.repeat(50) }] });
      expect(message).not.toMatch(/(?<!\r)\n/);
    });

    // BUG: the 7bit test lets `\r` through and only `\r?\n` is turned into CRLF, so a text with a
    // lone CR (old Mac line ends, or `\r` from a JSON string) goes on the wire as a bare CR in a
    // 7bit body. RFC 5322 forbids CR outside CRLF; receivers hardened against SMTP smuggling refuse it.
    it.fails('a lone CR in a body never reaches the wire bare', () => {
      const message = build({ text: 'line one\rline two' });
      expect(message).not.toMatch(/\r(?!\n)/);
    });

    it('an empty text with html still has its text/plain part', () => {
      const message = build({ text: null, html: '<p>x</p>' });
      expect(message).toContain('Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n\r\n--=_mr_a_e1\r\n');
    });
  });

  describe('attachments', () => {
    it('content is base64 in lines of 76', () => {
      const content = Buffer.from('x'.repeat(200)).toString('base64');
      const message = build({ attachments: [{ filename: 'x.txt', contentType: 'text/plain', content }] });
      const part = message.slice(message.indexOf('Content-Disposition'));
      const lines = part.slice(part.indexOf('\r\n\r\n') + 4, part.indexOf('\r\n--=_mr_m_e1--')).split('\r\n');
      expect(lines.map((line) => line.length)).toStrictEqual([76, 76, 76, 40]);
      expect(lines.join('')).toBe(content);
    });

    it('an ASCII filename is quoted, its quotes and backslashes escaped', () => {
      const message = build({ attachments: [{ filename: 'my "report" \\ 1.pdf', contentType: 'application/pdf', content: 'QQ==' }] });
      expect(message).toContain('Content-Type: application/pdf; name="my \\"report\\" \\\\ 1.pdf"\r\nContent-Disposition: attachment; filename="my \\"report\\" \\\\ 1.pdf"\r\n');
    });

    it('a non-ASCII filename is RFC 2231 percent-encoded UTF-8', () => {
      const message = build({ attachments: [{ filename: "résumé (v2)'s.pdf", contentType: 'application/pdf', content: 'QQ==' }] });
      expect(message).toContain(
        "Content-Type: application/pdf; name*=utf-8''r%C3%A9sum%C3%A9%20%28v2%29%27s.pdf\r\nContent-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9%20%28v2%29%27s.pdf\r\n",
      );
    });

    // BUG: a non-ASCII filename is written as one RFC 2231 parameter, never split into `filename*0*=`
    // continuations; the API takes 255 characters, which percent-encode to up to 2295, on one line.
    it.fails('a long non-ASCII filename keeps header lines within 998 characters', () => {
      const message = build({ attachments: [{ filename: `${'ü'.repeat(200)}.pdf`, contentType: 'application/pdf', content: 'QQ==' }] });
      expect(linesOver998(message)).toStrictEqual([]);
    });
  });

  it('a full message reads back the same through a MIME parser', async () => {
    const attachment = Buffer.from([0, 1, 2, 253, 254, 255, ...Buffer.from('attachment')]);
    const message = buildMessage(
      email({
        from: '"Jörg Müller" <j@bücher.de>',
        to: ['"Smith, Jo" <jo@x.example>', 'b@example.com'],
        cc: ['"Ça va" <c@x.example>'],
        bcc: ['hidden@secret.example'],
        replyTo: ['r@x.example'],
        subject: 'Größe „XL“ — 😀 '.repeat(5).trim(),
        text: `Grüße\n${'long line '.repeat(120)}\nend`,
        html: '<p>Grüße &amp; <a href="https://x.example/?a=1&amp;b=2">link</a></p>',
        headers: { 'X-Campaign': 'spring' },
        attachments: [{ filename: 'résumé.bin', contentType: 'application/octet-stream', content: attachment.toString('base64') }],
      }),
      DATE,
    );
    const parsed = await PostalMime.parse(message);
    expect(parsed.from).toMatchObject({ name: 'Jörg Müller', address: 'j@xn--bcher-kva.de' });
    expect(parsed.to?.map((to) => [to.name, to.address])).toStrictEqual([
      ['Smith, Jo', 'jo@x.example'],
      ['', 'b@example.com'],
    ]);
    expect(parsed.cc?.map((cc) => [cc.name, cc.address])).toStrictEqual([['Ça va', 'c@x.example']]);
    expect(parsed.bcc).toBeUndefined();
    expect(parsed.replyTo?.map((r) => r.address)).toStrictEqual(['r@x.example']);
    expect(parsed.subject).toBe('Größe „XL“ — 😀 '.repeat(5).trim());
    expect(parsed.messageId).toBe('<e1@example.com>');
    expect(parsed.text?.replace(/\r\n/g, '\n').trimEnd()).toBe(`Grüße\n${'long line '.repeat(120)}\nend`);
    expect(parsed.html?.trimEnd()).toBe('<p>Grüße &amp; <a href="https://x.example/?a=1&amp;b=2">link</a></p>');
    expect(parsed.headers.find((h) => h.key === 'x-campaign')?.value).toBe('spring');
    expect(parsed.attachments).toHaveLength(1);
    expect(parsed.attachments[0]!.filename).toBe('résumé.bin');
    expect(Buffer.from(parsed.attachments[0]!.content as ArrayBuffer)).toStrictEqual(attachment);
  });
});

describe('envelopeOf', () => {
  it('every To, Cc and Bcc address once, bare and in ASCII, from the return path', () => {
    const envelope = envelopeOf(
      email({
        to: ['"Jo" <jo@x.example>', 'b@bücher.de'],
        cc: ['jo@x.example', '"B" <b@bücher.de>'],
        bcc: ['hidden@secret.example', '"Jo again" <jo@x.example>'],
        replyTo: ['reply@x.example'],
      }),
      'bounces+e1@mail.example.com',
    );
    expect(envelope).toStrictEqual({ from: 'bounces+e1@mail.example.com', to: ['jo@x.example', 'b@xn--bcher-kva.de', 'hidden@secret.example'] });
  });

  it('the local part keeps its case: two addresses differing only there are two recipients', () => {
    expect(envelopeOf(email({ to: ['Jo@x.example', 'jo@x.example'] }), 'r@x.example').to).toStrictEqual(['Jo@x.example', 'jo@x.example']);
  });

  it('Reply-To and From are no recipients', () => {
    expect(envelopeOf(email({ replyTo: ['reply@x.example'] }), 'r@x.example').to).toStrictEqual(['to@example.com']);
  });
});
