import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signedIn, watchDialogs, type SignedIn } from './helpers/browser.js';
import { DIRECT_TEST_SETTINGS } from './helpers/direct-delivery.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { createDomain, verifiedDomain } from './helpers/domains.js';
import { settled, waitForEmail } from './helpers/emails.js';
import { startMxReceivers, type MxReceivers } from './helpers/mx-receivers.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

/**
 * The Deliverability page of a server delivering directly (SMTP_URL=direct) to loopback stand-ins
 * for providers' mail servers: healthy.test's on 127.0.0.4 takes mail, slow.test's on 127.0.0.5
 * answers 421 at connect (so its destination is paused), and hostile.test's MX has markup in its
 * name, which must never reach the page (mail to it is sent by a team of its own, so that the
 * screenshots show what a page usually looks like).
 */

const HEALTHY = '127.0.0.4';
const SLOW = '127.0.0.5';
const HOSTILE_MX = 'mx.<b>x</b>-mail.test';

// The pause after a 421 is a minute, as in production: long enough to still be on when the browser looks.
const DIRECT = { ...DIRECT_TEST_SETTINGS, DIRECT_BACKOFF_MS: '60000' };

let dns: TestDnsServer;
let mx: MxReceivers;
let server: TestServer;
let browser: Browser;
let teamId: number;
let key: string;
let person: SignedIn;
let dialogs: string[];
let senderId: number;
let warmId: number;
let paused: Destination;

type Destination = { destination: string; queued: number; inFlight: number; lastHour: { delivered: number; deferred: number; bounced: number }; pausedUntil: string | null };

const destinations = async (as = key): Promise<Destination[]> => (await expectOk(server, as, 'GET', '/v1/deliverability/destinations')).data;

const send = async (as: string, from: string, to: string): Promise<string> =>
  (await expectOk(server, as, 'POST', '/v1/emails', { from: `news@${from}`, to, subject: 'Hello', text: 'Hello there' })).emailId;

beforeAll(async () => {
  [dns, mx, browser] = await Promise.all([startDnsServer(), startMxReceivers([HEALTHY, SLOW]), launchBrowser()]);
  dns.set('mx.healthy-mail.test', [{ type: 'A', address: HEALTHY }]);
  dns.set('mx.slow-mail.test', [{ type: 'A', address: SLOW }]);
  dns.set(HOSTILE_MX, [{ type: 'A', address: HEALTHY }]);
  dns.set('healthy.test', [{ type: 'MX', exchange: 'mx.healthy-mail.test', priority: 10 }]);
  dns.set('slow.test', [{ type: 'MX', exchange: 'mx.slow-mail.test', priority: 10 }]);
  dns.set('hostile.test', [{ type: 'MX', exchange: HOSTILE_MX, priority: 10 }]);
  mx.byAddress(SLOW).behaviour = { connect: () => ({ code: 421, message: '4.7.0 too many connections, slow down' }) };

  server = await startTestServer({ ...DIRECT, DNS_SERVERS: dns.address, DIRECT_MX_PORT: String(mx.port) });
  ({ teamId, apiKey: key } = await server.team('Deliverability'));
  senderId = (await verifiedDomain(server, key, 'sender.example')).id;
  warmId = (await verifiedDomain(server, key, 'warm.example')).id;
  await expectOk(server, key, 'PATCH', `/v1/domains/${warmId}`, { warmup: { enabled: true, dailyLimits: [5, 10] } });

  const delivered = await Promise.all([
    ...['ann', 'bob', 'cy'].map((name) => send(key, 'sender.example', `${name}@healthy.test`)),
    ...['dee', 'eve'].map((name) => send(key, 'warm.example', `${name}@healthy.test`)),
  ]);
  const waiting = await Promise.all(['fay', 'gus', 'hal'].map((name) => send(key, 'sender.example', `${name}@slow.test`)));
  for (const id of delivered) expect((await waitForEmail(server, key, id, settled)).latestStatus).toBe('DELIVERED');
  // Workers report every 2 s: settled once the deliveries are counted and every email to the
  // paused destination waits, unclaimed, for the pause to end.
  const view = await waitFor(
    'the deliveries counted and the paused destination in the view, its mail waiting',
    () => destinations(),
    (view) =>
      view.some((d) => d.destination === 'healthy-mail.test' && d.lastHour.delivered === delivered.length) &&
      view.some((d) => d.destination === 'slow-mail.test' && d.pausedUntil !== null && d.queued === waiting.length && d.inFlight === 0),
  );
  paused = view.find((d) => d.destination === 'slow-mail.test')!;

  person = await signedIn(browser, server, teamId);
  dialogs = watchDialogs(person.page);
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await Promise.all([mx?.close(), dns?.close()]);
});

/** A table's rows (of `#destinations` or `#warmup`), each as its cells' text. */
const rows = (page: Page, id: string) => page.locator(`#${id} tbody tr`).evaluateAll((all) => all.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent!.trim())));

describe('dashboard: deliverability', () => {
  it('is in the navigation after Analytics, and shows each destination with its mail: the healthy one flowing with its deliveries, the 421ing one paused with its mail queued', async () => {
    const { page } = person;
    await page.goto('/');
    const nav = page.getByRole('navigation', { name: 'Main' });
    const links = await nav.getByRole('link').allTextContents();
    expect(links.slice(links.indexOf('Analytics'), links.indexOf('Analytics') + 2)).toEqual(['Analytics', 'Deliverability']);
    await nav.getByRole('link', { name: 'Deliverability' }).click();
    await page.waitForURL(`${server.url}/deliverability`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Deliverability');
    expect(await nav.locator('[aria-current=page]').textContent()).toBe('Deliverability');
    expect(await page.locator('.transport-note').count(), 'this server delivers directly').toBe(0);

    const [healthy, slow, ...more] = await rows(page, 'destinations');
    expect(more).toEqual([]);
    expect(healthy).toEqual(['healthy-mail.test', 'Flowing', '0', '0', '5', '0', '0']);
    const { queued, inFlight, lastHour } = paused;
    expect([slow![0], ...slow!.slice(2)]).toEqual(['slow-mail.test', String(queued), String(inFlight), '0', String(lastHour.deferred), '0']);
    expect(queued).toBe(3);
    expect(lastHour.deferred).toBeGreaterThanOrEqual(3);
    expect(slow![1]).toMatch(/^Paused until \S/);
    const state = page.locator('#destinations tbody tr', { hasText: 'slow-mail.test' }).locator('td').nth(1);
    expect(await state.locator('.badge').textContent()).toBe('Paused');
    expect(await state.locator('time').getAttribute('datetime')).toBe(paused.pausedUntil);
    await screenshot(page, 'deliverability');
    expect(dialogs).toEqual([]);
  });

  it('a mail server name with markup in it is never dialled nor shown: the mail bounces, and the page lists no such destination', async () => {
    const hostile = await server.team('Hostile');
    await verifiedDomain(server, hostile.apiKey, 'hostile-sender.example');
    const id = await send(hostile.apiKey, 'hostile-sender.example', 'ivy@hostile.test');
    const email = await waitForEmail(server, hostile.apiKey, id, settled);
    expect(email.latestStatus).toBe('BOUNCED');
    expect(email.emailEvents.at(-1).data.response).toBe('no MX record of hostile.test names a valid host');
    const { context, page } = await signedIn(browser, server, hostile.teamId);
    const seen = watchDialogs(page);
    await page.goto('/deliverability');
    expect(await rows(page, 'destinations')).toEqual([]);
    expect(await page.content()).not.toContain('<b>x</b>');
    expect(seen).toEqual([]);
    await context.close();
  });

  it("lists each domain with its IP pool and warm-up: off, or its day, today's cap and what it sent today against it; not the sandbox", async () => {
    const { page } = person;
    await page.goto('/deliverability');
    expect(await rows(page, 'warmup')).toEqual([
      ['warm.example', 'Day 1', '5', '2 of 5', 'default'],
      ['sender.example', 'Off', 'no cap', '—', 'default'],
    ]);
    const warm = page.locator('#warmup tbody tr').first();
    expect(await warm.getByRole('link').getAttribute('href')).toBe(`/domains/${warmId}`);
    expect(await page.locator('#warmup tbody tr').nth(1).getByRole('link').getAttribute('href')).toBe(`/domains/${senderId}`);
    const bar = warm.locator('progress');
    expect([await bar.getAttribute('value'), await bar.getAttribute('max')]).toEqual(['2', '5']);
    expect(await page.locator('#warmup').textContent()).not.toContain('sandbox');
    // The page says what the API says.
    const domain = await expectOk(server, key, 'GET', `/v1/domains/${warmId}`);
    expect(domain.warmup).toMatchObject({ enabled: true, day: 1, limitToday: 5, sentToday: 2 });
  });

  it('at a phone’s width the page does not scroll sideways', async () => {
    const phone = await person.context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto('/deliverability');
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await screenshot(phone, 'deliverability-phone');
    await phone.close();
  });

  it("a person of another team sees none of this team's destinations or domains", async () => {
    const { teamId: otherTeam } = await server.team('Other team');
    const other = await signedIn(browser, server, otherTeam);
    await other.page.goto('/deliverability');
    expect(await other.page.locator('#destinations .empty').textContent()).toBe('No mail has gone to a destination in the last hour, and none is waiting.');
    expect(await other.page.locator('#warmup .empty').textContent()).toBe('No domains yet. Add the domain you send from.');
    const content = await other.page.content();
    for (const text of ['healthy-mail.test', 'slow-mail.test', '-mail.test', 'warm.example', 'sender.example']) expect(content).not.toContain(text);
    await other.context.close();
  });
});

describe('dashboard: deliverability on a server that does not deliver directly', () => {
  const started: TestServer[] = [];
  afterAll(() => Promise.all(started.map((other) => other.stop())));

  /** A server of this transport, and a person of one of its teams on its Deliverability page. */
  async function deliverabilityOf(env: Record<string, string>) {
    const other = await startTestServer(env);
    started.push(other);
    const team = await other.team('Not direct');
    const person = await signedIn(browser, other, team.teamId);
    await person.page.goto('/deliverability');
    return { server: other, team, ...person };
  }

  it('capturing mail, it says so plainly, and still shows the warm-up of its domains', async () => {
    const { server: captured, team, page, context } = await deliverabilityOf({});
    const domain = await createDomain(captured, team.apiKey, 'captured.example');
    await expectOk(captured, team.apiKey, 'PATCH', `/v1/domains/${domain.id}`, { warmup: { enabled: true } });
    await page.reload();
    expect(await page.locator('.transport-note').textContent()).toBe(
      'This server does not deliver mail directly: SMTP_URL is not set, so its mail is captured on this server and never sent out. ' +
        'Destinations show here once it is started with SMTP_URL=direct.',
    );
    expect(await page.locator('#destinations .empty').count()).toBe(1);
    // Without limits of its own, warm-up starts at 50 a day.
    expect(await rows(page, 'warmup')).toEqual([['captured.example', 'Day 1', '50', '0 of 50', 'default']]);
    await screenshot(page, 'deliverability-not-direct');
    await context.close();
  });

  it("relaying mail, it says so without showing SMTP_URL, which may hold the relay's password", async () => {
    // Nothing is sent, so nothing needs to listen there.
    const { page, context } = await deliverabilityOf({ SMTP_URL: 'smtp://relay-user:relay-secret@127.0.0.1:2525' });
    expect(await page.locator('.transport-note').textContent()).toBe(
      'This server does not deliver mail directly: it hands its mail to the relay SMTP_URL names, which delivers it. ' +
        'Destinations show here once it is started with SMTP_URL=direct.',
    );
    const content = await page.content();
    for (const secret of ['relay-secret', 'relay-user', '2525']) expect(content).not.toContain(secret);
    await context.close();
  });
});
