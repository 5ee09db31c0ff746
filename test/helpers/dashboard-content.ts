import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import type { SignedIn } from './browser.js';

// What the campaigns and templates dashboard tests share.

/** Markup a hostile name or body carries: shown as text, it must never become elements or run. */
export const HOSTILE = '<script>alert(1)</script><b>x</b>';

/** Clicks what submits a form and answers the status of the POST it sent, once the next page has loaded. */
export async function submitted(page: Page, click: () => Promise<void>): Promise<number> {
  const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST' && r.request().frame() === page.mainFrame()), click()]);
  await page.waitForLoadState();
  return response.status();
}

/** POSTs a form as the signed-in person (with their CSRF token, read from the page they are on), without following redirects. */
export async function postAs(person: SignedIn, path: string, form: Record<string, string> = {}) {
  const token = await person.page.locator('input[name=_csrf]').first().getAttribute('value');
  return person.context.request.post(path, { form: { _csrf: token!, ...form }, maxRedirects: 0 });
}

/** The page shows `text` as text: no element came from it, and no script of it ran. */
export async function expectShownAsText(page: Page, text: string, dialogs: string[]) {
  expect(await page.getByText(text).first().isVisible(), `"${text}" visible on ${page.url()}`).toBe(true);
  expect(await page.locator('b', { hasText: 'x' }).count(), `injected <b> on ${page.url()}`).toBe(0);
  expect(await page.locator('script:not([src]):not([type="application/json"])').count(), `inline script on ${page.url()}`).toBe(0);
  expect(dialogs.filter((dialog) => dialog.startsWith('alert'))).toEqual([]);
}
