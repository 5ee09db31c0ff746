import PostalMime from 'postal-mime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecipientTokens } from '../src/mail/tokens.js';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { waitFor } from './helpers/wait.js';

let env: Awaited<ReturnType<typeof startFeedbackServer>>;
let team: FeedbackTeam;

beforeAll(async () => {
  env = await startFeedbackServer();
  team = await feedbackTeam(env.server, env.sink, 'tracking.test');
  await team.ok('PATCH', `/v1/domains/${team.domain.id}`, { openTracking: true, clickTracking: true });
}, 30_000);
afterAll(() => env.stop());

const BODY =
  '<html><body><p>Hi {{firstName,fallback=there}}</p><a href="https://example.com/a?x=1&amp;y=2">A</a> ' +
  "<a class=\"b\" href='https://example.com/b'>B</a> <a href=\"mailto:help@example.com\">Mail us</a> " +
  '<a href="{{unsubscribeUrl}}">Unsubscribe</a></body></html>';

/** The html of a message as the recipient's client shows it, and its links and images. */
async function rendered(raw: Buffer) {
  const html = (await PostalMime.parse(raw)).html ?? '';
  return {
    html,
    links: [...html.matchAll(/<a\b[^>]*href=["']([^"']*)["']/g)].map((m) => m[1]!.replaceAll('&amp;', '&')),
    images: [...html.matchAll(/<img\b[^>]*src="([^"]*)"/g)].map((m) => m[1]!),
  };
}

/** Fetches a link from a mail at this test's server: links name PUBLIC_URL, which here says port 0. */
const get = (url: string) => fetch(env.server.url + new URL(url).pathname, { redirect: 'manual' });
const publicUrl = () => env.server.deps.config.publicUrl;

describe('open and click tracking', () => {
  it('with tracking on, campaign mail carries a pixel and tracked links (never the unsubscribe link); each open and click is recorded, and the campaign counts each kind once', async () => {
    const reader = 'reader@receiver.example';
    const { campaignId, emailIdOf } = await team.campaignTo([reader], BODY);
    const emailId = emailIdOf(reader);
    const { links, images } = await rendered(team.sentMessage(emailId).raw);
    const [a, b, mailto, unsubscribe] = links;
    expect(a!.startsWith(`${publicUrl()}/track/click/`)).toBe(true);
    expect(b!.startsWith(`${publicUrl()}/track/click/`)).toBe(true);
    expect(mailto).toBe('mailto:help@example.com');
    expect(unsubscribe!.startsWith(`${publicUrl()}/unsubscribe/`)).toBe(true);
    const pixel = images.find((src) => src.startsWith(`${publicUrl()}/track/open/`));
    expect(pixel).toBeDefined();

    for (let i = 0; i < 2; i++) {
      const opened = await get(pixel!);
      expect(opened.status).toBe(200);
      expect(opened.headers.get('content-type')).toBe('image/gif');
      expect((await opened.arrayBuffer()).byteLength).toBeGreaterThan(0);
      const clicked = await get(a!);
      expect(clicked.status).toBe(302);
      expect(clicked.headers.get('location')).toBe('https://example.com/a?x=1&y=2');
    }
    expect((await get(b!)).headers.get('location')).toBe('https://example.com/b');

    const email = await team.email(emailId);
    expect(email.emailEvents.map((e: { status: string }) => e.status)).toEqual(['QUEUED', 'SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'CLICKED']);
    expect(email.emailEvents.filter((e: { status: string }) => e.status === 'CLICKED').map((e: { data: { url: string } }) => e.data.url))
      .toEqual(['https://example.com/a?x=1&y=2', 'https://example.com/b']);
    expect(email.latestStatus).toBe('CLICKED');
    expect(await team.ok('GET', `/v1/campaigns/${campaignId}`)).toMatchObject({ delivered: 1, opened: 1, clicked: 1 });
    const series = await team.ok('GET', '/v1/analytics/email-time-series?days=7');
    expect(series.totalCounts).toMatchObject({ opened: 1, clicked: 1 });
  });

  it('forged, tampered or misused tokens get a 404 page and record nothing', async () => {
    const reader = 'careful-reader@receiver.example';
    const { emailIdOf } = await team.campaignTo([reader], BODY);
    const emailId = emailIdOf(reader);
    const { links, images } = await rendered(team.sentMessage(emailId).raw);
    const click = links[0]!;
    const pixel = images.find((src) => src.includes('/track/open/'))!;
    const unsubscribe = links[3]!;
    const before = await team.email(emailId);

    const token = click.slice(click.lastIndexOf('/') + 1);
    const [body, mac] = token.split('.') as [string, string];
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString());
    const otherUrl = Buffer.from(JSON.stringify({ ...payload, u: 'https://evil.example/phish' })).toString('base64url');
    const forger = new RecipientTokens('not-the-server-secret-at-all-0000');
    const base = `${publicUrl()}/track`;
    for (const url of [
      `${base}/click/${body}.${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`,
      `${base}/click/${otherUrl}.${mac}`,
      `${base}/click/${forger.sign('click', { emailId, url: 'https://evil.example/phish' })}`,
      `${base}/click/${pixel.slice(pixel.lastIndexOf('/') + 1)}`,
      `${base}/open/${token}`,
      `${base}/open/${unsubscribe.slice(unsubscribe.lastIndexOf('/') + 1)}`,
      `${base}/open/${env.server.deps.tokens.sign('open', { emailId: 'no-such-email-000000000000' })}`,
      `${base}/click/${env.server.deps.tokens.sign('click', { emailId, url: 'javascript:alert(1)' })}`,
      `${base}/click/not-a-token`,
    ]) {
      const res = await get(url);
      expect(res.status, url).toBe(404);
      expect(res.headers.get('content-type'), url).toMatch(/^text\/html/);
      expect(res.headers.get('location'), url).toBeNull();
    }
    expect(await team.email(emailId)).toEqual(before);
  });

  it('tracking follows the domain setting at once: off means no pixel and links as written, on again tracks the next mail', async () => {
    await team.ok('PATCH', `/v1/domains/${team.domain.id}`, { openTracking: false, clickTracking: false });
    const html = '<p>Read <a href="https://example.com/doc">the doc</a></p>';
    const untracked = await rendered((await team.send('plain@receiver.example', html)).sent.raw);
    expect(untracked.links).toEqual(['https://example.com/doc']);
    expect(untracked.images).toEqual([]);

    await team.ok('PATCH', `/v1/domains/${team.domain.id}`, { openTracking: true, clickTracking: false });
    const openOnly = await rendered((await team.send('plain@receiver.example', html)).sent.raw);
    expect(openOnly.links).toEqual(['https://example.com/doc']);
    expect(openOnly.images).toHaveLength(1);
    await team.ok('PATCH', `/v1/domains/${team.domain.id}`, { openTracking: true, clickTracking: true });
  });

  it('a late OPENED never hides a BOUNCED', async () => {
    env.sink.rule = { rcpt: (address) => (address === 'gone@receiver.example' ? { code: 550, message: '5.1.1 no such user' } : null) };
    try {
      const { emailId } = await team.ok('POST', '/v1/emails', { from: `hello@${team.domain.name}`, to: 'gone@receiver.example', subject: 'Hi', html: '<p>Hi</p>' });
      await waitFor('bounce', () => team.email(emailId), (e) => e.latestStatus === 'BOUNCED');
      expect((await get(`${publicUrl()}/track/open/${env.server.deps.tokens.sign('open', { emailId })}`)).status).toBe(200);
      const email = await team.email(emailId);
      expect(email.emailEvents.at(-1).status).toBe('OPENED');
      expect(email.latestStatus).toBe('BOUNCED');
    } finally {
      env.sink.rule = {};
    }
  });
});
