import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { statusesOf } from './helpers/emails.js';
import {
  aolArf,
  gmailDsn,
  outlookArf,
  outlookDsn,
  postfixDsn,
  postfixSuccessDsn,
  yahooArf,
  yahooDsn,
  type DsnFacts,
  type Sent,
  type SuccessFacts,
} from './helpers/reports.js';
import { waitFor } from './helpers/wait.js';

const MAX_BYTES = 256 * 1024;

let env: Awaited<ReturnType<typeof startFeedbackServer>>;
let team: FeedbackTeam;

beforeAll(async () => {
  env = await startFeedbackServer({ INBOUND_MAX_BYTES: String(MAX_BYTES) });
  team = await feedbackTeam(env.server, env.sink, 'feedback.test');
}, 30_000);
afterAll(() => env.stop());

const fbl = (domainName: string) => `fbl@mail.${domainName}`;

type DsnCase = { shape: string; build: (sent: Sent, facts: DsnFacts) => string; facts: Omit<DsnFacts, 'recipient'>; hard: boolean };

const dsnCases: DsnCase[] = [
  { shape: 'Gmail, address not found', build: gmailDsn, hard: true, facts: { action: 'failed', status: '5.1.1', diagnostic: "550-5.1.1 The email account that you tried to reach does not exist. Please try double-checking the recipient's email address for typos. 41be03b00d2f7-7bd5b41cd7esi1234567a12.123 - gsmtp" } },
  { shape: 'Gmail, over quota and still trying', build: gmailDsn, hard: false, facts: { action: 'delayed', status: '4.2.2', diagnostic: '452-4.2.2 The recipient\'s inbox is out of storage space. - gsmtp' } },
  { shape: 'Outlook, recipient not found', build: outlookDsn, hard: true, facts: { action: 'failed', status: '5.1.10', diagnostic: '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup' } },
  { shape: 'Outlook, message expired after retries', build: outlookDsn, hard: false, facts: { action: 'failed', status: '4.4.7', diagnostic: '500 4.4.7 Message delivery has timed out' } },
  { shape: 'Postfix, user unknown', build: postfixDsn, hard: true, facts: { action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 <reader@receiver.example>: Recipient address rejected: User unknown in virtual mailbox table' } },
  { shape: 'Postfix, delayed by a connection timeout', build: postfixDsn, hard: false, facts: { action: 'delayed', status: '4.4.1', diagnostic: 'connect to mailstore.receiver.example[192.0.2.7]:25: Connection timed out' } },
  { shape: 'Yahoo, no such account', build: yahooDsn, hard: true, facts: { action: 'failed', status: '5.0.0', diagnostic: "554 delivery error: dd This user doesn't have a yahoo.com account (reader@yahoo.example) [0] - mta1033.mail.bf1.yahoo.com" } },
  { shape: 'Yahoo, mailbox disabled', build: yahooDsn, hard: true, facts: { action: 'failed', status: '5.2.1', diagnostic: '554 delivery error: dd Requested mailbox is disabled - mta1033.mail.bf1.yahoo.com' } },
];

describe('bounces (RFC 3464 DSNs) over SMTP', () => {
  it.each(dsnCases)('$shape: 5.x.x failures bounce hard and suppress, the rest are DELIVERY_DELAYED', async ({ build, facts, hard, shape }) => {
    const recipient = `dsn-${shape.toLowerCase().replace(/\W+/g, '-')}@receiver.example`;
    const { emailId, sent } = await team.send(recipient);
    const answer = await env.report(sent.returnPath, build(sent, { ...facts, recipient }));
    expect(answer).toMatchObject({ accepted: true, code: 250 });

    const email = await team.email(emailId);
    const event = email.emailEvents.at(-1);
    expect(event.status).toBe(hard ? 'BOUNCED' : 'DELIVERY_DELAYED');
    expect(event.data).toMatchObject({ recipient, action: facts.action, status: facts.status });
    expect(event.data.diagnostic).toContain(facts.diagnostic.slice(0, 20));
    if (hard) expect(event.data.bounceType).toBe('Permanent');
    // A delay reported after the receiver took the message does not undo DELIVERED.
    expect(email.latestStatus).toBe(hard ? 'BOUNCED' : 'DELIVERED');
    const suppressed = await team.suppression(recipient);
    if (hard) expect(suppressed).toMatchObject({ reason: 'HARD_BOUNCE', sourceEmailId: emailId });
    else expect(suppressed).toBeNull();
  });
});

describe('delivery reports (RFC 3464 DSNs that say the mail arrived)', () => {
  const successes: Omit<SuccessFacts, 'recipient'>[] = [
    { action: 'delivered', status: '2.0.0', diagnostic: '250 2.0.0 Ok: delivered to mailbox' },
    { action: 'relayed', status: '2.0.0', diagnostic: '250 2.0.0 Ok: queued as 9Qz4Hn2V7Lk' },
  ];

  it.each(successes)('Action: $action is a DELIVERED event: no bounce, no suppression, and the email counted delivered only once', async (facts) => {
    const recipient = `dsn-${facts.action}@receiver.example`;
    const { emailId, sent } = await team.send(recipient);
    const metrics = () => team.ok('GET', '/v1/analytics/reputation-metrics');
    const before = await metrics();
    expect(await env.report(sent.returnPath, postfixSuccessDsn(sent, { ...facts, recipient }))).toMatchObject({ accepted: true, code: 250 });

    const email = await team.email(emailId);
    // The relay's acceptance, then the report.
    expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED', 'DELIVERED']);
    expect(email.emailEvents.at(-1).data).toMatchObject({ recipient, action: facts.action, status: '2.0.0' });
    expect(await team.suppression(recipient)).toBeNull();
    expect(await metrics()).toEqual(before);
  });
});

describe('complaints (RFC 5965 ARF reports) over SMTP', () => {
  it('Yahoo and AOL reports, to the feedback-loop address or the return path, make the email COMPLAINED and suppress the complainant', async () => {
    for (const [shape, build, to] of [
      ['yahoo', yahooArf, () => fbl(team.domain.name)],
      ['aol', aolArf, (sent: Sent) => sent.returnPath],
    ] as const) {
      const recipient = `arf-${shape}@receiver.example`;
      const { emailId, sent } = await team.send(recipient);
      expect(await env.report(to(sent), build(sent, { recipient }))).toMatchObject({ accepted: true });
      const email = await team.email(emailId);
      expect(email.latestStatus).toBe('COMPLAINED');
      expect(email.emailEvents.at(-1)).toMatchObject({ status: 'COMPLAINED', data: { feedbackType: 'abuse', recipients: [recipient] } });
      expect(await team.suppression(recipient)).toMatchObject({ reason: 'COMPLAINT', sourceEmailId: emailId });
    }
  });

  it("Outlook's report, with the recipient redacted and no return path, is attributed by the quoted Message-ID", async () => {
    const recipient = 'arf-outlook@receiver.example';
    const { emailId, sent } = await team.send(recipient);
    const report = outlookArf(sent, {});
    expect(report).not.toContain(sent.returnPath);
    expect(await env.report(fbl(team.domain.name), report)).toMatchObject({ accepted: true });
    const email = await team.email(emailId);
    expect(email.emailEvents.at(-1)).toMatchObject({ status: 'COMPLAINED', data: { recipients: [recipient] } });
    // The one recipient of the email is the complainant, redacted or not.
    expect(await team.suppression(recipient)).toMatchObject({ reason: 'COMPLAINT' });
  });

  it('a not-spam report is no complaint: nothing changes', async () => {
    const recipient = 'not-spam@receiver.example';
    const { emailId, sent } = await team.send(recipient);
    const before = await team.email(emailId);
    expect(await env.report(fbl(team.domain.name), yahooArf(sent, { recipient, feedbackType: 'not-spam' }))).toMatchObject({ accepted: true });
    expect(await team.email(emailId)).toEqual(before);
    expect(await team.suppression(recipient)).toBeNull();
  });
});

describe('feedback on campaign mail', () => {
  it('a bounce and a complaint count once on the campaign, suppress, and unsubscribe the contact with the reason; the same reports again change nothing', async () => {
    const own = await feedbackTeam(env.server, env.sink, 'campaign-feedback.test');
    const [bouncer, complainer, reader] = ['bouncer@receiver.example', 'complainer@receiver.example', 'reader@receiver.example'];
    const { campaignId, bookId, emailIdOf } = await own.campaignTo([bouncer, complainer, reader]);
    const bounce = postfixDsn(own.sentMessage(emailIdOf(bouncer)), { recipient: bouncer, action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' });
    const complaint = yahooArf(own.sentMessage(emailIdOf(complainer)), { recipient: complainer });
    const apply = async () => {
      expect(await env.report(own.sentMessage(emailIdOf(bouncer)).returnPath, bounce)).toMatchObject({ accepted: true });
      expect(await env.report(fbl(own.domain.name), complaint)).toMatchObject({ accepted: true });
    };
    const state = async () => ({
      campaign: await own.ok('GET', `/v1/campaigns/${campaignId}`),
      events: await Promise.all([bouncer, complainer, reader].map(async (address) => (await own.email(emailIdOf(address))).emailEvents)),
      contacts: await Promise.all([bouncer, complainer, reader].map((address) => own.contact(bookId, address))),
      metrics: await own.ok('GET', '/v1/analytics/reputation-metrics'),
    });

    await apply();
    const first = await state();
    expect(first.campaign).toMatchObject({ total: 3, sent: 3, delivered: 3, bounced: 1, hardBounced: 1, complained: 1, unsubscribed: 0 });
    expect(first.contacts.map((c) => [c.subscribed, c.unsubscribeReason])).toEqual([[false, 'BOUNCED'], [false, 'COMPLAINED'], [true, null]]);
    expect(first.metrics).toEqual({ delivered: 3, hardBounced: 1, complained: 1, bounceRate: 100 / 3, complaintRate: 100 / 3 });
    expect(await own.suppression(bouncer)).toMatchObject({ reason: 'HARD_BOUNCE' });
    expect(await own.suppression(complainer)).toMatchObject({ reason: 'COMPLAINT' });

    await apply();
    const again = await state();
    expect(again.campaign.updatedAt).toBe(first.campaign.updatedAt);
    expect(again).toEqual(first);
  });

  it('a message to the List-Unsubscribe mailto: address unsubscribes the recipient, counted once however often it comes', async () => {
    const own = await feedbackTeam(env.server, env.sink, 'mailto-unsubscribe.test');
    const leaver = 'leaver@receiver.example';
    const { campaignId, bookId, emailIdOf } = await own.campaignTo([leaver, 'stayer@receiver.example']);
    // Unfolded: a long header field continues on lines that start with white space.
    const header = /^List-Unsubscribe: (.*)$/im.exec(own.sentMessage(emailIdOf(leaver)).raw.toString('utf8').replace(/\r\n[ \t]+/g, ' '))![1]!;
    const mailto = /<mailto:([^?>]+)/.exec(header)![1]!;
    expect(mailto).toMatch(new RegExp(`^unsubscribe\\+${emailIdOf(leaver)}\\.[0-9a-f]{16}@mail\\.${own.domain.name.replaceAll('.', '\\.')}$`));
    for (let i = 0; i < 2; i++) {
      expect(await env.report(mailto, `From: ${leaver}\r\nTo: ${mailto}\r\nSubject: unsubscribe\r\n\r\n`, leaver)).toMatchObject({ accepted: true });
    }
    expect(await own.contact(bookId, leaver)).toMatchObject({ subscribed: false, unsubscribeReason: 'UNSUBSCRIBED' });
    expect(await own.contact(bookId, 'stayer@receiver.example')).toMatchObject({ subscribed: true });
    expect(await own.ok('GET', `/v1/campaigns/${campaignId}`)).toMatchObject({ unsubscribed: 1 });
  });
});

describe('the inbound listener', () => {
  it('refuses at RCPT every address that is not a known VERP or feedback-loop address of that domain', async () => {
    const other = await feedbackTeam(env.server, env.sink, 'other-team.test');
    const { emailId } = await other.send('someone@receiver.example');
    const raw = 'Subject: hello\r\n\r\nhello\r\n';
    for (const to of [
      `postmaster@mail.${team.domain.name}`,
      `bounces+doesnotexist0000000000000@mail.${team.domain.name}`,
      // A real email id at another team's return-path host: attributes nothing across domains.
      `bounces+${emailId}@mail.${team.domain.name}`,
      `unsubscribe+${emailId}@mail.${team.domain.name}`,
      `bounces+${emailId}@${other.domain.name}`,
      'fbl@mail.unknown-domain.test',
      'anyone@example.com',
    ]) {
      expect(await env.report(to, raw), to).toMatchObject({ accepted: false, code: 550 });
    }
  });

  it('drops mail it cannot read or attribute with a log line, refuses oversized mail, and keeps serving', async () => {
    const { emailId, sent } = await team.send('garbage-test@receiver.example');
    const before = await team.email(emailId);
    const logged = () => env.logs.entries.filter((entry) => entry.level === 'warn').map((entry) => entry.msg);

    expect(await env.report(sent.returnPath, 'Subject: out of office\r\n\r\nI am away until Monday.\r\n')).toMatchObject({ accepted: true });
    expect(logged()).toContain('inbound mail dropped: not a delivery status notification or feedback report');
    expect(await env.report(sent.returnPath, randomBytes(4096))).toMatchObject({ accepted: true });
    const brokenReport = 'Content-Type: multipart/report; report-type=delivery-status; boundary="x"\r\n\r\n--x\r\nContent-Type: message/delivery-status\r\n\r\n\u0000\u0001garbage: ::\r\n--x--\r\n';
    expect(await env.report(sent.returnPath, brokenReport)).toMatchObject({ accepted: true });

    // A complaint about mail this domain never sent (its quoted Message-ID names no email of ours).
    const foreign = yahooArf({ raw: Buffer.from('Message-ID: <nothing-of-ours@feedback.test>\r\nSubject: x\r\n\r\nx\r\n'), returnPath: 'someone@elsewhere.example' }, {});
    expect(await env.report(fbl(team.domain.name), foreign)).toMatchObject({ accepted: true });
    expect(logged()).toContain('feedback report dropped: it proves no email sent from this domain, or names none of its recipients');

    const oversized = postfixDsn({ ...sent, raw: Buffer.concat([sent.raw, Buffer.alloc(MAX_BYTES, 'a')]) }, {
      recipient: 'garbage-test@receiver.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown',
    });
    expect(await env.report(sent.returnPath, oversized)).toMatchObject({ accepted: false, code: 552 });
    expect(await team.email(emailId)).toEqual(before);

    const bounce = postfixDsn(sent, { recipient: 'garbage-test@receiver.example', action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' });
    expect(await env.report(sent.returnPath, bounce)).toMatchObject({ accepted: true });
    await waitFor('the bounce applied', () => team.email(emailId), (email) => email.latestStatus === 'BOUNCED');
  });
});
