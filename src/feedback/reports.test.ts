import { describe, expect, it } from 'vitest';
import { parseReport } from './reports.js';

const arf = (quotedHeaders: string) =>
  Buffer.from(
    [
      'From: fbl@receiver.example',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=feedback-report; boundary="b"',
      '',
      '--b',
      'Content-Type: message/feedback-report',
      '',
      'Feedback-Type: abuse',
      'Version: 1',
      '',
      '--b',
      'Content-Type: text/rfc822-headers',
      '',
      quotedHeaders,
      '',
      '--b--',
      '',
    ].join('\r\n'),
  );

const SINGLE = ['Return-Path: <bounces+abc.0123456789abcdef@mail.example.com>', 'From: a@example.com', 'To: b@receiver.example', 'Message-ID: <abc@example.com>', 'X-Mailroom-Feedback: abc.0123456789abcdef'];

describe('the quoted original of a report', () => {
  it('is read field by field when each field attribution reads appears once', async () => {
    const report = await parseReport(arf(SINGLE.join('\r\n')));
    expect(report?.original).toMatchObject({
      messageId: 'abc@example.com',
      returnPath: 'bounces+abc.0123456789abcdef@mail.example.com',
      feedbackTag: 'abc.0123456789abcdef',
      repeated: [],
    });
  });

  it.each(['Message-ID: <other@example.com>', 'Return-Path: <x@evil.example>', 'From: x@evil.example', 'To: x@evil.example', 'X-Mailroom-Feedback: other.0123456789abcdef', 'message-id:<other@example.com>'])(
    'attributes nothing when it repeats a field attribution reads (%s above the rest)',
    async (extra) => {
      const report = await parseReport(arf([extra, ...SINGLE].join('\r\n')));
      expect(report?.original).toMatchObject({ messageId: null, returnPath: null, feedbackTag: null, headers: null });
      expect(report?.original.repeated).toHaveLength(1);
    },
  );
});
