import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedDomain } from './helpers/domains.js';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { postfixDsn, yahooArf } from './helpers/reports.js';
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
    await waitFor('first batch out', () => campaign(running.id), (c) => c.status === 'RUNNING' && c.delivered === 10, 10_000);
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

    // It stays paused until someone resumes it.
    await new Promise((resolve) => setTimeout(resolve, 300));
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
