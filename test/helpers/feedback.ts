import { expect } from 'vitest';
import { verifiedDomain } from './domains.js';
import { recordingLogger } from './log.js';
import type { Sent } from './reports.js';
import { expectOk, startTestServer, type TestServer } from './server.js';
import { deliverRaw } from './smtp-client.js';
import { startSmtpSink, type SmtpSink } from './smtp-sink.js';
import { waitFor } from './wait.js';

/**
 * A server that sends over SMTP to a loopback sink and listens for bounces and complaints on its
 * own loopback port, with its log kept for the tests to read.
 */
export async function startFeedbackServer(env: Record<string, string> = {}) {
  const sink = await startSmtpSink();
  const logs = recordingLogger();
  const server = await startTestServer(
    { SMTP_URL: sink.url, DISPATCH_POLL_MS: '20', CAMPAIGN_POLL_MS: '20', ...env },
    { inbound: true, log: logs.log },
  );
  return {
    server,
    sink,
    logs,
    /** Delivers a report (or any mail) to the inbound listener, from the null sender bounces use. */
    report: (to: string, raw: string | Buffer, from = '') => deliverRaw(server.inboundPort!, { from, to: [to] }, raw),
    stop: async () => {
      await server.stop();
      await sink.close();
    },
  };
}

export type FeedbackTeam = Awaited<ReturnType<typeof feedbackTeam>>;

/** A team with a verified sending domain, and the calls the feedback tests make as it. */
export async function feedbackTeam(server: TestServer, sink: SmtpSink, domainName: string) {
  const { teamId, apiKey: key } = await server.team(domainName);
  const domain = await verifiedDomain(server, key, domainName);
  const ok = (method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);
  const email = (id: string) => ok('GET', `/v1/emails/${id}`);
  /** The message as the sink got it, with its envelope sender. */
  const sentMessage = (id: string): Sent => {
    const [message] = sink.forEmail(id);
    expect(message, `email ${id} at the sink`).toBeDefined();
    return { raw: message!.raw, returnPath: message!.mailFrom };
  };
  return {
    teamId,
    key,
    domain,
    ok,
    email,
    sentMessage,
    /** Sends one email and waits until the receiver accepted it. */
    async send(to: string, html = '<p>Hello</p>') {
      const { emailId } = await ok('POST', '/v1/emails', { from: `Hello <hello@${domain.name}>`, to, subject: 'Hello there', html });
      await waitFor(`email to ${to} delivered`, () => email(emailId), (e) => e.latestStatus === 'DELIVERED');
      return { emailId: emailId as string, sent: sentMessage(emailId) };
    },
    /** A campaign to a new book of these addresses, sent and finished; its email id per address. */
    async campaignTo(addresses: string[], html = '<p>Hi {{firstName,fallback=there}}</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>') {
      const book = await ok('POST', '/v1/contactBooks', { name: `Book ${addresses.length}` });
      await ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, addresses.map((address) => ({ email: address })));
      const created = await ok('POST', '/v1/campaigns', {
        name: 'Feedback', from: `News <news@${domain.name}>`, subject: 'News', contactBookId: book.id, html, sendNow: true,
      });
      await waitFor('campaign SENT', () => ok('GET', `/v1/campaigns/${created.id}`), (c) => c.status === 'SENT');
      const emails = await server.deps.db
        .selectFrom('emails')
        .select(['id', 'to_addresses'])
        .where('team_id', '=', teamId)
        .where('campaign_id', '=', created.id)
        .execute();
      const ids = new Map(emails.map((row) => [row.to_addresses[0]!, row.id]));
      return { campaignId: created.id as string, bookId: book.id as string, emailIdOf: (address: string) => ids.get(address)! };
    },
    /** The contact of a book with this address. */
    async contact(bookId: string, address: string) {
      const [found] = await ok('GET', `/v1/contactBooks/${bookId}/contacts?emails=${encodeURIComponent(address)}`);
      return found;
    },
    async suppression(address: string) {
      const { data } = await ok('GET', '/v1/suppressions?limit=1000');
      return (data as { email: string }[]).find((entry) => entry.email === address.toLowerCase()) ?? null;
    },
  };
}
