import { describe, expect, it } from 'vitest';
import { parseReport } from '../feedback/reports.js';
import { attachmentOf, parseReceived } from './received-message.js';

/** A message of many short 7bit lines, the kind postal-mime is slowest on, with one attachment. */
function longMessage(lines: number): Buffer {
  const body = Array.from({ length: lines }, (_, i) => `line ${i}`).join('\r\n');
  return Buffer.from(
    [
      'From: ada@example.com', 'To: jo@x.example', 'Subject: Hi', 'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b"', '',
      '--b', 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 7bit', '', body,
      '--b', 'Content-Type: application/octet-stream; name="data.bin"', 'Content-Disposition: attachment; filename="data.bin"',
      'Content-Transfer-Encoding: base64', '', Buffer.from([0, 1, 2, 253, 254, 255]).toString('base64'),
      '--b--', '',
    ].join('\r\n'),
  );
}

/** Whether a callback queued just after the read began ran before the read ended. */
async function loopTurnsDuring<T>(read: () => Promise<T>): Promise<T> {
  const order: string[] = [];
  const reading = read().then((result) => {
    order.push('read');
    return result;
  });
  setImmediate(() => order.push('the loop turned'));
  const result = await reading;
  expect(order).toStrictEqual(['the loop turned', 'read']);
  return result;
}

describe('every message Mailroom reads is parsed off the event loop', () => {
  const raw = longMessage(50_000);

  it('a received message (anyone may send one, up to the size limit)', async () => {
    const parsed = await loopTurnsDuring(() => parseReceived(raw));
    expect(parsed.text?.trim().split('\n')).toHaveLength(50_000);
    expect(Buffer.from(parsed.attachments[0]!.content as ArrayBuffer)).toStrictEqual(Buffer.from([0, 1, 2, 253, 254, 255]));
  });

  it("a received message's attachment read again for a download", async () => {
    const attachment = await loopTurnsDuring(() => attachmentOf(raw, 'att_1'));
    expect(attachment).toMatchObject({ content: Buffer.from([0, 1, 2, 253, 254, 255]), filename: 'data.bin' });
  });

  it('a message to the feedback address, read for a report', async () => {
    expect(await loopTurnsDuring(() => parseReport(raw))).toBeNull();
  });
});

describe('the parsing thread reads exactly the bytes it is given', () => {
  it('a message that is a slice of a larger memory is read alone, not with the bytes around it', async () => {
    // As small Buffers are, slices of one shared pool: the copy sent to the thread carries the whole of it.
    const before = 'Subject: not this one\r\n\r\nwrong body\r\n';
    const message = 'From: ada@example.com\r\nSubject: this one\r\n\r\nright body\r\n';
    const memory = new TextEncoder().encode(`${before}${message}trailing bytes`).buffer;
    const slice = Buffer.from(memory, before.length, message.length);
    const parsed = await parseReceived(slice);
    expect(parsed.subject).toBe('this one');
    expect(parsed.text?.trim()).toBe('right body');
  });

  it('messages asked for at once are each answered with their own parse', async () => {
    const subjects = Array.from({ length: 20 }, (_, i) => `message ${i}`);
    const parsed = await Promise.all(subjects.map((subject) => parseReceived(Buffer.from(`Subject: ${subject}\r\n\r\nbody\r\n`))));
    expect(parsed.map((p) => p.subject)).toStrictEqual(subjects);
  });

  it('more messages than the thread is handed at once, large and small, are each answered with their own parse', async () => {
    // Past both bounds of what the thread holds at once: 32 messages, 4 MiB.
    const bodies = Array.from({ length: 50 }, (_, i) => (i % 10 === 3 ? `${'x'.repeat(76)}\r\n`.repeat(20_000) : `body ${i}\r\n`));
    const parsed = await Promise.all(bodies.map((body, i) => parseReceived(Buffer.from(`Subject: message ${i}\r\n\r\n${body}`))));
    expect(parsed.map((p) => p.subject)).toStrictEqual(bodies.map((_, i) => `message ${i}`));
    expect(parsed.map((p) => p.text?.length)).toStrictEqual(bodies.map((body) => body.replaceAll('\r\n', '\n').length));
  });
});

describe('parts decoded on the parsing thread come out byte for byte', () => {
  it('base64, quoted-printable and 8bit parts, small and large, each whole and nothing else', async () => {
    const binary = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 256));
    const tiny = Buffer.from([0, 255]);
    const accented = 'Grüße, ça va ? 日本語 ✓ '.repeat(200);
    const qp = Buffer.from(accented, 'utf8').toString('latin1').replace(/[^\x20-\x3c\x3e-\x7e]/g, (c) => `=${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
    // Soft line breaks every 60 or so characters, never inside an escape.
    const qpLines = qp.match(/(?:=[0-9A-F]{2}|[^=]){1,60}/g)!.join('=\r\n');
    const raw = Buffer.concat([
      Buffer.from(
        [
          'From: ada@example.com', 'To: jo@x.example', 'Subject: Parts', 'MIME-Version: 1.0', 'Content-Type: multipart/mixed; boundary="b"', '',
          '--b', 'Content-Type: multipart/alternative; boundary="a"', '',
          '--a', 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: quoted-printable', '', qpLines,
          '--a', 'Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', '',
        ].join('\r\n'),
      ),
      Buffer.from('<p>Grüße ✓</p>\r\n', 'utf8'),
      Buffer.from(
        [
          '--a--', '',
          '--b', 'Content-Type: application/octet-stream', 'Content-Disposition: attachment; filename="big.bin"', 'Content-Transfer-Encoding: base64', '',
          binary.toString('base64').replace(/.{76}/g, '$&\r\n'),
          '--b', 'Content-Type: application/octet-stream', 'Content-Disposition: attachment; filename="tiny.bin"', 'Content-Transfer-Encoding: base64', '',
          tiny.toString('base64'), '--b--', '',
        ].join('\r\n'),
      ),
    ]);
    const parsed = await parseReceived(raw);
    expect(parsed.text?.replace(/\n$/, '')).toBe(accented);
    expect(parsed.html?.trim()).toBe('<p>Grüße ✓</p>');
    expect(parsed.attachments.map((a) => [a.filename, Buffer.from(a.content as ArrayBuffer)])).toStrictEqual([['big.bin', binary], ['tiny.bin', tiny]]);
  });
});
