import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedDomain } from './helpers/domains.js';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { postfixDsn, yahooArf, type Sent } from './helpers/reports.js';
import { waitFor } from './helpers/wait.js';

let env: Awaited<ReturnType<typeof startFeedbackServer>>;
let team: FeedbackTeam;

beforeAll(async () => {
  env = await startFeedbackServer();
  team = await feedbackTeam(env.server, env.sink, 'guarded.test');
}, 30_000);
afterAll(() => env.stop());

const DELIVERED = 1000;
const addresses = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${i}@receiver.example`);

describe('the reputation guard', () => {
  it("pauses a domain's running and scheduled campaigns when a bounce storm crosses the limit, records why, and leaves resuming to a person", async () => {
    // 1,000 delivered: the window the default guard judges.
    const first = await team.campaignTo(addresses('reader', DELIVERED));
    const campaign = (id: string) => team.ok('GET', `/v1/campaigns/${id}`);
    expect(await campaign(first.campaignId)).toMatchObject({ status: 'SENT', delivered: DELIVERED });

    // A running campaign (its next batch a day away), a scheduled one, and one on another domain.
    const bookOf = async (prefix: string, count: number) => {
      const book = await team.ok('POST', '/v1/contactBooks', { name: prefix });
      await team.ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, addresses(prefix, count).map((email) => ({ email })));
      return book.id;
    };
    const body = (contactBookId: string, from: string, extra: Record<string, unknown>) => ({
      name: 'Next', from, subject: 'Next', contactBookId, html: '<p>Next</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>', ...extra,
    });
    const from = `news@${team.domain.name}`;
    const running = await team.ok('POST', '/v1/campaigns', body(await bookOf('later', 30), from, { batchSize: 10, batchWindowMinutes: 1440, sendNow: true }));
    await waitFor('first batch out', () => campaign(running.id), (c) => c.status === 'RUNNING' && c.delivered === 10);
    const scheduled = await team.ok('POST', '/v1/campaigns', body(await bookOf('tomorrow', 5), from, { scheduledAt: 'tomorrow 9am' }));
    await verifiedDomain(env.server, team.key, 'unrelated.test');
    const elsewhere = await team.ok('POST', '/v1/campaigns', body(await bookOf('elsewhere', 5), 'news@unrelated.test', { scheduledAt: 'tomorrow 9am' }));

    const bounce = async (address: string) => {
      const sent = team.sentMessage(first.emailIdOf(address));
      const report = postfixDsn(sent, { recipient: address, action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' });
      expect(await env.report(sent.returnPath, report)).toMatchObject({ accepted: true });
    };
    // 1,010 delivered so far: 50 hard bounces (4.95%) are within the 5% limit, the 51st is not.
    const readers = addresses('reader', DELIVERED);
    for (const address of readers.slice(0, 50)) await bounce(address);
    expect(await campaign(running.id)).toMatchObject({ status: 'RUNNING', pausedReason: null });
    await bounce(readers[50]!);

    const paused = await campaign(running.id);
    expect(paused.status).toBe('PAUSED');
    expect(paused.pausedReason).toMatch(/hard-bounce rate 5\.05% \(limit 5%\) over the last 1,010 delivered emails/);
    expect(await campaign(scheduled.id)).toMatchObject({ status: 'PAUSED', pausedReason: paused.pausedReason });
    expect(await campaign(elsewhere.id)).toMatchObject({ status: 'SCHEDULED', pausedReason: null });

    // It stays paused until someone resumes it: the workers go on (they release and send a campaign
    // of another domain from start to end) and leave it alone.
    const probe = await team.ok('POST', '/v1/campaigns', body(await bookOf('probe', 2), 'news@unrelated.test', { sendNow: true }));
    await waitFor('a campaign of another domain sent', () => campaign(probe.id), (c) => c.status === 'SENT');
    expect(await campaign(running.id)).toMatchObject({ status: 'PAUSED', delivered: 10 });
    expect(await team.ok('POST', `/v1/campaigns/${running.id}/resume`)).toEqual({ success: true });
    expect(await campaign(running.id)).toMatchObject({ status: 'RUNNING', pausedReason: null });

    // Complaints over 0.1% trip it too.
    for (const address of readers.slice(100, 102)) {
      const sent = team.sentMessage(first.emailIdOf(address));
      expect(await env.report(`fbl@mail.${team.domain.name}`, yahooArf(sent, { recipient: address }))).toMatchObject({ accepted: true });
    }
    expect((await campaign(running.id)).pausedReason).toMatch(/complaint rate 0\.2% \(limit 0\.1%\)/);
  }, 120_000);
});

describe('the REPUTATION_MIN_DELIVERED floor', () => {
  const FLOOR = 5;
  let floorEnv: Awaited<ReturnType<typeof startFeedbackServer>>;
  let own: FeedbackTeam;

  beforeAll(async () => {
    floorEnv = await startFeedbackServer({ REPUTATION_MIN_DELIVERED: String(FLOOR) });
    own = await feedbackTeam(floorEnv.server, floorEnv.sink, 'floor.test');
  }, 30_000);
  afterAll(() => floorEnv.stop());

  it('below the floor the guard never pauses, however bad the rate; the first bounce judged at the floor does', async () => {
    const campaign = (id: string) => own.ok('GET', `/v1/campaigns/${id}`);
    // A running campaign: one email delivered, the next a day away.
    const book = await own.ok('POST', '/v1/contactBooks', { name: 'Floor' });
    await own.ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, addresses('floor', 2).map((email) => ({ email })));
    const running = await own.ok('POST', '/v1/campaigns', {
      name: 'Running', from: `news@${own.domain.name}`, subject: 'Hi', contactBookId: book.id,
      html: '<p>Hi</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>', batchSize: 1, batchWindowMinutes: 1440, sendNow: true,
    });
    await waitFor('first email out', () => campaign(running.id), (c) => c.status === 'RUNNING' && c.delivered === 1);

    // The guard judges each bounce before the report is answered.
    const bounce = async ({ emailId, sent }: { emailId: string; sent: Sent }) => {
      const recipient = (await own.email(emailId)).to;
      const report = postfixDsn(sent, { recipient, action: 'failed', status: '5.1.1', diagnostic: '550 5.1.1 User unknown' });
      expect(await floorEnv.report(sent.returnPath, report)).toMatchObject({ accepted: true, code: 250 });
    };
    // FLOOR - 1 delivered in all, and every transactional one of them bounces: 75 % hard bounces.
    const below = [];
    for (const address of addresses('below', FLOOR - 2)) below.push(await own.send(address));
    for (const email of below) await bounce(email);
    expect(await own.ok('GET', '/v1/analytics/reputation-metrics')).toMatchObject({ delivered: FLOOR - 1, hardBounced: FLOOR - 2 });
    expect(await campaign(running.id)).toMatchObject({ status: 'RUNNING', pausedReason: null });

    await bounce(await own.send('at-the-floor@receiver.example'));
    const paused = await campaign(running.id);
    expect(paused.status).toBe('PAUSED');
    expect(paused.pausedReason).toContain(`hard-bounce rate 80% (limit 5%) over the last ${FLOOR} delivered emails`);
  });
});
