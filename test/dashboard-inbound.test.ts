import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DkimSigner } from '../src/domains/dkim.js';
import { insertInboundEmail } from '../src/data/inbound-emails.js';
import { launchBrowser, screenshot, signedIn, watchDialogs, type SignedIn } from './helpers/browser.js';
import { expectShownAsText, HOSTILE, postAs, submitted } from './helpers/dashboard-content.js';
import { startDnsServer, type TestDnsServer } from './helpers/dns-server.js';
import { publishSenders } from './helpers/inbound-senders.js';
import { verifiedDomain } from './helpers/domains.js';
import { settled, waitForEmail } from './helpers/emails.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { deliverRaw } from './helpers/smtp-client.js';

/**
 * The Inbound pages on real parts: the inbound SMTP listener (nodemailer delivers to it), a
 * loopback DNS server publishing a sender's SPF, DKIM key and DMARC, and a browser.
 */

const MX_HOST = 'mx.mailroom.test';
const PDF = Buffer.from('%PDF-1.4\n% a small but binary attachment \x00\x01\xff\n');

let dns: TestDnsServer;
let server: TestServer;
let browser: Browser;
let teamId: number;
let key: string;
let dkim: DkimSigner;
let person: SignedIn;
let dialogs: string[];

const ok = (method: string, path: string, body?: unknown) => expectOk(server, key, method, path, body);
const deliver = (to: string[], raw: string | Buffer, from = 'ann@sender.test') => deliverRaw(server.inboundPort!, { from, to }, raw);

/** A message as a mail client writes it, with CRLF line ends. */
function message(headers: Record<string, string>, body: string): string {
  const all = { From: 'Ann Lee <ann@sender.test>', To: 'support@acme.test', Subject: 'Help', 'Message-ID': `<${Math.random().toString(36).slice(2)}@sender.test>`, Date: new Date().toUTCString(), ...headers };
  return `${Object.entries(all).map(([name, value]) => `${name}: ${value}`).join('\r\n')}\r\n\r\n${body.replace(/\r?\n/g, '\r\n')}\r\n`;
}

/** A message with a text and an HTML part, and a PDF attachment. */
function withAttachment(headers: Record<string, string>, text: string, html: string): string {
  return message({ ...headers, 'MIME-Version': '1.0', 'Content-Type': 'multipart/mixed; boundary="mixed"' }, [
    '--mixed', 'Content-Type: multipart/alternative; boundary="alt"', '',
    '--alt', 'Content-Type: text/plain; charset=utf-8', '', text, '',
    '--alt', 'Content-Type: text/html; charset=utf-8', '', html, '',
    '--alt--', '',
    '--mixed', 'Content-Type: application/pdf', 'Content-Disposition: attachment; filename="report.pdf"', 'Content-Transfer-Encoding: base64', '',
    PDF.toString('base64'), '',
    '--mixed--',
  ].join('\n'));
}

/** What a `dl.facts` says for one term. */
const fact = (page: Page, term: string) => page.locator(`dl.facts dt:text-is("${term}") + dd`).first();
const rows = (page: Page) => page.locator('table tbody tr');
const mailRow = (page: Page, subject: string) => page.locator('tbody tr', { has: page.locator('a.subject', { hasText: subject }) });
const errorOf = (page: Page, label: string) => page.locator('.field.has-error', { has: page.getByLabel(label, { exact: true }) }).locator('.error');

beforeAll(async () => {
  dns = await startDnsServer();
  dkim = publishSenders(dns);
  [server, browser] = await Promise.all([startTestServer({ DNS_SERVERS: dns.address, INBOUND_MX_HOST: MX_HOST, DISPATCH_POLL_MS: '50' }, { inbound: true }), launchBrowser()]);
  ({ teamId, apiKey: key } = await server.team('Acme'));
  await verifiedDomain(server, key, 'acme.test');
  await ok('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hooks', description: 'Help desk', events: ['email.received'] });
  person = await signedIn(browser, server, teamId);
  dialogs = watchDialogs(person.page);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await dns?.close();
});

describe('the Inbound page', () => {
  let messageId: string;
  let raw: Buffer;

  it('a person adds a route through the form and sees the MX record to create, with a copy button; the fields shown follow the action', async () => {
    const { page } = person;
    await page.goto('/');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Inbound' }).click();
    await page.waitForURL(`${server.url}/inbound`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Inbound');
    expect(await page.locator('.empty').first().textContent()).toContain('No routes yet');

    const forwardTo = page.getByLabel('Forward to');
    const helpDesk = page.getByLabel('Help desk');
    expect(await forwardTo.isVisible()).toBe(false);
    expect(await helpDesk.isVisible()).toBe(false);
    await page.getByLabel('Action').selectOption('forward');
    expect(await forwardTo.isVisible()).toBe(true);
    expect(await helpDesk.isVisible()).toBe(false);
    await page.getByLabel('Action').selectOption('webhook');
    expect(await forwardTo.isVisible()).toBe(false);
    expect(await helpDesk.isVisible()).toBe(true);

    await page.getByLabel('Address').fill('Support@ACME.test');
    await helpDesk.check();
    // Typed there while the action was forward, then left hidden: a webhook route does not send it.
    await page.getByLabel('Action').selectOption('forward');
    await forwardTo.fill('not an address');
    await page.getByLabel('Action').selectOption('webhook');
    await page.getByRole('button', { name: 'Add route' }).click();
    await page.waitForURL(`${server.url}/inbound`);
    expect(await page.getByRole('status').textContent()).toBe(`Route for support@acme.test added: create its MX record (@ in acme.test, pointing at ${MX_HOST})`);

    const row = rows(page).first();
    expect(await row.locator('.route-match').textContent()).toBe('support@acme.test');
    expect(await row.locator('.route-action').textContent()).toBe('Kept; email.received sent to Help desk');
    expect(await row.locator('.record-name code').textContent()).toBe('@');
    expect(await row.locator('.record-value code').textContent()).toBe(MX_HOST);
    expect(await row.locator('.record-value button.copy').getAttribute('data-copy')).toBe(MX_HOST);
    expect(await row.locator('.record-priority').textContent()).toBe('10');
    expect(await row.locator('.record-zone').textContent()).toBe('acme.test');
    const [route] = (await ok('GET', '/v1/inbound/routes')).data;
    expect(route).toMatchObject({ match: 'support@acme.test', action: 'webhook', forwardTo: [] });
    expect(route.webhookIds).toHaveLength(1);

    // A wildcard on a subdomain, kept only: its MX record is named for the subdomain, in the zone of the verified domain.
    await page.getByLabel('Address').fill('*@in.acme.test');
    await page.getByLabel('Action').selectOption('store');
    await page.getByRole('button', { name: 'Add route' }).click();
    await page.waitForURL(`${server.url}/inbound`);
    const sub = rows(page).filter({ hasText: '*@in.acme.test' });
    expect(await sub.locator('.record-name code').textContent()).toBe('in');
    expect(await sub.locator('.record-zone').textContent()).toBe('acme.test');
    expect(await sub.locator('.route-action').textContent()).toBe('Kept');
  });

  it('mail sent to a route shows in the list with its authentication, and on its page with its facts, its checks, its bodies and its attachment', async () => {
    // An email the team sent, which the message answers.
    const { emailId } = await ok('POST', '/v1/emails', { from: 'help@acme.test', to: 'ann@sender.test', subject: 'Your order', text: 'It is on its way.' });
    await waitForEmail(server, key, emailId, settled);
    const sent = await server.deps.db.selectFrom('emails').select('message_id').where('id', '=', emailId).executeTakeFirstOrThrow();

    raw = await dkim.sign(
      withAttachment(
        { To: 'support@acme.test', Cc: 'orders@example.org', Subject: 'Re: Your order', 'In-Reply-To': sent.message_id },
        'The box arrived crushed. The report is attached.',
        '<p id="said">The box arrived <b>crushed</b>.</p>',
      ),
    );
    expect(await deliver(['support@acme.test'], raw)).toMatchObject({ accepted: true, code: 250 });
    await deliver(['desk@in.acme.test'], await dkim.sign(message({ To: 'desk@in.acme.test', Subject: 'Opening hours?' }, 'When are you open on Sunday?')));
    await deliver(['support@acme.test'], message({ From: 'Bank <security@bank.test>', Subject: 'Confirm your account now' }, 'Click here.'), 'security@bank.test');

    const { page } = person;
    await page.goto('/inbound');
    expect(await page.locator('tbody a.subject').allTextContents()).toEqual(['Confirm your account now', 'Opening hours?', 'Re: Your order']);
    const row = mailRow(page, 'Re: Your order');
    expect(await row.locator('.from').textContent()).toBe('from ann@sender.test');
    expect(await row.locator('.to').textContent()).toBe('to support@acme.test');
    expect(await row.locator('small').textContent()).toContain('1 attachment');
    expect(await row.locator('.badge').allTextContents()).toEqual(['SPF pass', 'DKIM pass', 'DMARC pass']);
    expect(await row.locator('time').count()).toBe(1);
    const forged = mailRow(page, 'Confirm your account now');
    expect(await forged.locator('.badge').allTextContents()).toEqual(['SPF fail', 'DKIM none', 'DMARC fail']);
    await screenshot(page, 'inbound');

    // The filter by route.
    await page.getByLabel('Route').selectOption({ label: '*@in.acme.test' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/routeId=/);
    expect(await page.locator('tbody a.subject').allTextContents()).toEqual(['Opening hours?']);
    expect(await page.getByLabel('Route').locator('option:checked').textContent()).toBe('*@in.acme.test');
    await page.getByLabel('Route').selectOption({ label: 'support@acme.test' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/routeId=/);
    expect(await page.locator('tbody a.subject').allTextContents()).toEqual(['Confirm your account now', 'Re: Your order']);

    await mailRow(page, 'Re: Your order').getByRole('link', { name: 'Re: Your order' }).click();
    await page.waitForURL(/\/inbound\/[^/]+$/);
    messageId = new URL(page.url()).pathname.split('/').pop()!;
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Re: Your order');
    expect(await fact(page, 'From').textContent()).toBe('ann@sender.test');
    expect(await fact(page, 'To').textContent()).toBe('support@acme.test');
    expect(await fact(page, 'Cc').textContent()).toBe('orders@example.org');
    expect(await fact(page, 'Route').textContent()).toBe('support@acme.test');
    expect(await fact(page, 'Envelope sender').textContent()).toBe('ann@sender.test');
    expect(await fact(page, 'Envelope recipients').textContent()).toBe('support@acme.test');
    expect(await fact(page, 'Client address').textContent()).toMatch(/^127\.0\.0\.1( HELO .+)?$/);
    expect(await fact(page, 'Message-ID').textContent()).toMatch(/^<\w+@sender\.test>$/);
    expect(await fact(page, 'In-Reply-To').textContent()).toContain(sent.message_id);
    expect(await fact(page, 'In-Reply-To').getByRole('link').getAttribute('href')).toBe(`/emails/${emailId}`);

    expect(await page.locator('.auth-spf').textContent()).toBe('pass domain sender.test client 127.0.0.1');
    expect(await page.locator('.auth-dkim > .badge').textContent()).toBe('pass');
    expect(await page.locator('.auth-dkim li').allTextContents()).toEqual(['pass domain sender.test selector sel1 aligned with From']);
    expect(await page.locator('.auth-dmarc').textContent()).toBe('pass domain sender.test policy reject');

    const stored = await ok('GET', `/v1/inbound/emails/${messageId}`);
    expect(stored.text).toMatch(/^The box arrived crushed\. The report is attached\.\n+$/);
    expect(await page.locator('pre.email-text').textContent()).toBe(stored.text);
    expect(await page.frameLocator('iframe.email-body').locator('#said').textContent()).toBe('The box arrived crushed.');
    const attachment = page.getByRole('link', { name: 'report.pdf' });
    expect(await attachment.getAttribute('href')).toBe(`/inbound/${messageId}/attachments/att_1`);
    expect(await page.locator('section', { has: page.getByRole('heading', { name: 'Attachments' }) }).locator('tbody td').allTextContents()).toEqual([
      'report.pdf', 'application/pdf', `${PDF.length} bytes`,
    ]);
    expect(await page.getByRole('link', { name: 'Download raw message' }).getAttribute('href')).toBe(`/inbound/${messageId}/raw`);
    await screenshot(page, 'inbound-message');
    await page.locator('details summary').click();
    expect(await fact(page, 'subject').textContent()).toBe('Re: Your order');
    expect(dialogs).toEqual([]);

    // From the reply to the email it answers.
    await fact(page, 'In-Reply-To').getByRole('link').click();
    await page.waitForURL(`${server.url}/emails/${emailId}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Your order');
  });

  it('the attachment and the raw message download through the session as their bytes, as attachments, never to be shown', async () => {
    const { page } = person;
    const attachment = await page.request.get(`/inbound/${messageId}/attachments/att_1`);
    expect(attachment.status()).toBe(200);
    expect(attachment.headers()['content-type']).toBe('application/pdf');
    expect(attachment.headers()['content-disposition']).toMatch(/^attachment; filename="report.pdf"/);
    expect(attachment.headers()['x-content-type-options']).toBe('nosniff');
    expect(attachment.headers()['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(Buffer.from(await attachment.body()).equals(PDF)).toBe(true);

    const rawDownload = await page.request.get(`/inbound/${messageId}/raw`);
    expect(rawDownload.status()).toBe(200);
    expect(rawDownload.headers()['content-type']).toBe('message/rfc822');
    expect(rawDownload.headers()['content-disposition']).toMatch(new RegExp(`^attachment; filename="${messageId}.eml"`));
    expect(rawDownload.headers()['x-content-type-options']).toBe('nosniff');
    expect(Buffer.from(await rawDownload.body()).equals(raw)).toBe(true);

    // The browser saves them as files, named as the message named them.
    await page.goto(`/inbound/${messageId}`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'report.pdf' }).click()]);
    expect(download.suggestedFilename()).toBe('report.pdf');

    expect((await page.request.get(`/inbound/${messageId}/attachments/att_9`)).status()).toBe(404);
    // Without the session: the sign-in page, nothing of the message.
    const stranger = await fetch(`${server.url}/inbound/${messageId}/raw`, { redirect: 'manual' });
    expect(stranger.status).not.toBe(200);
    expect(await stranger.text()).not.toContain('crushed');
  });

  it('a message whose HTML holds scripts runs nothing, and its markup elsewhere shows as text', async () => {
    const { page } = person;
    await deliver(
      ['support@acme.test'],
      withAttachment(
        { Subject: `Hostile ${HOSTILE}` },
        `Text ${HOSTILE}`,
        '<p id="said">Body text</p><script>document.getElementById("said").textContent = "script ran"; alert("inline")</script><img src="x" onerror="alert(\'onerror\')"><form action="https://evil.test/"><input name="password"></form>',
      ),
    );
    await page.goto('/inbound');
    expect(await page.locator('tbody a.subject').first().textContent()).toBe(`Hostile ${HOSTILE}`);
    await expectShownAsText(page, `Hostile ${HOSTILE}`, dialogs);

    await page.locator('tbody a.subject').first().click();
    await page.waitForURL(/\/inbound\/[^/]+$/);
    const id = new URL(page.url()).pathname.split('/').pop()!;
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(`Hostile ${HOSTILE}`);
    expect((await page.locator('pre.email-text').textContent())!.trimEnd()).toBe(`Text ${HOSTILE}`);
    await expectShownAsText(page, `Text ${HOSTILE}`, dialogs);
    const frame = page.locator('iframe.email-body');
    expect(await frame.getAttribute('sandbox')).toBe('');
    expect(await frame.getAttribute('src')).toBe(`/inbound/${id}/body`);
    expect(await page.frameLocator('iframe.email-body').locator('#said').textContent()).toBe('Body text');
    await page.waitForTimeout(200);
    expect(dialogs).toEqual([]);

    const body = await page.request.get(`/inbound/${id}/body`);
    expect(body.status()).toBe(200);
    expect(body.headers()['content-security-policy']).toBe("sandbox; default-src 'none'; img-src data: https: http:; style-src 'unsafe-inline'; font-src data: https:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'");
    expect(body.headers()['x-frame-options']).toBe('SAMEORIGIN');
    expect(await body.text()).toContain('<script>');
    // Opened by itself, as a link in a mail would open it: still nothing runs.
    await page.goto(`/inbound/${id}/body`);
    expect(await page.locator('#said').textContent()).toBe('Body text');
    expect(dialogs).toEqual([]);
  });

  it('a refused route is explained next to its field, keeping what was typed, and nothing is made', async () => {
    const { page } = person;
    await page.goto('/inbound');
    const before = (await ok('GET', '/v1/inbound/routes')).data.length;

    await page.getByLabel('Address').fill('help@unknown.test');
    await page.getByLabel('Action').selectOption('webhook');
    await page.getByLabel('Help desk').check();
    expect(await submitted(page, () => page.getByRole('button', { name: 'Add route' }).click())).toBe(400);
    expect(await errorOf(page, 'Address').textContent()).toBe('unknown.test is not a verified domain of the team nor under one; add and verify it (or its parent) first');
    expect(await page.getByLabel('Address').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Address').inputValue()).toBe('help@unknown.test');
    expect(await page.getByLabel('Action').inputValue()).toBe('webhook');
    expect(await page.getByLabel('Help desk').isChecked()).toBe(true);
    await screenshot(page, 'inbound-refused');

    await page.getByLabel('Address').fill('sales@acme.test');
    await page.getByLabel('Action').selectOption('forward');
    await page.getByLabel('Forward to').fill('team@example.org, not an address');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Add route' }).click())).toBe(400);
    expect(await errorOf(page, 'Forward to').textContent()).toBe('"not an address" is not a valid email address');
    expect(await page.getByLabel('Forward to').inputValue()).toBe('team@example.org, not an address');
    expect(await page.getByLabel('Forward to').isVisible()).toBe(true);

    await page.getByLabel('Address').fill('support@acme.test');
    await page.getByLabel('Action').selectOption('store');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Add route' }).click())).toBe(409);
    expect(await errorOf(page, 'Address').textContent()).toBe('A route for support@acme.test exists already');

    expect((await ok('GET', '/v1/inbound/routes')).data).toHaveLength(before);
  });

  it('a route is deleted after a confirm; mail to it is refused from then on, and the mail it took stays', async () => {
    const { page } = person;
    await ok('POST', '/v1/inbound/routes', { match: 'old@acme.test', action: 'store' });
    await deliver(['old@acme.test'], message({ To: 'old@acme.test', Subject: 'To the old address' }, 'Hello'));
    await page.goto('/inbound');
    const seen = dialogs.length;
    await rows(page).filter({ hasText: 'old@acme.test' }).getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(`${server.url}/inbound`);
    await page.getByRole('status').waitFor();
    expect(dialogs.slice(seen)).toEqual(['confirm: Delete the route for old@acme.test? Mail to it is refused from then on; the mail it took stays.']);
    expect(await page.getByRole('status').textContent()).toBe('Route deleted: mail to it is refused from now on');
    expect(await page.locator('.route-match').allTextContents()).not.toContain('old@acme.test');
    expect((await deliver(['old@acme.test'], message({ To: 'old@acme.test' }, 'Again'))).code).toBe(550);
    expect(await mailRow(page, 'To the old address').locator('small').textContent()).toContain('deleted route');
    dialogs.splice(seen);
  });
});

describe('paging and isolation', () => {
  it('the mail pages 50 at a time, newest first, every message on exactly one page', async () => {
    const paged = await server.team('Paged');
    const at = Date.now();
    for (let i = 0; i < 55; i++) {
      await insertInboundEmail(server.deps.db, {
        team_id: paged.teamId, id: `paged${String(i).padStart(3, '0')}`, route_id: null, mail_from: 'a@sender.test', rcpt_to: ['x@paged.test'],
        client_address: '127.0.0.1', helo: null, from_address: 'a@sender.test', to_addresses: ['x@paged.test'], cc_addresses: [], subject: `Paged ${i}`,
        text: 'x', html: null, headers: [], message_id: null, in_reply_to: null, in_reply_to_email_id: null, attachments: [],
        authentication: { spf: { result: 'none' }, dkim: { result: 'none', signatures: [] }, dmarc: { result: 'none' } }, size: 10,
        received_at: new Date(at - i * 60_000), raw: Buffer.from('x'),
      });
    }
    const { context, page } = await signedIn(browser, server, paged.teamId);
    await page.goto('/inbound');
    const first = await page.locator('tbody a.subject').allTextContents();
    expect(first).toHaveLength(50);
    expect(first[0]).toBe('Paged 0');
    await page.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL(/page=2/);
    const second = await page.locator('tbody a.subject').allTextContents();
    expect(second).toEqual(['Paged 50', 'Paged 51', 'Paged 52', 'Paged 53', 'Paged 54']);
    expect(await page.getByRole('link', { name: 'Next →' }).count()).toBe(0);
    expect((await page.goto('/inbound?page=0'))!.status()).toBe(400);
    expect(await page.getByRole('alert').textContent()).toContain('Page');
    await context.close();
  });

  it("a person of another team sees none of this team's routes or mail, and gets 404 for its URLs, which change nothing", async () => {
    const [route] = (await ok('GET', '/v1/inbound/routes')).data;
    const [mail] = (await ok('GET', '/v1/inbound/emails')).data;
    const other = await server.team('Other');
    const { context, page } = await signedIn(browser, server, other.teamId);
    const otherDialogs = watchDialogs(page);
    await page.goto('/inbound');
    expect(await page.locator('.route-match').count()).toBe(0);
    expect(await page.locator('tbody a.subject').count()).toBe(0);
    expect(await page.getByLabel('Route').locator('option').allTextContents()).toEqual(['Every route']);
    expect(await page.content()).not.toContain('acme.test');
    await page.goto(`/inbound?routeId=${route.id}`);
    expect(await page.locator('tbody a.subject').count()).toBe(0);

    for (const suffix of ['', '/body', '/raw', '/attachments/att_1']) {
      const res = await page.request.get(`/inbound/${mail.id}${suffix}`);
      expect(res.status(), suffix).toBe(404);
      expect(await res.text()).not.toContain(mail.subject);
    }
    expect((await page.goto(`/inbound/${mail.id}`))!.status()).toBe(404);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Not found');
    await page.goto('/inbound');
    expect((await postAs({ context, page, email: '', userId: '' }, `/inbound/routes/${route.id}/delete`)).status()).toBe(404);
    expect((await ok('GET', `/v1/inbound/routes/${route.id}`)).id).toBe(route.id);
    // Nor may its form add a route on this team's domain.
    await page.getByLabel('Address').fill('sales@acme.test');
    expect(await submitted(page, () => page.getByRole('button', { name: 'Add route' }).click())).toBe(400);
    expect(await errorOf(page, 'Address').textContent()).toContain('acme.test is not a verified domain of the team');
    expect(otherDialogs).toEqual([]);
    await context.close();
  });

  it('at phone width the list and a message do not scroll sideways', async () => {
    const [mail] = (await ok('GET', '/v1/inbound/emails?limit=100')).data.filter((m: any) => m.subject === 'Re: Your order');
    const { context, page } = await signedIn(browser, server, teamId, { viewport: { width: 390, height: 844 } });
    await page.goto('/inbound');
    await screenshot(page, 'inbound-phone');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.goto(`/inbound/${mail.id}`);
    await page.locator('details summary').click();
    await screenshot(page, 'inbound-message-phone');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await context.close();
  });
});
