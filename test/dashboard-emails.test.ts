import { sql } from 'kysely';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signedIn } from './helpers/browser.js';
import { verifiedDomain } from './helpers/domains.js';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { waitFor } from './helpers/wait.js';

let sink: SmtpSink;
let server: TestServer;
let browser: Browser;
let teamId: number;
let key: string;
let domain: { id: number; name: string };
let from: string;
let person: BrowserContext;

const MARKUP = '<script>alert(1)</script><b>x</b>';
const REFUSED = 'refused@example.org';

beforeAll(async () => {
  sink = await startSmtpSink({ closeTimeout: 50 });
  [server, browser] = await Promise.all([startTestServer({ SMTP_URL: sink.url, DISPATCH_POLL_MS: '20', CAMPAIGN_POLL_MS: '20' }), launchBrowser()]);
  ({ teamId, apiKey: key } = await server.team('Emails team'));
  domain = await verifiedDomain(server, key, 'dashboard-emails.test');
  from = `Mailroom <hello@${domain.name}>`;
  // A receiver whose refusal carries markup: it lands in the BOUNCED event's details.
  sink.rule = { rcpt: (address) => (address === REFUSED ? { code: 550, message: `No such user ${MARKUP}` } : null) };
  ({ context: person } = await signedIn(browser, server, teamId));
}, 30_000);
afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await sink?.close();
});

async function send(body: Record<string, unknown>): Promise<string> {
  const res = await server.call('POST', '/v1/emails', { key, body: { from, to: 'ada@example.org', subject: 'Hello', text: 'Hello', ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.emailId;
}

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();
const email = async (id: string) => (await server.call('GET', `/v1/emails/${id}`, { key })).body;

/** A new page of the signed-in person that records every dialog (none should open but confirms). */
async function openPage(context: BrowserContext = person): Promise<{ page: Page; dialogs: string[] }> {
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  return { page, dialogs };
}

/** Clicks and answers the status of the POST it makes (the page then shows what came back). */
async function submitStatus(page: Page, click: () => Promise<void>): Promise<number> {
  const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), click()]);
  return response.status();
}

const rowSubjects = (page: Page) => page.locator('tbody a.subject').allTextContents();

describe('the emails list', () => {
  it('an email sent by the API is listed newest first, and its page shows its facts and its sent and delivered events', async () => {
    const id = await send({ to: ['ada@example.org', 'bob@example.org'], cc: 'carol@example.org', replyTo: 'help@example.org', subject: 'Timeline check', text: undefined, html: '<p>Hello <i>Ada</i></p>', headers: { 'X-Campaign-Ref': 'spring' } });
    await waitForEmail(server, key, id, (e) => e.latestStatus === 'DELIVERED');
    const { page, dialogs } = await openPage();
    await page.goto('/emails');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Emails');
    const row = page.locator('tbody tr').first();
    expect(await row.locator('a.subject').textContent()).toBe('Timeline check');
    expect(await row.locator('.to').textContent()).toBe('to ada@example.org, bob@example.org, carol@example.org');
    expect(await row.locator('small').textContent()).toContain(domain.name);
    expect(await row.locator('.badge').textContent()).toBe('DELIVERED');
    await screenshot(page, 'emails-list');

    await row.getByRole('link', { name: 'Timeline check' }).click();
    await page.waitForURL(`${server.url}/emails/${id}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Timeline check');
    const facts = page.locator('section', { has: page.getByRole('heading', { name: 'Facts' }) });
    expect(await facts.textContent()).toContain('carol@example.org');
    expect(await facts.textContent()).toContain('help@example.org');
    expect(await facts.textContent()).toContain(`hello@${domain.name}`);
    const events = page.locator('.timeline li');
    expect(await events.locator('.badge').allTextContents()).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    // The receiver's reply to the message, as the SENT event recorded it.
    expect(await events.nth(1).textContent()).toContain('SMTP reply');
    expect(await events.nth(1).locator('dd').first().textContent()).toMatch(/^250 /);
    expect(await page.locator('section', { has: page.getByRole('heading', { name: 'Header fields' }) }).textContent()).toContain('X-Campaign-Refspring');
    expect(await page.frameLocator('iframe.email-body').locator('p').textContent()).toBe('Hello Ada');
    expect(await page.locator('pre.email-text').textContent()).toBe('Hello Ada');
    await screenshot(page, 'email');
    expect(dialogs).toEqual([]);
    await page.close();
  });

  it('filtering by status and searching the subject or a recipient (case-insensitive, wildcards taken literally) find exactly the right rows', async () => {
    const scheduled = await send({ subject: 'Filter later', to: 'zed.filter@example.org', scheduledAt: inAnHour() });
    const invoice = await send({ subject: 'Your INVOICE 42 filter', to: 'ivy@example.org' });
    const percent = await send({ subject: 'Filter 100% off', to: 'pat@example.org' });
    await send({ subject: 'Filter 100 percent', to: 'pam@example.org' });
    await send({ subject: 'Filter 1000 off', to: 'under_score@example.org' });
    for (const id of [invoice, percent]) await waitForEmail(server, key, id, settled);

    const { page } = await openPage();
    await page.goto('/emails');
    await page.getByLabel('Status').selectOption('SCHEDULED');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=SCHEDULED/);
    expect(new Set(await page.locator('tbody .badge').allTextContents())).toEqual(new Set(['SCHEDULED']));
    expect(await page.locator(`tbody a[href="/emails/${scheduled}"]`).count()).toBe(1);
    expect(await page.locator('tbody tr', { hasText: 'Filter later' }).textContent()).toContain('sends');
    await screenshot(page, 'emails-list-scheduled');

    const search = async (q: string) => {
      await page.goto('/emails');
      await page.getByLabel('Search').fill(q);
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/q=/);
      return rowSubjects(page);
    };
    expect(await search('invoice 42')).toEqual(['Your INVOICE 42 filter']);
    expect(await search('ZED.FILTER@')).toEqual(['Filter later']);
    expect(await search('100%')).toEqual(['Filter 100% off']);
    expect(await search('r_s')).toEqual(['Filter 1000 off']);
    expect(await search('nothing like this')).toEqual([]);
    expect(await page.locator('.empty').textContent()).toContain('No emails match these filters');

    // Search and status together, and the domain select lists the team's domain.
    await page.goto(`/emails?q=filter&status=SCHEDULED&domainId=${domain.id}`);
    expect(await rowSubjects(page)).toEqual(['Filter later']);
    expect(await page.getByLabel('Domain').locator('option:checked').textContent()).toBe(domain.name);
    await page.close();
  });

  it('the list pages 50 at a time: 60 matching emails make two pages, every email on exactly one, the filters kept', async () => {
    const res = await server.call('POST', '/v1/emails/batch', {
      key,
      body: Array.from({ length: 60 }, (_, i) => ({ from, to: `paged${i}@example.org`, subject: `Paged ${i}`, text: 'x', scheduledAt: inAnHour() })),
    });
    expect(res.status).toBe(200);
    const { page } = await openPage();
    await page.goto('/emails?q=Paged');
    const first = await rowSubjects(page);
    expect(first).toHaveLength(50);
    expect(await page.locator('.pager').textContent()).toContain('Page 1');
    await page.getByRole('link', { name: 'Next →' }).click();
    await page.waitForURL(/page=2/);
    expect(new URL(page.url()).searchParams.get('q')).toBe('Paged');
    const second = await rowSubjects(page);
    expect(second).toHaveLength(10);
    expect(new Set([...first, ...second]).size).toBe(60);
    expect(await page.getByRole('link', { name: 'Next →' }).count()).toBe(0);
    await page.getByRole('link', { name: '← Previous' }).click();
    await page.waitForURL(/page=1/);
    expect(await rowSubjects(page)).toEqual(first);
    await page.close();
  });

  it('bad filters re-render the form with the message next to the field and a 400, never a 500', async () => {
    const { page } = await openPage();
    const bad = await page.goto('/emails?startDate=yesterday-ish&status=LOST');
    expect(bad!.status()).toBe(400);
    expect(await page.locator('.field.has-error', { has: page.getByLabel('From') }).locator('.error').textContent()).toBe('must be an ISO 8601 date or date-time');
    expect(await page.locator('.field.has-error', { has: page.getByLabel('Status') }).locator('.error').textContent()).toBe('is not a status of an email');
    await screenshot(page, 'emails-list-bad-filters');
    const backwards = await page.goto('/emails?startDate=2025-03-02&endDate=2025-03-01');
    expect(backwards!.status()).toBe(400);
    expect(await page.locator('.field.has-error', { has: page.getByLabel('To', { exact: true }) }).locator('.error').textContent()).toBe('must not be before the start date');
    const deep = await page.goto('/emails?page=100000');
    expect(deep!.status()).toBe(400);
    expect(await page.getByRole('alert').textContent()).toContain('narrow the dates');
    const long = await page.goto(`/emails?q=${'a'.repeat(201)}`);
    expect(long!.status()).toBe(400);
    expect(await page.locator('.field.has-error', { has: page.getByLabel('Search') }).locator('.error').textContent()).toBe('must be at most 200 characters');
    // A date range that holds the mail of today finds it; "to" covers the whole day.
    const today = new Date().toISOString().slice(0, 10);
    const ok = await page.goto(`/emails?startDate=${today}&endDate=${today}&q=Timeline`);
    expect(ok!.status()).toBe(200);
    expect(await rowSubjects(page)).toEqual(['Timeline check']);
    await page.close();
  });

  it('a search reads at most the newest 10,000 emails of its dates, says so when older mail is left, and the dates reach it', async () => {
    const bulk = await server.team('Bulk team');
    // 10,050 emails a minute apart; the oldest is the one sought.
    await sql`
      INSERT INTO emails (team_id, id, from_address, to_addresses, subject, message_id, status, created_at, updated_at)
      SELECT ${bulk.teamId}, 'bulk' || g, 'a@bulk.test', '["x@example.org"]', CASE WHEN g = 10050 THEN 'Needle' ELSE 'Hay ' || g END,
        '<bulk' || g || '@bulk.test>', 'DELIVERED', now() - g * interval '1 minute', now()
      FROM generate_series(1, 10050) g`.execute(server.deps.db);
    const { context, page } = await signedIn(browser, server, bulk.teamId);
    await page.goto('/emails?q=needle');
    expect(await rowSubjects(page)).toEqual([]);
    expect(await page.locator('main').textContent()).toContain('Looked through the newest 10,000 emails of these filters');
    const day = new Date(Date.now() - 10050 * 60_000).toISOString().slice(0, 10);
    await page.goto(`/emails?q=needle&startDate=${day}&endDate=${day}`);
    expect(await rowSubjects(page)).toEqual(['Needle']);
    expect(await page.locator('main').textContent()).not.toContain('Looked through');
    await context.close();
  });

  it('at phone width the list and an email stay readable', async () => {
    const { context, page } = await signedIn(browser, server, teamId, { viewport: { width: 390, height: 844 } });
    await page.goto('/emails?q=filter');
    await screenshot(page, 'emails-list-phone');
    const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(scrollWidth).toBeLessThanOrEqual(390);
    await page.locator('tbody a').first().click();
    await page.waitForURL(/\/emails\/\w+$/);
    await screenshot(page, 'email-phone');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await context.close();
  });
});

describe('one email', () => {
  it('an HTML body holding scripts runs nothing: the frame is sandboxed and its own response forbids scripts and foreign framing', async () => {
    const id = await send({
      subject: 'Scripted body',
      html: '<p id="said">Body text</p><script>document.getElementById("said").textContent = "script ran"; alert("inline")</script><img src="x" onerror="alert(\'onerror\')">',
    });
    const { page, dialogs } = await openPage();
    await page.goto(`/emails/${id}`);
    const frame = page.locator('iframe.email-body');
    expect(await frame.getAttribute('sandbox')).toBe('');
    expect(await frame.getAttribute('src')).toBe(`/emails/${id}/body`);
    expect(await page.frameLocator('iframe.email-body').locator('#said').textContent()).toBe('Body text');
    await page.waitForTimeout(200);
    expect(dialogs).toEqual([]);

    const body = await page.request.get(`/emails/${id}/body`);
    expect(body.status()).toBe(200);
    expect(body.headers()['content-security-policy']).toBe("sandbox; default-src 'none'; img-src data: https: http:; style-src 'unsafe-inline'; font-src data: https:; form-action 'none'; base-uri 'none'; frame-ancestors 'self'");
    expect(body.headers()['x-frame-options']).toBe('SAMEORIGIN');
    expect(body.headers()['content-type']).toBe('text/html; charset=utf-8');
    expect(await body.text()).toContain('<script>');
    await page.close();
  });

  it('a scheduled email is cancelled from its page, and the API then says CANCELLED', async () => {
    const id = await send({ subject: 'Cancel me', scheduledAt: inAnHour() });
    const page = await person.newPage();
    const confirms: string[] = [];
    page.on('dialog', (dialog) => {
      confirms.push(dialog.message());
      void dialog.accept();
    });
    await page.goto(`/emails/${id}`);
    expect(await page.getByRole('heading', { level: 2, name: /^Scheduled for/ }).count()).toBe(1);
    await page.getByRole('button', { name: 'Cancel email' }).click();
    await page.waitForURL(`${server.url}/emails/${id}`);
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Email cancelled: it will not be sent');
    expect(confirms).toEqual(['Cancel this email? It will never be sent.']);
    expect((await email(id)).latestStatus).toBe('CANCELLED');
    expect(await page.getByRole('button', { name: 'Cancel email' }).count()).toBe(0);
    expect(await page.locator('.timeline .badge').allTextContents()).toEqual(['SCHEDULED', 'CANCELLED']);
    await page.close();
  });

  it('rescheduling with a time that is no time shows the error next to the field (400); a real one moves the email', async () => {
    const id = await send({ subject: 'Reschedule me', scheduledAt: inAnHour() });
    const { page } = await openPage();
    await page.goto(`/emails/${id}`);
    await page.getByLabel('New send time').fill('whenever-ish or so');
    expect(await submitStatus(page, () => page.getByRole('button', { name: 'Reschedule' }).click())).toBe(400);
    const error = page.locator('.field.has-error', { has: page.getByLabel('New send time') }).locator('.error');
    expect(await error.textContent()).toMatch(/reads as a time|not a time|could not/i);
    expect(await page.getByLabel('New send time').inputValue()).toBe('whenever-ish or so');
    await screenshot(page, 'email-reschedule-error');

    await page.getByLabel('New send time').fill('2020-01-01T00:00:00Z');
    expect(await submitStatus(page, () => page.getByRole('button', { name: 'Reschedule' }).click())).toBe(400);
    expect(await error.textContent()).toContain('in the past');

    await page.getByLabel('New send time').fill('in 3 hours');
    const submitted = Date.now();
    await page.getByRole('button', { name: 'Reschedule' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Email rescheduled');
    const moved = await email(id);
    const read = Date.now();
    expect(moved.latestStatus).toBe('SCHEDULED');
    // Three hours from the moment the server read the form: after it was sent, before the email was read back.
    expect(Date.parse(moved.scheduledAt) - 3 * 3_600_000).toBeGreaterThanOrEqual(submitted);
    expect(Date.parse(moved.scheduledAt) - 3 * 3_600_000).toBeLessThanOrEqual(read);
    expect(statusesOf(moved)).toEqual(['SCHEDULED', 'SCHEDULED']);
    await page.close();
  });

  it('a change to an email no longer scheduled is refused on the page with the reason, not an error page', async () => {
    const id = await send({ subject: 'Too late', scheduledAt: inAnHour() });
    const { page } = await openPage();
    await page.goto(`/emails/${id}`);
    expect((await server.call('POST', `/v1/emails/${id}/cancel`, { key })).status).toBe(200);
    await page.getByLabel('New send time').fill('in 2 hours');
    expect(await submitStatus(page, () => page.getByRole('button', { name: 'Reschedule' }).click())).toBe(409);
    expect(await page.getByRole('alert').textContent()).toContain('is CANCELLED');
    expect((await email(id)).latestStatus).toBe('CANCELLED');
    await page.close();
  });

  it('mail whose body retention dropped says so instead of showing an empty frame', async () => {
    const id = await send({ subject: 'Old mail', html: '<p>Long gone</p>' });
    await waitForEmail(server, key, id, settled);
    // What retention's pass does to an old email (test/retention.db.test.ts runs the real pass).
    await server.deps.db.updateTable('emails').set({ html: null, text: null, body_dropped_at: new Date() }).where('id', '=', id).execute();
    const { page } = await openPage();
    await page.goto(`/emails/${id}`);
    expect(await page.locator('iframe').count()).toBe(0);
    expect(await page.locator('section', { has: page.getByRole('heading', { name: 'Content' }) }).textContent()).toContain('The body was dropped by retention');
    expect((await page.request.get(`/emails/${id}/body`)).status()).toBe(404);
    await page.close();
  });

  it('campaign mail says its body is rendered from the campaign, and links to the campaign', async () => {
    const call = async (path: string, body: unknown) => {
      const res = await server.call('POST', path, { key, body });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };
    const book = await call('/v1/contactBooks', { name: 'Readers' });
    await call(`/v1/contactBooks/${book.id}/contacts`, { email: 'reader@example.org' });
    const campaign = await call('/v1/campaigns', {
      name: 'Spring news', from, subject: 'Spring', contactBookId: book.id, sendNow: true, html: '<p>Spring</p><a href="{{unsubscribeUrl}}">Unsubscribe</a>',
    });
    const [row] = await waitFor(
      'the campaign email sent',
      () => server.deps.db.selectFrom('emails').select(['id', 'status']).where('campaign_id', '=', campaign.id).execute(),
      (rows) => rows.length === 1 && rows[0]!.status !== 'QUEUED',
    );
    const { page } = await openPage();
    await page.goto(`/emails/${row!.id}`);
    expect(await page.locator('iframe').count()).toBe(0);
    const content = page.locator('section', { has: page.getByRole('heading', { name: 'Content' }) });
    expect(await content.textContent()).toContain('rendered from the campaign');
    expect(await content.getByRole('link', { name: 'Spring news' }).getAttribute('href')).toBe(`/campaigns/${campaign.id}`);
    await page.close();
  });
});

describe('escaping and isolation', () => {
  it('markup in a subject, a header field, the text part and a receiver\'s reply shows as text on the list and the email page, and runs nothing', async () => {
    const id = await send({ to: REFUSED, subject: `Escape ${MARKUP}`, text: `Text ${MARKUP}`, headers: { 'X-Note': MARKUP } });
    await waitForEmail(server, key, id, (e) => e.latestStatus === 'BOUNCED');
    const { page, dialogs } = await openPage();
    await page.goto(`/emails?q=${encodeURIComponent(MARKUP)}`);
    expect(await rowSubjects(page)).toEqual([`Escape ${MARKUP}`]);
    expect(await page.getByLabel('Search').inputValue()).toBe(MARKUP);
    expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);

    await page.goto(`/emails/${id}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe(`Escape ${MARKUP}`);
    expect(await page.locator('pre.email-text').textContent()).toBe(`Text ${MARKUP}`);
    expect(await page.locator('section', { has: page.getByRole('heading', { name: 'Header fields' }) }).textContent()).toContain(`X-Note${MARKUP}`);
    const bounced = page.locator('.timeline li', { has: page.locator('.badge', { hasText: 'BOUNCED' }) });
    expect(await bounced.textContent()).toContain(`No such user ${MARKUP}`);
    expect(await bounced.textContent()).toContain('Bounce typePermanent');
    expect(await page.locator('b', { hasText: 'x' }).count()).toBe(0);
    expect(await page.locator('main script').count()).toBe(0);
    expect(dialogs).toEqual([]);
    await page.close();
  });

  it("a person of another team sees none of this team's emails, and gets 404 for its email, body, cancel and reschedule URLs, which change nothing", async () => {
    const id = await send({ subject: 'Private plans', html: '<p>Secret</p>', scheduledAt: inAnHour() });
    const other = await server.team('Other team');
    const { context, page } = await signedIn(browser, server, other.teamId);
    await page.goto('/emails');
    expect(await page.locator('tbody tr').count()).toBe(0);
    expect(await page.locator('.empty').textContent()).toContain('No emails yet');
    // Only the other team's own sandbox domain.
    expect(await page.getByLabel('Domain').locator('option').allTextContents()).toEqual(['All domains', 'sandbox.mailroom.localhost']);
    await page.goto('/emails?q=Private');
    expect(await page.locator('tbody tr').count()).toBe(0);

    expect((await page.goto(`/emails/${id}`))!.status()).toBe(404);
    expect(await page.content()).not.toContain('Private plans');
    expect((await page.goto(`/emails/${id}/body`))!.status()).toBe(404);
    expect(await page.content()).not.toContain('Secret');
    expect((await page.goto(`/emails?domainId=${domain.id}`))!.status()).toBe(404);

    await page.goto('/emails');
    const csrf = (await page.locator('input[name=_csrf]').first().getAttribute('value'))!;
    const cancel = await page.request.post(`/emails/${id}/cancel`, { form: { _csrf: csrf } });
    expect(cancel.status()).toBe(404);
    const reschedule = await page.request.post(`/emails/${id}/reschedule`, { form: { _csrf: csrf, scheduledAt: 'in 5 minutes' } });
    expect(reschedule.status()).toBe(404);
    expect(await reschedule.text()).not.toContain('Private plans');
    const unchanged = await email(id);
    expect(unchanged.latestStatus).toBe('SCHEDULED');
    expect(statusesOf(unchanged)).toEqual(['SCHEDULED']);
    await context.close();
  });
});
