import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { gmailDsn, yahooArf, type Sent } from './helpers/reports.js';

/**
 * Bounces and complaints are believed only with proof that their sender holds mail we sent. Each
 * test is an attacker who knows an email's id (it is in every delivered Message-ID) and forges a
 * report about it over SMTP to the inbound listener.
 */
let env: Awaited<ReturnType<typeof startFeedbackServer>>;
let team: FeedbackTeam;

beforeAll(async () => {
  env = await startFeedbackServer();
  team = await feedbackTeam(env.server, env.sink, 'forged.test');
}, 30_000);
afterAll(() => env.stop());

const HARD_BOUNCE = { action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 user unknown' } as const;
const fbl = () => `fbl@mail.${team.domain.name}`;

/** The sent message with one header field taken out (its folded lines too). */
const without = (raw: Buffer, name: string) =>
  Buffer.from(raw.toString('utf8').replace(new RegExp(`^${name}:.*\\r\\n(?:[ \\t].*\\r\\n)*`, 'im'), ''));

const reputation = () => team.ok('GET', `/v1/analytics/reputation-metrics?domainId=${team.domain.id}`);

/** What a forged report must not have changed: the email as delivered, the address not suppressed, no bounce or complaint counted. */
async function expectUntouched(emailId: string, recipient: string, metricsBefore: unknown) {
  const email = await team.email(emailId);
  expect(email.latestStatus).toBe('DELIVERED');
  expect(email.emailEvents.map((event: { status: string }) => event.status)).not.toContain('BOUNCED');
  expect(email.emailEvents.map((event: { status: string }) => event.status)).not.toContain('COMPLAINED');
  expect(await team.suppression(recipient)).toBeNull();
  expect(await reputation()).toEqual(metricsBefore);
}

describe('forged feedback changes nothing', () => {
  it('a DSN to a return path without its tag, or with a wrong tag, is refused at RCPT', async () => {
    const recipient = 'untagged@receiver.example';
    const { emailId, sent } = await team.send(recipient);
    const metrics = await reputation();
    for (const forged of [`bounces+${emailId}@mail.${team.domain.name}`, `bounces+${emailId}.0123456789abcdef@mail.${team.domain.name}`]) {
      const answer = await env.report(forged, gmailDsn({ ...sent, returnPath: forged }, { ...HARD_BOUNCE, recipient }));
      expect(answer, forged).toMatchObject({ accepted: false, code: 550 });
    }
    expect(await env.report(`unsubscribe+${emailId}@mail.${team.domain.name}`, 'Subject: unsubscribe\r\n\r\n')).toMatchObject({ accepted: false, code: 550 });
    await expectUntouched(emailId, recipient, metrics);
  });

  it('a complaint to the feedback-loop address that only quotes the Message-ID is dropped', async () => {
    const recipient = 'messageid@receiver.example';
    const { emailId } = await team.send(recipient);
    const metrics = await reputation();
    const quoted: Sent = { raw: Buffer.from(`Message-ID: <${emailId}@${team.domain.name}>\r\nSubject: Hello there\r\n\r\nHi\r\n`), returnPath: 'attacker@evil.example' };
    expect(await env.report(fbl(), yahooArf(quoted, { recipient }))).toMatchObject({ accepted: true });
    await expectUntouched(emailId, recipient, metrics);
    expect(env.logs.entries.map((entry) => entry.msg)).toContain('feedback report dropped: it proves no email sent from this domain, or names none of its recipients');
  });

  it('a complaint quoting our message with its DKIM-signed headers altered is dropped; unaltered, it is believed', async () => {
    const recipient = 'dkim@receiver.example';
    const { emailId, sent } = await team.send(recipient);
    const metrics = await reputation();
    // No return path and no feedback header: only the DKIM signature can prove it.
    const bare = without(sent.raw, 'X-Mailroom-Feedback');
    const altered = Buffer.from(bare.toString('utf8').replace(/^Subject: .*$/im, 'Subject: You won a prize'));
    expect(await env.report(fbl(), yahooArf({ raw: altered, returnPath: 'attacker@evil.example' }, { recipient }))).toMatchObject({ accepted: true });
    await expectUntouched(emailId, recipient, metrics);

    expect(await env.report(fbl(), yahooArf({ raw: bare, returnPath: 'attacker@evil.example' }, { recipient }))).toMatchObject({ accepted: true });
    expect((await team.email(emailId)).latestStatus).toBe('COMPLAINED');
    expect(await team.suppression(recipient)).toMatchObject({ reason: 'COMPLAINT' });
  });

  it('a report quoting genuine signed headers of one email under a second Message-ID of another changes neither', async () => {
    // The attacker received one signed email of the domain, and knows the Message-ID of another.
    const attacker = 'attacker@receiver.example';
    const victim = 'victim@receiver.example';
    const own = await team.send(attacker);
    const target = await team.send(victim);
    const metrics = await reputation();
    const genuine = without(own.sent.raw, 'X-Mailroom-Feedback').toString('utf8');
    const targetId = `Message-ID: <${target.emailId}@${team.domain.name}>\r\n`;
    const ownId = /^Message-ID: .*\r\n/im.exec(genuine)![0];
    const forgeries = {
      'a second Message-ID above the signed one': targetId + genuine,
      'a second Message-ID below the signed one': genuine.replace(/\r\n\r\n/, `\r\n${targetId}\r\n`),
      'the signed Message-ID moved below a forged one': targetId + genuine.replace(ownId, '').replace(/\r\n\r\n/, `\r\n${ownId}\r\n`),
    };
    for (const [how, raw] of Object.entries(forgeries)) {
      const quoted: Sent = { raw: Buffer.from(raw), returnPath: 'attacker@evil.example' };
      expect(await env.report(fbl(), yahooArf(quoted, { recipient: victim })), how).toMatchObject({ accepted: true });
      expect(await env.report(fbl(), gmailDsn(quoted, { ...HARD_BOUNCE, recipient: victim })), how).toMatchObject({ accepted: true });
      expect(await env.report(fbl(), yahooArf(quoted, { recipient: attacker })), how).toMatchObject({ accepted: true });
    }
    await expectUntouched(target.emailId, victim, metrics);
    await expectUntouched(own.emailId, attacker, metrics);
  });

  it('a DSN naming someone who was not a recipient of the email changes nothing', async () => {
    const recipient = 'real@receiver.example';
    const { emailId, sent } = await team.send(recipient);
    const metrics = await reputation();
    expect(await env.report(sent.returnPath, gmailDsn(sent, { ...HARD_BOUNCE, recipient: 'stranger@receiver.example' }))).toMatchObject({ accepted: true });
    await expectUntouched(emailId, recipient, metrics);
    expect(await team.suppression('stranger@receiver.example')).toBeNull();
  });

  it('a report about an email that was never handed over changes nothing, even with its tag', async () => {
    const recipient = 'scheduled@receiver.example';
    const { emailId } = await team.ok('POST', '/v1/emails', {
      from: `hello@${team.domain.name}`, to: recipient, subject: 'Later', html: '<p>Later</p>', scheduledAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    // Only the service can make the tag; an attacker cannot, but the rule holds even for one who could.
    const returnPath = `bounces+${emailId}.${env.server.deps.tokens.addressTag(emailId)}@mail.${team.domain.name}`;
    const sent = { raw: Buffer.from(`Message-ID: <${emailId}@${team.domain.name}>\r\n\r\n`), returnPath };
    expect(await env.report(returnPath, gmailDsn(sent, { ...HARD_BOUNCE, recipient }))).toMatchObject({ accepted: true });
    const email = await team.email(emailId);
    expect(email.latestStatus).toBe('SCHEDULED');
    expect(email.emailEvents.map((event: { status: string }) => event.status)).toEqual(['SCHEDULED']);
    expect(await team.suppression(recipient)).toBeNull();
  });
});
