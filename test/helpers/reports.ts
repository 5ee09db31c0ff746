/**
 * Bounce (RFC 3464 DSN) and complaint (RFC 5965 ARF) messages in the shapes the big receivers and
 * MTAs send them, around the message Mailroom really sent. Each builder takes that message and
 * what the report says, and answers the raw report as it arrives over SMTP.
 */

export type Sent = {
  /** The message as it left Mailroom (from the sink). */
  raw: Buffer;
  /** Its envelope sender: the VERP return path, which receivers write into Return-Path. */
  returnPath: string;
};

export type DsnFacts = { recipient: string; action: 'failed' | 'delayed'; status: string; diagnostic: string };

const CRLF = '\r\n';
const lines = (...parts: string[]) => parts.join(CRLF);

/** As delivered: the receiving MTA puts the envelope sender on top. */
const asDelivered = (sent: Sent) => `Return-Path: <${sent.returnPath}>${CRLF}${sent.raw.toString('utf8')}`;
const headersOf = (sent: Sent) => asDelivered(sent).split(/\r?\n\r?\n/, 1)[0]!;
const subjectOf = (sent: Sent) => /^Subject: (.*)$/im.exec(sent.raw.toString('utf8'))?.[1] ?? '';

function multipartReport(headers: string[], reportType: 'delivery-status' | 'feedback-report', boundary: string, parts: string[]): string {
  return lines(
    ...headers,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=${reportType};${CRLF}\tboundary="${boundary}"`,
    '',
    'This is a MIME-encapsulated message.',
    '',
    ...parts.flatMap((part) => [`--${boundary}`, part]),
    `--${boundary}--`,
    '',
  );
}

const part = (contentType: string, body: string, extra: string[] = []) => lines(`Content-Type: ${contentType}`, ...extra, '', body, '');

const DATE = 'Mon, 23 Nov 2026 10:15:02 +0000';

/** Postfix's machine-readable part: one recipient's line, whatever the report says of it. */
function postfixStatus(sent: Sent, facts: Omit<DsnFacts, 'action'> & { action: string }, queueId: string, extra: string[] = []): string {
  return part('message/delivery-status', lines(
    'Reporting-MTA: dns; mx1.receiver.example',
    `X-Postfix-Queue-ID: ${queueId}`,
    `X-Postfix-Sender: rfc822; ${sent.returnPath}`,
    `Arrival-Date: ${DATE}`,
    '',
    `Final-Recipient: rfc822; ${facts.recipient}`,
    `Original-Recipient: rfc822;${facts.recipient}`,
    `Action: ${facts.action}`,
    `Status: ${facts.status}`,
    'Remote-MTA: dns; mailstore.receiver.example',
    `Diagnostic-Code: smtp; ${facts.diagnostic}`,
    ...extra,
  ), ['Content-Description: Delivery report']);
}

/** Postfix's "Undelivered Mail Returned to Sender" (or, for a delay, "Delayed Mail (still being retried)"). */
export function postfixDsn(sent: Sent, facts: DsnFacts): string {
  const delayed = facts.action === 'delayed';
  return multipartReport(
    [
      'Received: by mx1.receiver.example (Postfix) id 4Xk2Lq0Z3Yz9sQv; ' + DATE,
      `Date: ${DATE}`,
      'From: MAILER-DAEMON@mx1.receiver.example (Mail Delivery System)',
      `Subject: ${delayed ? 'Delayed Mail (still being retried)' : 'Undelivered Mail Returned to Sender'}`,
      `To: ${sent.returnPath}`,
      'Auto-Submitted: auto-replied',
      'Message-Id: <20261123101502.4Xk2Lq0Z3Yz9sQv@mx1.receiver.example>',
    ],
    'delivery-status',
    '4Xk2Lq0Z3Yz9sQv.1763892902/mx1.receiver.example',
    [
      part('text/plain; charset=us-ascii', lines(
        'This is the mail system at host mx1.receiver.example.',
        '',
        delayed ? '####################################################################' : "I'm sorry to have to inform you that your message could not",
        delayed ? '# THIS IS A WARNING ONLY.  YOU DO NOT NEED TO RESEND YOUR MESSAGE. #' : 'be delivered to one or more recipients. It\'s attached below.',
        '',
        `<${facts.recipient}>: ${facts.diagnostic}`,
      ), ['Content-Description: Notification']),
      postfixStatus(sent, facts, '4Xk2Lq0Z3Yz9sQv', delayed ? ['Will-Retry-Until: Mon, 30 Nov 2026 10:15:02 +0000'] : []),
      part('message/rfc822', asDelivered(sent), ['Content-Description: Undelivered Message']),
    ],
  );
}

export type SuccessFacts = { recipient: string; action: 'delivered' | 'relayed'; status: string; diagnostic: string };

/**
 * Postfix's "Successful Mail Delivery Report", for a message that asked for one (NOTIFY=SUCCESS):
 * delivered to the mailbox, or relayed on to a server that sends no such reports. Only the headers
 * of the original come back.
 */
export function postfixSuccessDsn(sent: Sent, facts: SuccessFacts): string {
  return multipartReport(
    [
      'Received: by mx1.receiver.example (Postfix) id 7Yt3Mn1B2CdQ8Rw; ' + DATE,
      `Date: ${DATE}`,
      'From: MAILER-DAEMON@mx1.receiver.example (Mail Delivery System)',
      'Subject: Successful Mail Delivery Report',
      `To: ${sent.returnPath}`,
      'Auto-Submitted: auto-replied',
      'Message-Id: <20261123101502.7Yt3Mn1B2CdQ8Rw@mx1.receiver.example>',
    ],
    'delivery-status',
    '7Yt3Mn1B2CdQ8Rw.1763892902/mx1.receiver.example',
    [
      part('text/plain; charset=us-ascii', lines(
        'This is the mail system at host mx1.receiver.example.',
        '',
        'Your message was successfully delivered to the destination(s)',
        'listed below. If the message was delivered to mailbox you will',
        'receive no further notifications. Otherwise you may still receive',
        'notifications of mail delivery errors from other systems.',
        '',
        '                   The mail system',
        '',
        `<${facts.recipient}>: ${facts.action === 'delivered' ? 'delivered to mailbox' : 'relayed to non-DSN-aware mailer'}`,
      ), ['Content-Description: Notification']),
      postfixStatus(sent, facts, '7Yt3Mn1B2CdQ8Rw'),
      part('text/rfc822-headers', headersOf(sent), ['Content-Description: Message Headers']),
    ],
  );
}

/** Gmail's "Delivery Status Notification (Failure)" / "(Delay)" from mailer-daemon@googlemail.com. */
export function gmailDsn(sent: Sent, facts: DsnFacts): string {
  const word = facts.action === 'delayed' ? 'Delay' : 'Failure';
  const human = lines(
    '--000000000000a1b2c3d4e5f6a7b8',
    'Content-Type: text/plain; charset="UTF-8"',
    '',
    `** ${facts.action === 'delayed' ? 'Message delayed' : 'Address not found'} **`,
    '',
    `Your message wasn't delivered to ${facts.recipient} because the address couldn't be found, or is unable to receive mail.`,
    '',
    '--000000000000a1b2c3d4e5f6a7b8',
    'Content-Type: text/html; charset="UTF-8"',
    '',
    `<html><body><p>Your message wasn't delivered to <b>${facts.recipient}</b>.</p></body></html>`,
    '--000000000000a1b2c3d4e5f6a7b8--',
  );
  return multipartReport(
    [
      'Received: by 2002:a05:6a10:9f0e:b0:5c1:aa15:3f27 with SMTP id x14csp123456pxc; ' + DATE,
      `Return-Path: <>`,
      `Date: ${DATE}`,
      'From: Mail Delivery Subsystem <mailer-daemon@googlemail.com>',
      `To: ${sent.returnPath}`,
      'Auto-Submitted: auto-replied',
      `Subject: Delivery Status Notification (${word})`,
      'References: <' + (/^Message-ID: <([^>]+)>/im.exec(sent.raw.toString('utf8'))?.[1] ?? '') + '>',
      'Message-ID: <6750a9c2.050a0220.3d5b1.0abc.GMR@mx.google.com>',
    ],
    'delivery-status',
    '000000000000a0b1c2d3e4f5a6b7',
    [
      part('multipart/related; boundary="000000000000a1b2c3d4e5f6a7b8"', human),
      part('message/delivery-status', lines(
        'Reporting-MTA: dns; googlemail.com',
        'Arrival-Date: Mon, 23 Nov 2026 02:15:01 -0800 (PST)',
        'X-Original-Message-ID: <' + (/^Message-ID: <([^>]+)>/im.exec(sent.raw.toString('utf8'))?.[1] ?? '') + '>',
        '',
        `Final-Recipient: rfc822; ${facts.recipient}`,
        `Action: ${facts.action}`,
        `Status: ${facts.status}`,
        'Remote-MTA: dns; gmail-smtp-in.l.google.com. (2607:f8b0:4004:c1b::1a, the server',
        ' for the domain.)',
        `Diagnostic-Code: smtp; ${facts.diagnostic}`,
        `Last-Attempt-Date: ${DATE}`,
      )),
      part('message/rfc822', asDelivered(sent)),
    ],
  );
}

/** Exchange Online's "Undeliverable:" non-delivery report, which quotes only the original headers. */
export function outlookDsn(sent: Sent, facts: DsnFacts): string {
  return multipartReport(
    [
      'From: postmaster@outlook.com',
      `To: <${sent.returnPath}>`,
      `Date: ${DATE}`,
      `Subject: Undeliverable: ${subjectOf(sent)}`,
      'Content-Language: en-US',
      'Message-ID: <9b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d@BN8PR12MB3456.namprd12.prod.outlook.com>',
      'Auto-Submitted: auto-replied',
      'X-MS-Exchange-Message-Is-Ndr: ',
    ],
    'delivery-status',
    '_000_9b1c2d3e4f504a6b8c7d9e0f1a2b3c4d_',
    [
      part('multipart/alternative; differences=Content-Type; boundary="_002_alt_"', lines(
        '--_002_alt_',
        'Content-Type: text/plain; charset="us-ascii"',
        '',
        'Delivery has failed to these recipients or groups:',
        '',
        `${facts.recipient}`,
        "The email address you entered couldn't be found.",
        '',
        '--_002_alt_',
        'Content-Type: text/html; charset="us-ascii"',
        '',
        `<html><body><b>Your message to ${facts.recipient} couldn't be delivered.</b></body></html>`,
        '--_002_alt_--',
      )),
      part('message/delivery-status', lines(
        'Reporting-MTA: dns;BN8PR12MB3456.namprd12.prod.outlook.com',
        'Received-From-MTA: dns;mail.bench.example',
        `Arrival-Date: ${DATE}`,
        '',
        `Final-Recipient: rfc822;${facts.recipient}`,
        `Action: ${facts.action}`,
        `Status: ${facts.status}`,
        `Diagnostic-Code: smtp;${facts.diagnostic}`,
        'Remote-MTA: dns;BN8PR12MB3456.namprd12.prod.outlook.com',
        `X-Display-Name: ${facts.recipient}`,
      )),
      part('text/rfc822-headers', headersOf(sent)),
    ],
  );
}

/** Yahoo's "Failure Notice" as a DSN from its outbound MTA. */
export function yahooDsn(sent: Sent, facts: DsnFacts): string {
  return multipartReport(
    [
      'From: MAILER-DAEMON@yahoo.com',
      `To: ${sent.returnPath}`,
      `Date: ${DATE}`,
      'Subject: Failure Notice',
      'Message-ID: <1763892902.2218.yahoo@mta1033.mail.bf1.yahoo.com>',
    ],
    'delivery-status',
    '----=_Part_2218_1763892902',
    [
      part('text/plain; charset=UTF-8', lines(
        'Sorry, we were unable to deliver your message to the following address.',
        '',
        `<${facts.recipient}>:`,
        facts.diagnostic,
      )),
      part('message/delivery-status', lines(
        'Reporting-MTA: dns; mta1033.mail.bf1.yahoo.com',
        '',
        `Original-Recipient: rfc822;${facts.recipient}`,
        `Final-Recipient: rfc822;${facts.recipient}`,
        `Action: ${facts.action}`,
        `Status: ${facts.status}`,
        `Diagnostic-Code: smtp; ${facts.diagnostic}`,
      )),
      part('message/rfc822', asDelivered(sent)),
    ],
  );
}

export type ArfFacts = { recipient?: string; feedbackType?: string };

/** Yahoo's complaint feedback loop: an ARF report with the whole original. */
export function yahooArf(sent: Sent, facts: ArfFacts): string {
  return multipartReport(
    [
      'From: Yahoo! Mail AntiSpam Feedback <feedback@arf.mail.yahoo.com>',
      'To: fbl-reports@bench.example',
      `Date: ${DATE}`,
      `Subject: FW: ${subjectOf(sent)}`,
      'Message-ID: <1763892950.abuse.4242@arf.mail.yahoo.com>',
    ],
    'feedback-report',
    '----=_Part_arf_4242',
    [
      part('text/plain; charset="US-ASCII"', 'This is an email abuse report for an email message received from IP 192.0.2.25 on Mon, 23 Nov 2026.'),
      part('message/feedback-report', lines(
        `Feedback-Type: ${facts.feedbackType ?? 'abuse'}`,
        'User-Agent: Yahoo!-Mail-Feedback/2.0',
        'Version: 0.1',
        `Original-Mail-From: <${sent.returnPath}>`,
        ...(facts.recipient ? [`Original-Rcpt-To: <${facts.recipient}>`] : []),
        `Received-Date: ${DATE}`,
        'Source-IP: 192.0.2.25',
        'Reported-Domain: bench.example',
        'Authentication-Results: mta1033.mail.bf1.yahoo.com  from=bench.example; domainkeys=neutral (no sig);  from=bench.example; dkim=pass (ok)',
      )),
      part('message/rfc822', asDelivered(sent)),
    ],
  );
}

/**
 * Microsoft's JMRP: the recipient is redacted everywhere and the original comes without its
 * envelope, so only the quoted Message-ID tells which email it is about.
 */
export function outlookArf(sent: Sent, facts: ArfFacts): string {
  const redacted = sent.raw.toString('utf8').replace(/^To: .*$/im, 'To: <redacted>');
  return multipartReport(
    [
      'From: staff@hotmail.com',
      'To: fbl@bench.example',
      `Date: ${DATE}`,
      'Subject: complaint about message from 192.0.2.25',
      'X-HmXmrOriginalRecipient: <redacted>',
      'Message-ID: <BY5PR19MB3954.complaint@BY5PR19MB3954.namprd19.prod.outlook.com>',
    ],
    'feedback-report',
    'jmrp_boundary_0001',
    [
      part('text/plain; charset="us-ascii"', 'This is an email abuse report for an email message received from IP 192.0.2.25 on Mon, 23 Nov 2026 10:15:02 -0800'),
      part('message/feedback-report', lines(
        `Feedback-Type: ${facts.feedbackType ?? 'abuse'}`,
        'User-Agent: Hotmail FBL',
        'Version: 0.1',
        'Arrival-Date: Mon, 23 Nov 2026 10:15:02 -0800',
        'Source-IP: 192.0.2.25',
      )),
      part('message/rfc822', redacted),
    ],
  );
}

/** AOL's (Yahoo-run) feedback loop, which quotes only the headers of the original. */
export function aolArf(sent: Sent, facts: ArfFacts): string {
  return multipartReport(
    [
      'From: scomp@aol.net',
      'To: fbl@bench.example',
      `Date: ${DATE}`,
      'Subject: Email Feedback Report for IP 192.0.2.25',
      'Message-ID: <aol.scomp.1763892999@aol.net>',
    ],
    'feedback-report',
    'boundary-aol-1763892999',
    [
      part('text/plain; charset="US-ASCII"', 'This is an email abuse report for an email message received from IP 192.0.2.25.'),
      part('message/feedback-report', lines(
        `Feedback-Type: ${facts.feedbackType ?? 'abuse'}`,
        'User-Agent: AOL SComp',
        'Version: 0.1',
        `Received-Date: ${DATE}`,
        'Source-IP: 192.0.2.25',
        ...(facts.recipient ? [`Original-Rcpt-To: ${facts.recipient}`] : []),
      )),
      part('text/rfc822-headers', headersOf(sent)),
    ],
  );
}
