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
});
