import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIMULATOR } from '../src/sending/transports/capture.js';
import { verifiedDomain } from './helpers/domains.js';
import { dispatcherDone } from './helpers/emails.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

// The capture transport: mail to SIMULATOR.delayed is taken, then reported delayed, as a DSN would.
let server: TestServer;
let key: string;
let from: string;

beforeAll(async () => {
  server = await startTestServer();
  const team = await server.team();
  key = team.apiKey;
  from = `News <news@${(await verifiedDomain(server, key, 'already-sent.test')).name}>`;
});
afterAll(() => server.stop());

const ok = (method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);

/**
 * A running campaign whose first batch went out, its first recipient's message then reported
 * delayed; the next batch waits an hour. Answers the campaign and that message's id.
 */
async function campaignWithDelayedMail() {
  const book = await ok('POST', '/v1/contactBooks', { name: 'Delayed' });
  await ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, [SIMULATOR.delayed, 'a@example.org', 'b@example.org', 'c@example.org'].map((email) => ({ email })));
  const campaign = await ok('POST', '/v1/campaigns', {
    name: 'Delayed', from, subject: 'Hi', contactBookId: book.id, batchSize: 2, batchWindowMinutes: 60, sendNow: true,
    html: '<p>Hello</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>',
  });
  const delayed = () => server.deps.db.selectFrom('emails').select(['id', 'status'])
    .where('campaign_id', '=', campaign.id).where('to_addresses', '=', JSON.stringify([SIMULATOR.delayed]) as never).executeTakeFirst();
  const email = await waitFor('the first message reported delayed', delayed, (row) => row?.status === 'DELIVERY_DELAYED');
  await dispatcherDone(server);
  return { campaignId: campaign.id as string, emailId: email!.id };
}

const sentEvents = async (emailId: string) =>
  (await server.deps.db.selectFrom('email_events').select('status').where('email_id', '=', emailId).execute()).filter((e) => e.status === 'SENT').length;

describe('campaign mail already handed over, then reported delayed', () => {
  it('is never sent again by a pause and a resume', async () => {
    const { campaignId, emailId } = await campaignWithDelayedMail();
    expect(await sentEvents(emailId)).toBe(1);
    await ok('POST', `/v1/campaigns/${campaignId}/pause`);
    await ok('POST', `/v1/campaigns/${campaignId}/resume`);
    await dispatcherDone(server);
    expect(await sentEvents(emailId)).toBe(1);
    expect((await ok('GET', `/v1/emails/${emailId}`)).latestStatus).toBe('DELIVERY_DELAYED');
  });

  it('is not called CANCELLED when the campaign is deleted', async () => {
    const { campaignId, emailId } = await campaignWithDelayedMail();
    await ok('DELETE', `/v1/campaigns/${campaignId}`);
    const email = await ok('GET', `/v1/emails/${emailId}`);
    expect(email.latestStatus).toBe('DELIVERY_DELAYED');
    expect(email.emailEvents.map((e: { status: string }) => e.status)).not.toContain('CANCELLED');
  });
});
