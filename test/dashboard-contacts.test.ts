import { readFile } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signedIn } from './helpers/browser.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

let server: TestServer;
let browser: Browser;
let teamId: number;
let key: string;
let otherTeamId: number;

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
  ({ teamId, apiKey: key } = await server.team('Contacts team'));
  ({ teamId: otherTeamId } = await server.team('Another team'));
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const HOSTILE = '<script>alert(1)</script> <b>x</b>';
type ApiContact = { id: string; email: string; firstName: string | null; lastName: string | null; subscribed: boolean; unsubscribeReason: string | null };

async function newBook(name: string): Promise<string> {
  const res = await server.call('POST', '/v1/contactBooks', { key, body: { name } });
  expect(res.status).toBe(200);
  return res.body.id;
}

async function bulk(bookId: string, rows: unknown[]) {
  const res = await server.call('POST', `/v1/contactBooks/${bookId}/contacts/bulk`, { key, body: rows });
  expect(res.status).toBe(200);
  return res.body;
}

/** Every contact of the book as the API lists it, oldest first. */
async function contactsOf(bookId: string): Promise<ApiContact[]> {
  const all: ApiContact[] = [];
  for (let page = 1; ; page++) {
    const res = await server.call('GET', `/v1/contactBooks/${bookId}/contacts?limit=1000&page=${page}`, { key });
    expect(res.status).toBe(200);
    all.push(...res.body);
    if (all.length >= Number(res.headers.get('x-total-count'))) return all;
  }
}

const nameOf = (contact: ApiContact) => [contact.email, contact.firstName, contact.lastName, contact.subscribed];

/** The session cookie and CSRF token of a signed-in page, for requests sent without the browser. */
async function credentials(context: BrowserContext, page: Page) {
  const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const token = (await page.locator('input[name=_csrf]').first().getAttribute('value'))!;
  return { cookie, token };
}

/** Uploads a file as app.js does: the raw body, with the session cookie and the CSRF header. */
async function upload(creds: { cookie: string; token: string }, bookId: string, body: string) {
  const res = await fetch(`${server.url}/contacts/${bookId}/import`, {
    method: 'POST',
    headers: { cookie: creds.cookie, 'x-csrf-token': creds.token, 'content-type': 'text/csv' },
    body,
  });
  return { status: res.status, text: await res.text() };
}

const reportCount = (text: string, kind: 'created' | 'updated' | 'rejected') => Number(new RegExp(`data-count="${kind}">([\\d,]+)<`).exec(text)?.[1]?.replace(/,/g, ''));

/** Lines of the browser's import report table: [line, email, reason]. */
async function rejectionRows(page: Page) {
  return page.locator('[data-import-report] tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((td) => td.textContent ?? '')));
}

async function importInBrowser(page: Page, bookId: string, csv: string) {
  await page.goto(`/contacts/${bookId}/import`);
  await page.getByLabel('CSV file').setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
  await page.getByRole('button', { name: 'Import' }).click();
  await page.locator('[data-import-report], [data-upload-result] .form-error').first().waitFor();
}

describe('contact books', () => {
  it('a person creates, renames and deletes a contact book in the browser, with a bad name shown next to the field; the API sees each change', async () => {
    const { context, page } = await signedIn(browser, server, teamId);
    page.on('dialog', (dialog) => dialog.accept());
    await page.goto('/contacts');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Contacts');

    await page.getByLabel('New contact book').fill('n'.repeat(300));
    await page.getByRole('button', { name: 'Create book' }).click();
    expect(await page.locator('.field.has-error .error').textContent()).toBe('must be at most 255 characters');

    await page.getByLabel('New contact book').fill('Customers');
    await page.getByRole('button', { name: 'Create book' }).click();
    await page.waitForURL(/\/contacts\/[^/]+$/);
    const bookId = page.url().split('/').at(-1)!;
    expect(await page.locator('.notice').textContent()).toBe('Contact book "Customers" created');
    expect((await server.call('GET', `/v1/contactBooks/${bookId}`, { key })).body.name).toBe('Customers');
    await bulk(bookId, [{ email: 'one@example.com' }, { email: 'two@example.com' }]);
    await newBook('Newsletter readers');

    await page.goto('/contacts');
    const row = page.locator('tr', { hasText: 'Customers' });
    expect(await row.locator('td.num').textContent()).toBe('2');
    await screenshot(page, 'contacts-books');

    await row.getByRole('link', { name: 'Rename' }).click();
    await page.getByLabel('Name').fill('   ');
    await page.getByRole('button', { name: 'Save' }).click();
    expect(await page.locator('.field.has-error .error').textContent()).toBe('must not be empty');
    await page.getByLabel('Name').fill('Best customers');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}`);
    expect((await server.call('GET', `/v1/contactBooks/${bookId}`, { key })).body.name).toBe('Best customers');

    await page.goto('/contacts');
    await page.locator('tr', { hasText: 'Best customers' }).getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(`${server.url}/contacts`);
    expect(await page.locator('.notice').textContent()).toBe('Contact book deleted with its 2 contacts');
    expect(await page.locator('tr', { hasText: 'Best customers' }).count()).toBe(0);
    expect((await server.call('GET', `/v1/contactBooks/${bookId}`, { key })).status).toBe(404);
    await context.close();
  });
});

describe('contacts of a book', () => {
  it('adding, editing, unsubscribing and deleting a contact in the browser shows through the API; a bad or taken address is shown next to the field', async () => {
    const bookId = await newBook('Members');
    await bulk(bookId, [{ email: 'taken@example.com', firstName: 'Taken' }]);
    const { context, page } = await signedIn(browser, server, teamId);
    page.on('dialog', (dialog) => dialog.accept());
    await page.goto(`/contacts/${bookId}`);
    await page.getByRole('link', { name: 'Add contact' }).click();

    await page.getByLabel('Email').fill('ada@localhost');
    await page.getByLabel('First name').fill('Ada');
    await page.getByRole('button', { name: 'Add contact' }).click();
    expect(await page.locator('.field.has-error .error').textContent()).toBe('must be a valid email address');
    expect(await page.getByLabel('First name').inputValue()).toBe('Ada');
    await screenshot(page, 'contacts-add-bad-address');

    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByLabel('Last name').fill('Lovelace');
    await page.getByRole('button', { name: 'Add contact' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}`);
    expect(await page.locator('.notice').textContent()).toBe('Saved ada@example.com');
    let ada = (await contactsOf(bookId)).find((contact) => contact.email === 'ada@example.com')!;
    expect(nameOf(ada)).toEqual(['ada@example.com', 'Ada', 'Lovelace', true]);

    await page.getByRole('link', { name: 'ada@example.com' }).click();
    await page.getByLabel('Email').fill('taken@example.com');
    await page.getByRole('button', { name: 'Save contact' }).click();
    expect(await page.locator('.field.has-error .error').textContent()).toContain('already has the email address taken@example.com');
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByLabel('Last name').fill('King');
    await page.getByRole('button', { name: 'Save contact' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}`);
    ada = (await contactsOf(bookId)).find((contact) => contact.email === 'ada@example.com')!;
    expect(nameOf(ada)).toEqual(['ada@example.com', 'Ada', 'King', true]);
    await screenshot(page, 'contacts-book');

    await page.locator('tr', { hasText: 'ada@example.com' }).getByRole('button', { name: 'Unsubscribe' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}`);
    expect(await page.locator('tr', { hasText: 'ada@example.com' }).locator('.badge').textContent()).toBe('Unsubscribed');
    ada = (await contactsOf(bookId)).find((contact) => contact.email === 'ada@example.com')!;
    expect([ada.subscribed, ada.unsubscribeReason]).toEqual([false, 'UNSUBSCRIBED']);

    await page.locator('tr', { hasText: 'ada@example.com' }).getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(`${server.url}/contacts/${bookId}`);
    expect((await contactsOf(bookId)).map((contact) => contact.email)).toEqual(['taken@example.com']);
    await context.close();
  });

  it('search finds contacts by part of an address or a name (wildcards taken literally), filters by status, and pages through the book', async () => {
    const bookId = await newBook('Readers');
    await bulk(bookId, [
      ...Array.from({ length: 120 }, (_, i) => ({ email: `reader${i}@example.org`, firstName: 'Reader', lastName: `Number ${i}`, subscribed: i % 2 === 0 })),
      { email: 'percent@example.org', firstName: '100% Sure', lastName: 'Thing_One' },
    ]);
    const { context, page } = await signedIn(browser, server, teamId, { viewport: { width: 390, height: 844 } });
    await page.goto(`/contacts/${bookId}`);
    expect(await page.locator('[data-summary]').textContent()).toBe('Showing 1–50 of 121');
    await page.getByRole('link', { name: 'Next →' }).click();
    expect(await page.locator('[data-summary]').textContent()).toBe('Showing 51–100 of 121');
    expect(await page.locator('tbody tr td:first-child a').first().textContent()).toBe('reader50@example.org');

    await page.getByLabel('Search').fill('READER11');
    await page.getByRole('button', { name: 'Search' }).click();
    const emails = () => page.locator('tbody tr td:first-child a').allTextContents();
    expect(await emails()).toEqual(['reader11@example.org', 'reader110@example.org', 'reader111@example.org', 'reader112@example.org', 'reader113@example.org', 'reader114@example.org', 'reader115@example.org', 'reader116@example.org', 'reader117@example.org', 'reader118@example.org', 'reader119@example.org']);
    await page.getByLabel('Status').selectOption('true');
    await page.getByRole('button', { name: 'Search' }).click();
    expect(await emails()).toEqual(['reader110@example.org', 'reader112@example.org', 'reader114@example.org', 'reader116@example.org', 'reader118@example.org']);
    await screenshot(page, 'contacts-book-phone');

    await page.getByLabel('Search').fill('number 42');
    await page.getByLabel('Status').selectOption('');
    await page.getByRole('button', { name: 'Search' }).click();
    expect(await emails()).toEqual(['reader42@example.org']);
    for (const wildcard of ['%', 'g_o']) {
      await page.getByLabel('Search').fill(wildcard);
      await page.getByRole('button', { name: 'Search' }).click();
      expect(await emails(), wildcard).toEqual(['percent@example.org']);
    }
    await page.getByLabel('Search').fill('nobody');
    await page.getByRole('button', { name: 'Search' }).click();
    expect(await page.locator('.empty').textContent()).toContain('No contact matches this search.');

    for (const query of ['q=%00', 'q=%ED%A0%80', 'page=99999999999999999999999', 'page=-1&subscribed=maybe']) {
      const response = await page.request.get(`/contacts/${bookId}?${query}`);
      expect(response.status(), query).toBe(200);
    }

    // Without search text the list is the API's, filters and all.
    await page.goto(`/contacts/${bookId}?subscribed=false&page=2`);
    expect(await page.locator('[data-summary]').textContent()).toBe('Showing 51–60 of 60');
    await context.close();
  });
});

describe('CSV import and export', () => {
  // Line 1 header, 3-4 one record (a quoted CRLF), 9 blank; names that look like formulas are kept as text.
  const CSV = [
    '\uFEFFemail,First name,last_name,subscribed,company',
    'ada@example.com,Ada,Lovelace,yes,ACME',
    'grace@example.com,"Hopper, Grace","Two\r\nLines",no,',
    'not-an-address,Bad,Row,,',
    'ADA@example.com,Again,,,',
    'formula@example.com,"=HYPERLINK(""http://evil.example"")",-2+3,,',
    'maybe@example.com,May,Be,perhaps,',
    '',
    '<b>x</b>,x,,,',
    'last@example.com,Last,,1,',
    'nul@example.com,Nu\u0000l,,,',
  ].join('\r\n') + '\r\n';

  it('a CSV imported in the browser reports the added rows and each rejected row by line (bad address, repeated address, bad status, a NUL); the API shows the contacts; the export gives them back, formula cells neutralised, and importing it again changes nothing', async () => {
    const bookId = await newBook('Imported');
    const { context, page } = await signedIn(browser, server, teamId);
    await importInBrowser(page, bookId, CSV);
    const report = page.locator('[data-import-report]');
    expect(await report.locator('h2').textContent()).toBe('Import finished');
    expect(await report.locator('[data-count]').allTextContents()).toEqual(['4', '0', '5']);
    expect(await rejectionRows(page)).toEqual([
      ['5', 'not-an-address', 'email: must be a valid email address'],
      ['6', 'ADA@example.com', 'email: repeats the address of line 2'],
      ['8', 'maybe@example.com', 'subscribed: must be true or false (or yes/no, 1/0), not "perhaps"'],
      ['10', '<b>x</b>', 'email: must be a valid email address'],
      ['12', 'nul@example.com', 'firstName: must be Unicode text without NUL characters or unpaired surrogates'],
    ]);
    expect(await report.textContent()).toContain('Ignored columns: company.');
    expect(await page.locator('[data-upload-result] b').count()).toBe(0);
    await screenshot(page, 'contacts-import-report');

    const imported = [
      ['ada@example.com', 'Ada', 'Lovelace', true],
      ['grace@example.com', 'Hopper, Grace', 'Two\r\nLines', false],
      ['formula@example.com', '=HYPERLINK("http://evil.example")', '-2+3', true],
      ['last@example.com', 'Last', null, true],
    ];
    expect((await contactsOf(bookId)).map(nameOf)).toEqual(imported);

    await page.goto(`/contacts/${bookId}`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toBe('Imported.csv');
    const exported = await readFile((await download.path())!, 'utf8');
    expect(exported).toBe(
      '\uFEFFemail,firstName,lastName,subscribed\r\n' +
        'ada@example.com,Ada,Lovelace,true\r\n' +
        'grace@example.com,"Hopper, Grace","Two\r\nLines",false\r\n' +
        'formula@example.com,"\'=HYPERLINK(""http://evil.example"")",\'-2+3,true\r\n' +
        'last@example.com,Last,,true\r\n',
    );

    await importInBrowser(page, bookId, exported);
    expect(await page.locator('[data-import-report] [data-count]').allTextContents()).toEqual(['0', '4', '0']);
    expect((await contactsOf(bookId)).map(nameOf)).toEqual(imported);
    await context.close();
  });

  it('a broken CSV answers a clear 400 naming the line, keeping the rows before it; a file without an email column or with an overlong line is refused too', async () => {
    const bookId = await newBook('Broken');
    const { context, page } = await signedIn(browser, server, teamId);
    await importInBrowser(page, bookId, 'email,firstName\nfirst@example.com,First\nsecond@example.com,"never closed\nthird@example.com,Third\n');
    const problem = page.locator('[data-import-report] .form-error');
    expect(await problem.textContent()).toBe('The row starting on line 3 opens a quoted field that is never closed. The rows before it were imported as counted below; nothing after it was read.');
    expect(await page.locator('[data-import-report] h2').textContent()).toBe('Import stopped');
    expect((await contactsOf(bookId)).map((contact) => contact.email)).toEqual(['first@example.com']);

    await page.goto(`/contacts/${bookId}/import`);
    const creds = await credentials(context, page);
    const broken = await upload(creds, bookId, 'email\nfirst@example.com\n"unterminated@example.com\n');
    expect(broken.status).toBe(400);
    const noEmail = await upload(creds, bookId, 'name,phone\nAda,123\n');
    expect(noEmail.status).toBe(400);
    expect(noEmail.text).toContain('The first line must name the columns, one of them &quot;email&quot;');
    const empty = await upload(creds, bookId, '');
    expect(empty.status).toBe(400);
    expect(empty.text).toContain('The file is empty');
    const overlong = await upload(creds, bookId, `email,firstName\nlong@example.com,${'x'.repeat(70_000)}\nafter@example.com,After\n`);
    expect(overlong.status).toBe(400);
    expect(overlong.text).toContain('The row starting on line 2 is longer than 65,536 characters');
    const badQuote = await upload(creds, bookId, 'email,firstName\nok@example.com,a"b"\n');
    expect(badQuote.status).toBe(400);
    expect(badQuote.text).toContain('Line 2 is not valid CSV');
    expect((await contactsOf(bookId)).map((contact) => contact.email)).toEqual(['first@example.com']);
    await context.close();
  });

  it('a 50,000-row file streamed to the import all arrives, and the export downloads exactly those rows with formula cells neutralised', async () => {
    const bookId = await newBook('Big list');
    // Names are trimmed (the API's rule), so a leading tab or CR never reaches the export.
    const FORMULAS = ['=1+1', '+SUM(A1)', '-3', '@cmd', '=cmd|"/C calc"!A0'];
    const rows = Array.from({ length: 50_000 }, (_, i) => [
      `user${i}@big.example`,
      i % 1000 === 0 ? FORMULAS[(i / 1000) % FORMULAS.length]! : `First ${i}`,
      `Last, ${i}`,
      String(i % 7 !== 0),
    ]);
    const quoted = (cell: string) => `"${cell.replace(/"/g, '""')}"`;
    const csv = `email,firstName,lastName,subscribed\n${rows.map(([email, first, last, subscribed]) => `${email},${quoted(first!)},${quoted(last!)},${subscribed}`).join('\n')}\n`;
    const { context, page } = await signedIn(browser, server, teamId);
    await page.goto(`/contacts/${bookId}/import`);
    const result = await upload(await credentials(context, page), bookId, csv);
    expect(result.status).toBe(200);
    expect([reportCount(result.text, 'created'), reportCount(result.text, 'updated'), reportCount(result.text, 'rejected')]).toEqual([50_000, 0, 0]);
    const listed = await server.call('GET', `/v1/contactBooks/${bookId}/contacts?limit=1`, { key });
    expect(listed.headers.get('x-total-count')).toBe('50000');

    await page.goto(`/contacts/${bookId}`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    const exported: string[][] = parse(await readFile((await download.path())!), { bom: true });
    expect(exported[0]).toEqual(['email', 'firstName', 'lastName', 'subscribed']);
    const guarded = (cell: string) => (/^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell);
    expect(exported.slice(1)).toEqual(rows.map((row) => row.map(guarded)));
    expect(exported.slice(1).filter((row) => row[1]!.startsWith("'"))).toHaveLength(50);
    await context.close();
  });

  it('an import saves rows while the file is still arriving: it never waits for the whole file', async () => {
    const bookId = await newBook('Streamed');
    const { context, page } = await signedIn(browser, server, teamId);
    await page.goto(`/contacts/${bookId}/import`);
    const creds = await credentials(context, page);
    const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `stream${from + i}@example.com\n`).join('');
    let release!: () => void;
    const rest = new Promise<void>((resolve) => (release = resolve));
    const parts = [`email\n${lines(0, 6_000)}`, lines(6_000, 12_000)];
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (parts.length === 1) await rest;
        const part = parts.shift();
        if (part === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(part));
      },
    });
    const answer = fetch(`${server.url}/contacts/${bookId}/import`, {
      method: 'POST',
      headers: { cookie: creds.cookie, 'x-csrf-token': creds.token, 'content-type': 'text/csv' },
      body,
      duplex: 'half',
    } as RequestInit);
    const total = async () => Number((await server.call('GET', `/v1/contactBooks/${bookId}/contacts?limit=1`, { key })).headers.get('x-total-count'));
    expect(await waitFor('the first batch saved before the file ends', total, (n) => n >= 5_000)).toBe(5_000);
    release();
    const response = await answer;
    expect(response.status).toBe(200);
    expect(reportCount(await response.text(), 'created')).toBe(12_000);
    expect(await total()).toBe(12_000);
    await context.close();
  });
});

describe('what people see is text', () => {
  it('names holding markup show as text on every contacts page, and no script runs', async () => {
    const bookId = await newBook(HOSTILE);
    await bulk(bookId, [{ email: 'hostile@example.com', firstName: HOSTILE, lastName: '<b>x</b>' }]);
    const contactId = (await contactsOf(bookId))[0]!.id;
    const { context, page } = await signedIn(browser, server, teamId);
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const pages = ['/contacts', `/contacts/${bookId}`, `/contacts/${bookId}/edit`, `/contacts/${bookId}/contacts/${contactId}`, `/contacts/${bookId}/import`, `/contacts/${bookId}?q=${encodeURIComponent(HOSTILE)}`];
    for (const path of pages) {
      await page.goto(path);
      expect(await page.locator('main').textContent(), path).toContain(HOSTILE);
      expect(await page.locator('main b', { hasText: 'x' }).count(), path).toBe(0);
      expect(await page.locator('main script').count(), path).toBe(0);
    }
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.goto(`/contacts/${bookId}/edit`);
    expect(await page.getByLabel('Name').inputValue()).toBe(HOSTILE);
    await page.goto(`/contacts/${bookId}/contacts/${contactId}`);
    expect(await page.getByLabel('First name').inputValue()).toBe(HOSTILE);
    expect(await page.getByLabel('Last name').inputValue()).toBe('<b>x</b>');

    await importInBrowser(page, bookId, `email,firstName\n"${HOSTILE}",x\n`);
    expect((await rejectionRows(page))[0]).toEqual(['2', HOSTILE, 'email: must be a valid email address']);
    expect(await page.locator('main b', { hasText: 'x' }).count()).toBe(0);
    expect(dialogs).toEqual([]);
    await context.close();
  });
});

describe('team isolation', () => {
  it("a person of another team sees none of this team's contact books, and gets 404 for its pages, export, import and every action, also by editing URLs; nothing changes", async () => {
    const bookId = await newBook('Private book');
    await bulk(bookId, [{ email: 'secret@example.com', firstName: 'Secret' }]);
    const contactId = (await contactsOf(bookId))[0]!.id;
    const before = await contactsOf(bookId);

    const { context, page } = await signedIn(browser, server, otherTeamId);
    await page.goto('/contacts');
    expect(await page.locator('main').textContent()).not.toContain('Private book');
    expect(await page.locator('.empty').textContent()).toContain('No contact books yet');
    await screenshot(page, 'contacts-books-empty');

    for (const path of [`/contacts/${bookId}`, `/contacts/${bookId}/edit`, `/contacts/${bookId}/new`, `/contacts/${bookId}/import`, `/contacts/${bookId}/export.csv`, `/contacts/${bookId}/contacts/${contactId}`, `/contacts/${bookId}?q=secret`]) {
      const response = await page.request.get(path);
      expect(response.status(), path).toBe(404);
      expect(await response.text(), path).not.toContain('secret@example.com');
    }

    const creds = await credentials(context, page);
    const form = (fields: Record<string, string>) => new URLSearchParams({ _csrf: creds.token, ...fields }).toString();
    const posts: Array<[string, string]> = [
      [`/contacts/${bookId}/edit`, form({ name: 'Taken over' })],
      [`/contacts/${bookId}/delete`, form({})],
      [`/contacts/${bookId}/new`, form({ email: 'intruder@example.com', subscribed: 'true' })],
      [`/contacts/${bookId}/contacts/${contactId}`, form({ email: 'changed@example.com', firstName: 'Changed' })],
      [`/contacts/${bookId}/contacts/${contactId}/unsubscribe`, form({})],
      [`/contacts/${bookId}/contacts/${contactId}/delete`, form({})],
    ];
    for (const [path, body] of posts) {
      const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { cookie: creds.cookie, 'content-type': 'application/x-www-form-urlencoded' }, body, redirect: 'manual' });
      expect(response.status, path).toBe(404);
    }
    const imported = await upload(creds, bookId, 'email\nintruder@example.com\n');
    expect(imported.status).toBe(404);

    expect(await contactsOf(bookId)).toEqual(before);
    expect((await server.call('GET', `/v1/contactBooks/${bookId}`, { key })).body.name).toBe('Private book');
    await context.close();
  });
});
