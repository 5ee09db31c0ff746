import PostalMime from 'postal-mime';
import { describe, expect, it } from 'vitest';
import { buildMessage, envelopeOf, quotedPrintable, rfc5322Date, unstructuredField, type OutgoingEmail } from './mime.js';

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

describe('unstructuredField', () => {
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  const unfold = (field: string) => field.replace(/\r\n(?=[ \t])/g, '');

  it('printable ASCII stays as it is', () => {
    expect(unstructuredField('X', 'Hello, world! =?not-a-word?= ~')).toBe('X: Hello, world! =?not-a-word?= ~');
  });

  it('non-ASCII becomes UTF-8 B encoded words', () => {
    expect(unstructuredField('X', 'Grüße')).toBe('X: =?UTF-8?B?R3LDvMOfZQ==?=');
  });

  it('CR/LF in a value is encoded, never written as a line break', () => {
    expect(unstructuredField('X', 'Hi\r\nBcc: victim@x.example')).toBe(`X: =?UTF-8?B?${b64('Hi\r\nBcc: victim@x.example')}?=`);
    expect(unstructuredField('X', 'a\nb')).not.toMatch(/[\r\n]/);
    expect(unstructuredField('X', 'tab\there')).toBe(`X: =?UTF-8?B?${b64('tab\there')}?=`);
  });

  it('a long value is split into encoded words, one to a line, the first on a line of its own when the name leaves no room', () => {
    const subject = 'Größenänderung für Ihre Bestellung — 日本語のテキスト — 😀🎉 '.repeat(4);
    const lines = unstructuredField('Subject', subject).split('\r\n');
    expect(lines[0]).toBe('Subject:');
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines.slice(1)) {
      expect(line).toMatch(/^ =\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/);
      expect(line.length).toBeLessThanOrEqual(76);
    }
    expect(decodeWords(lines.slice(1).join(' ')).text).toBe(subject);
  });

  it('RFC 2047 encoded words never split a character, whatever its size', () => {
    for (const char of ['é', '日', '😀', 'a']) {
      for (const prefix of ['', 'a', 'ab', 'abc']) {
        const value = `${prefix}${char.repeat(60)}ü`;
        const { words, text } = decodeWords(unstructuredField('X', value).slice('X:'.length));
        expect(text).toBe(value);
        for (const word of words) expect(word.length).toBeLessThanOrEqual(75);
      }
    }
  });

  it('a word holds at most 45 bytes, so it is 72 characters at most', () => {
    expect(unstructuredField('X', 'é'.repeat(23))).toBe(`X: =?UTF-8?B?${b64('é'.repeat(22))}?=\r\n =?UTF-8?B?${b64('é')}?=`);
  });

  it('ASCII folds at white space into lines of at most 76 characters, and unfolds to the same value', () => {
    for (const value of [`${'word '.repeat(199)}end`, `  lead${' and  runs'.repeat(30)}  `, `${'x'.repeat(90)} ${'y'.repeat(90)}`]) {
      const field = unstructuredField('Subject', value);
      expect(field).not.toMatch(/=\?UTF-8\?/);
      expect(unfold(field)).toBe(`Subject: ${value}`);
      for (const line of field.split('\r\n').slice(1)) {
        expect(line).toMatch(/^ +\S/);
        if (line.length > 76) expect(line, 'a longer line is one word').toMatch(/^ \S+$/);
      }
    }
  });

  it('a value with no white space where a line must fold is encoded; with room on a line of its own, it is not', () => {
    const tooLong = unstructuredField('Subject', 'x'.repeat(998));
    expect(tooLong.split('\r\n').every((line) => line.length <= 76)).toBe(true);
    expect(decodeWords(tooLong.slice('Subject:'.length)).text).toBe('x'.repeat(998));
    const name = `X-${'n'.repeat(98)}`;
    const custom = unstructuredField(name, 'v'.repeat(900));
    expect(custom).toBe(`${name}:\r\n ${'v'.repeat(900)}`);
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

    it('an email with no To recipients says To: undisclosed-recipients:; and still never writes a Bcc field', async () => {
      for (const recipients of [{ cc: ['cc@example.com'], bcc: ['hidden@secret.example'] }, { cc: [], bcc: ['"Secret Boss" <hidden@secret.example>', 'b2@secret.example'] }]) {
        const message = build({ to: [], ...recipients });
        expect(headerFields(message).filter((f) => /^to:/i.test(f))).toStrictEqual(['To: undisclosed-recipients:;']);
        expect(message).not.toMatch(/^bcc:/im);
        expect(message).not.toContain('secret.example');
        const parsed = await PostalMime.parse(message);
        expect(parsed.to).toStrictEqual([{ name: 'undisclosed-recipients', group: [] }]);
        expect(parsed.bcc).toBeUndefined();
        expect(envelopeOf(email({ to: [], ...recipients }), 'r@x.example').to).toContain('hidden@secret.example');
      }
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

    it('a long non-ASCII display name is folded between its encoded words, lines within 76 characters', async () => {
      const message = build({ from: `"${'Ö'.repeat(500)}" <ada@example.com>` });
      const from = message.slice(0, message.indexOf('\r\nTo: '));
      expect(from.split('\r\n').length).toBeGreaterThan(20);
      expect(from.split('\r\n').filter((line) => line.length > 76)).toStrictEqual([]);
      expect((await PostalMime.parse(message)).from).toMatchObject({ name: 'Ö'.repeat(500), address: 'ada@example.com' });
    });

    it('a long ASCII display name is folded at its white space, or encoded when it has none, and reads back the same', async () => {
      const names = [`${'Jo '.repeat(300)}Smith`, `Dr. ${'Jo, '.repeat(300)}MD`, 'a'.repeat(995), `a.${'b'.repeat(993)}`];
      const message = build({ to: names.map((name) => `"${name}" <jo@x.example>`) });
      expect(linesOver998(message)).toStrictEqual([]);
      expect((await PostalMime.parse(message)).to?.map((to) => to.name)).toStrictEqual(names);
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

    it('a header line holding encoded words stays within 76 characters (RFC 2047)', () => {
      const message = build({ subject: 'Grüße '.repeat(20), headers: { 'X-Note': 'é'.repeat(40) } });
      const encodedLines = message.slice(0, message.indexOf('\r\n\r\n')).split('\r\n').filter((line) => line.includes('=?UTF-8?B?'));
      expect(encodedLines.length).toBeGreaterThan(2);
      expect(encodedLines.filter((line) => line.length > 76)).toStrictEqual([]);
    });

    it('the longest subject and custom header the API takes are folded so no line exceeds 998 characters', async () => {
      const subject = `${'word '.repeat(199)}end`;
      const name = `X-${'n'.repeat(98)}`;
      const message = build({ subject, headers: { [name]: 'v'.repeat(900), 'X-Spaced': 'v '.repeat(450) } });
      expect(linesOver998(message)).toStrictEqual([]);
      const parsed = await PostalMime.parse(message);
      expect(parsed.subject).toBe(subject);
      expect(parsed.headers.find((h) => h.key === name.toLowerCase())?.value).toBe('v'.repeat(900));
      expect(parsed.headers.find((h) => h.key === 'x-spaced')?.value).toBe('v '.repeat(450).trim());
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

    it('a lone CR or LF in a body is a line break, written CRLF, both as 7bit and as quoted-printable', () => {
      const plain = build({ text: 'line one\rline two\nthree\r\r\nfour' });
      expect(plain).not.toMatch(/\r(?!\n)|(?<!\r)\n/);
      expect(plain.endsWith('\r\n\r\nline one\r\nline two\r\nthree\r\n\r\nfour\r\n')).toBe(true);
      const encoded = build({ text: 'Grüße\rzwei\ndrei' });
      expect(field(encoded, 'Content-Transfer-Encoding')).toBe('quoted-printable');
      expect(encoded).not.toMatch(/\r(?!\n)|(?<!\r)\n|=0D|=0A/);
      expect(decodeQuotedPrintable(encoded.slice(encoded.indexOf('\r\n\r\n') + 4, -2))).toBe('Grüße\r\nzwei\r\ndrei');
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

    it('a long non-ASCII filename goes in RFC 2231 continuations, lines within 76 characters, and reads back the same', async () => {
      for (const filename of [`${'ü'.repeat(200)}.pdf`, `a${'ü'.repeat(200)}.pdf`, `ab ${'日本'.repeat(100)}.pdf`]) {
        const message = build({ attachments: [{ filename, contentType: 'application/pdf', content: 'QQ==' }] });
        const head = message.slice(message.indexOf('\r\n--=_mr_m_e1\r\nContent-Type: application/pdf'), message.lastIndexOf('\r\n\r\nQQ=='));
        expect(head).toContain(";\r\n name*0*=utf-8''");
        expect(head).toContain(";\r\n filename*1*=");
        expect(head.split('\r\n').filter((line) => line.length > 76)).toStrictEqual([]);
        expect((await PostalMime.parse(message)).attachments[0]!.filename).toBe(filename);
      }
    });

    describe('inline attachments', () => {
      const logo = { filename: 'logo.png', contentType: 'image/png', content: 'iVBORw0KGgo=', contentId: 'logo@mail.example' };
      const terms = { filename: 'terms.pdf', contentType: 'application/pdf', content: 'JVBERi0=' };
      const html = '<p><img src="cid:logo@mail.example"></p>';

      /** The parts of a multipart body between its `--boundary` lines, each without the line break that ends it. */
      function partsOf(message: string, boundary: string): string[] {
        const start = message.indexOf(`--${boundary}\r\n`);
        const end = message.indexOf(`\r\n--${boundary}--`);
        expect(start, `--${boundary}`).toBeGreaterThan(-1);
        expect(end, `--${boundary}--`).toBeGreaterThan(start);
        return message.slice(start, end + 2).split(`--${boundary}\r\n`).slice(1).map((part) => part.slice(0, -2));
      }

      it('an inline attachment goes with the html in multipart/related, as Content-Disposition: inline with its Content-ID', () => {
        const message = build({ html, text: 'Hi', attachments: [logo] });
        expect(field(message, 'Content-Type')).toBe('multipart/related; boundary="=_mr_r_e1"');
        const [alternative, inline, ...rest] = partsOf(message, '=_mr_r_e1');
        expect(rest).toStrictEqual([]);
        expect(alternative).toMatch(/^Content-Type: multipart\/alternative; boundary="=_mr_a_e1"\r\n/);
        expect(alternative).toContain('Content-Type: text/html; charset=utf-8');
        expect(inline).toBe(
          'Content-Type: image/png; name="logo.png"\r\n' +
            'Content-Disposition: inline; filename="logo.png"\r\n' +
            'Content-ID: <logo@mail.example>\r\n' +
            'Content-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=',
        );
      });

      it('regular attachments stay in multipart/mixed, outside the multipart/related', () => {
        const message = build({ html, text: 'Hi', attachments: [terms, logo] });
        expect(field(message, 'Content-Type')).toBe('multipart/mixed; boundary="=_mr_m_e1"');
        const [related, attached, ...rest] = partsOf(message, '=_mr_m_e1');
        expect(rest).toStrictEqual([]);
        expect(related).toMatch(/^Content-Type: multipart\/related; boundary="=_mr_r_e1"\r\n/);
        expect(related).toContain('Content-ID: <logo@mail.example>');
        expect(related).not.toContain('terms.pdf');
        expect(attached).toMatch(/^Content-Type: application\/pdf; name="terms.pdf"\r\nContent-Disposition: attachment; filename="terms.pdf"\r\n/);
        expect(attached).not.toContain('Content-ID');
      });

      it('a MIME parser reads the inline part as related to the html, and the regular one as an attachment', async () => {
        const parsed = await PostalMime.parse(build({ html, text: 'Hi', attachments: [terms, logo] }));
        expect(parsed.html?.trim()).toBe(html);
        expect(parsed.text?.trim()).toBe('Hi');
        const byName = Object.fromEntries(parsed.attachments.map((attachment) => [attachment.filename, attachment]));
        expect(byName['logo.png']).toMatchObject({ mimeType: 'image/png', disposition: 'inline', contentId: '<logo@mail.example>', related: true });
        expect(Buffer.from(byName['logo.png']!.content as ArrayBuffer).toString('base64')).toBe(logo.content);
        expect(byName['terms.pdf']).toMatchObject({ mimeType: 'application/pdf', disposition: 'attachment' });
        expect(byName['terms.pdf']!.contentId).toBeUndefined();
      });
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
