import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html, raw } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ApiError, ErrorDetail } from '../errors.js';
import { may, type Area } from '../people/roles.js';
import { CSRF_FIELD, csrfTokenFor, type DashboardEnv } from './session.js';

/** A fragment of a page: strings interpolated into it are escaped, fragments are not. */
export type Html = ReturnType<typeof html>;

/** The navigation: what a team sends from and sends, its audience and settings, then what it can watch; each entry shown to those who may read its area. */
export const NAV = [
  { href: '/', label: 'Overview', area: 'reports' },
  { href: '/domains', label: 'Domains', area: 'domains' },
  { href: '/emails', label: 'Emails', area: 'mail' },
  { href: '/inbound', label: 'Inbound', area: 'inbound' },
  { href: '/campaigns', label: 'Campaigns', area: 'campaigns' },
  { href: '/automations', label: 'Automations', area: 'automations' },
  { href: '/contacts', label: 'Contacts', area: 'audience' },
  { href: '/templates', label: 'Templates', area: 'templates' },
  { href: '/suppressions', label: 'Suppressions', area: 'suppressions' },
  { href: '/webhooks', label: 'Webhooks', area: 'webhooks' },
  { href: '/api-keys', label: 'API keys', area: 'keys' },
  { href: '/team', label: 'Team', area: 'people' },
  { href: '/analytics', label: 'Analytics', area: 'reports' },
  { href: '/deliverability', label: 'Deliverability', area: 'reports' },
  { href: '/audit-log', label: 'Audit log', area: 'audit' },
] as const satisfies readonly { href: string; label: string; area: Area }[];
export type Section = (typeof NAV)[number]['label'];

const FLASH_COOKIE = 'mailroom_flash';

/** A one-line notice shown on the next page the person sees ("Domain added"). */
export function flash(c: Context, message: string): void {
  setCookie(c, FLASH_COOKIE, encodeURIComponent(message.slice(0, 300)), { httpOnly: true, sameSite: 'Lax', path: '/', maxAge: 60 });
}

function takeFlash(c: Context): string | null {
  const value = getCookie(c, FLASH_COOKIE);
  if (value === undefined) return null;
  deleteCookie(c, FLASH_COOKIE, { path: '/' });
  try {
    return decodeURIComponent(value);
  } catch {
    return null;
  }
}

/** Redirects after a change (so a reload does not repeat it), with a notice for the next page. */
export function done(c: Context, location: string, message: string) {
  flash(c, message);
  return c.redirect(location, 303);
}

const shell = (title: string, main: Html, nav: Html | null) => html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title} · Mailroom</title>
<link rel="icon" href="/assets/favicon.svg">
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script>
</head>
<body>
${nav}
${main}
</body>
</html>`;

/** A signed-in page: the navigation with `section` marked, the notice if any, then the content. */
export function page(c: Context<DashboardEnv>, options: { title: string; section: Section | 'Account'; body: Html; status?: ContentfulStatusCode }) {
  const user = c.get('user');
  const notice = takeFlash(c);
  const nav = html`<header class="top">
<a class="brand" href="/">Mailroom</a>
<input type="checkbox" id="menu-toggle" class="menu-toggle" aria-label="Menu"><label for="menu-toggle" class="menu-button" aria-hidden="true">☰</label>
<nav aria-label="Main">${NAV.filter((item) => may(user, item.area, 'read')).map(
    (item) => html`<a href="${item.href}"${item.label === options.section ? raw(' aria-current="page"') : ''}>${item.label}</a>`,
  )}</nav>
<form method="post" action="/logout" class="signout"><span class="who">${user.email}</span><a href="/account"${options.section === 'Account' ? raw(' aria-current="page"') : ''}>Account</a>${csrfField(c)}<button type="submit" class="link" title="Signed in as ${user.email}">Sign out</button></form>
</header>`;
  const main = html`<main>
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
${options.body}
</main>`;
  return c.html(shell(options.title, main, nav), options.status ?? 200, { 'Cache-Control': 'no-store' });
}

/** A page without the navigation: sign-in, choosing a password, errors before signing in. */
export function plainPage(c: Context, options: { title: string; body: Html; status?: ContentfulStatusCode }) {
  const main = html`<main class="narrow"><p class="brand">Mailroom</p>${options.body}</main>`;
  return c.html(shell(options.title, main, null), options.status ?? 200, { 'Cache-Control': 'no-store' });
}

export const csrfField = (c: Context<DashboardEnv>) => html`<input type="hidden" name="${CSRF_FIELD}" value="${csrfTokenFor(c.get('sessionToken'))}">`;

/** The CSRF token for scripts that send with fetch (the X-CSRF-Token header). */
export const csrfMeta = (c: Context<DashboardEnv>) => html`<meta name="csrf-token" content="${csrfTokenFor(c.get('sessionToken'))}">`;

/** Errors by field path, from a validation error; the rest under "". */
export function fieldErrors(error: ApiError): Record<string, string> {
  const errors: Record<string, string> = {};
  for (const detail of error.details ?? ([{ path: '', message: error.message }] as ErrorDetail[])) {
    const key = detail.path.split(/[.[]/)[0] ?? '';
    errors[key] ??= detail.message;
  }
  return errors;
}

type FieldOptions = {
  type?: string;
  value?: string | null;
  error?: string;
  required?: boolean;
  placeholder?: string;
  hint?: string;
  attrs?: Html;
};

/** A labelled input with its error (if any) beside it. */
export function field(name: string, label: string, options: FieldOptions = {}) {
  const id = `f-${name}`;
  return html`<div class="field${options.error ? ' has-error' : ''}">
<label for="${id}">${label}</label>
<input id="${id}" name="${name}" type="${options.type ?? 'text'}" value="${options.value ?? ''}"${options.required ? raw(' required') : ''}${
    options.placeholder ? html` placeholder="${options.placeholder}"` : ''
  }${options.error ? html` aria-invalid="true" aria-describedby="${id}-error"` : ''} ${options.attrs ?? ''}>
${options.hint ? html`<small class="hint">${options.hint}</small>` : ''}
${options.error ? html`<small class="error" id="${id}-error">${options.error}</small>` : ''}
</div>`;
}

/** A labelled textarea with its error beside it. */
export function textArea(name: string, label: string, options: { value?: string | null; error?: string; rows?: number; required?: boolean; hint?: string } = {}) {
  const id = `f-${name}`;
  return html`<div class="field${options.error ? ' has-error' : ''}">
<label for="${id}">${label}</label>
<textarea id="${id}" name="${name}" rows="${options.rows ?? 8}"${options.required ? raw(' required') : ''}${options.error ? html` aria-invalid="true"` : ''}>${options.value ?? ''}</textarea>
${options.hint ? html`<small class="hint">${options.hint}</small>` : ''}
${options.error ? html`<small class="error">${options.error}</small>` : ''}
</div>`;
}

/** A labelled select. */
export function select(name: string, label: string, choices: readonly { value: string; label: string }[], options: { value?: string | null; error?: string } = {}) {
  const id = `f-${name}`;
  return html`<div class="field${options.error ? ' has-error' : ''}">
<label for="${id}">${label}</label>
<select id="${id}" name="${name}">${choices.map(
    (choice) => html`<option value="${choice.value}"${choice.value === (options.value ?? '') ? raw(' selected') : ''}>${choice.label}</option>`,
  )}</select>
${options.error ? html`<small class="error">${options.error}</small>` : ''}
</div>`;
}

/** An error for the whole form (not of one field). */
export const formError = (message: string | undefined) => (message ? html`<p class="form-error" role="alert">${message}</p>` : '');

/** A button that POSTs to `action` (with the CSRF token); `confirm` asks first. */
export function actionButton(c: Context<DashboardEnv>, action: string, label: string, options: { confirm?: string; kind?: 'danger' | 'secondary'; fields?: Record<string, string> } = {}) {
  return html`<form method="post" action="${action}" class="inline"${options.confirm ? html` data-confirm="${options.confirm}"` : ''}>${csrfField(c)}${Object.entries(
    options.fields ?? {},
  ).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}<button type="submit" class="${options.kind ?? ''}">${label}</button></form>`;
}

/** A table, or the empty state when there are no rows. */
export function table<T>(rows: readonly T[], columns: readonly { label: string; cell: (row: T) => unknown; className?: string }[], empty: Html | string) {
  if (rows.length === 0) return html`<div class="empty">${empty}</div>`;
  return html`<div class="table-wrap"><table>
<thead><tr>${columns.map((column) => html`<th scope="col"${column.className ? html` class="${column.className}"` : ''}>${column.label}</th>`)}</tr></thead>
<tbody>${rows.map((row) => html`<tr>${columns.map((column) => html`<td${column.className ? html` class="${column.className}"` : ''}>${column.cell(row)}</td>`)}</tr>`)}</tbody>
</table></div>`;
}

/** A status as a coloured badge. */
export const badge = (status: string) => html`<span class="badge badge-${status.toLowerCase().replace(/[^a-z_]/g, '')}">${status}</span>`;

/** A time, shown in the reader's own time zone by app.js; the ISO text until then. */
export const time = (value: string | Date | null | undefined) => {
  if (!value) return html`<span class="muted">—</span>`;
  const iso = typeof value === 'string' ? value : value.toISOString();
  return html`<time datetime="${iso}">${iso.replace('T', ' ').slice(0, 19)} UTC</time>`;
};

/** A value to copy, with a button that copies it. */
export const copyable = (value: string) => html`<span class="copyable"><code>${value}</code><button type="button" class="copy" data-copy="${value}">Copy</button></span>`;

/** Data for a page's script, in a block the browser never runs: `<` is escaped so no value can end it. */
export const jsonData = (id: string, value: unknown) =>
  html`<script type="application/json" id="${id}">${raw(JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026'))}</script>`;

/** Previous/next links for a list read a page at a time; `query` is the current query string's other filters. */
export function pager(base: string, query: Record<string, string | undefined>, pageNumber: number, hasMore: boolean) {
  const link = (n: number) => {
    const params = new URLSearchParams(Object.entries({ ...query, page: String(n) }).filter((entry): entry is [string, string] => !!entry[1]));
    return `${base}?${params}`;
  };
  if (pageNumber <= 1 && !hasMore) return '';
  return html`<nav class="pager" aria-label="Pages">${pageNumber > 1 ? html`<a href="${link(pageNumber - 1)}" rel="prev">← Previous</a>` : html`<span></span>`}<span class="muted">Page ${pageNumber}</span>${
    hasMore ? html`<a href="${link(pageNumber + 1)}" rel="next">Next →</a>` : html`<span></span>`
  }</nav>`;
}

/** Sent of total as a bar and a number (a <progress>: the CSP allows no inline widths). */
export const progress = (sent: number, total: number) =>
  html`<progress max="${Math.max(total, 1)}" value="${Math.min(sent, total)}" aria-label="${sent} of ${total} sent"></progress><small class="muted">${sent.toLocaleString('en')} of ${total.toLocaleString('en')}</small>`;

/** A figure as a card: its label, its value, and a line under it. */
export const card = (label: string, value: string, sub?: Html | string) =>
  html`<div class="card"><div class="label">${label}</div><div class="value">${value}</div>${sub ? html`<div class="sub">${sub}</div>` : ''}</div>`;

const percent = (value: number) => `${Number(value.toFixed(2))}%`;

/**
 * A reputation rate beside the guard's limit for it, marked when over (in words and colour). Below
 * the volume the guard waits for (`minimum` delivered) it is judged neither way: a bounce among the
 * first five emails is 20% and means nothing yet, and the guard does not act on it.
 */
export const rateCard = (label: string, rate: number, limit: number, volume: { delivered: number; minimum: number }) => {
  const judged = volume.delivered >= volume.minimum;
  const over = judged && rate > limit;
  const verdict = !judged
    ? html`<span class="badge">Not enough mail yet</span> ${volume.delivered.toLocaleString('en')} of ${volume.minimum.toLocaleString('en')} delivered`
    : over
      ? html`<span class="badge badge-failed">Over the limit</span>`
      : html`<span class="badge badge-success">Within the limit</span>`;
  return html`<div class="card"><div class="label">${label}</div><div class="value${over ? ' over' : ''}">${percent(rate)}</div><div class="sub">limit ${percent(limit)} ${verdict}</div></div>`;
};

/** One colour per kind of count, the same on every chart. */
export const CHART_COLOURS = {
  sent: '#3b5bdb',
  delivered: '#2b8a3e',
  opened: '#1098ad',
  clicked: '#7048e8',
  bounced: '#e8590c',
  hard_bounced: '#c92a2a',
  complained: '#862e9c',
} as const;

/**
 * A line chart that app.js draws with Chart.js (served from /assets) from its data block; its
 * numbers must also be on the page in words or a table, for readers without the chart.
 */
export function lineChart(id: string, ariaLabel: string, labels: string[], lines: { label: string; colour: string; data: number[] }[]) {
  const spec = {
    type: 'line',
    data: { labels, datasets: lines.map((line) => ({ label: line.label, data: line.data, borderColor: line.colour, backgroundColor: line.colour, tension: 0.2 })) },
    options: { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
  };
  return html`<script src="/assets/chart.js" defer></script>
<div class="chart"><canvas data-chart="${id}" role="img" aria-label="${ariaLabel}"></canvas></div>${jsonData(id, spec)}`;
}

/** A page heading with actions at its right. */
export const heading = (title: string, actions?: Html) => html`<div class="page-head"><h1>${title}</h1>${actions ? html`<div class="actions">${actions}</div>` : ''}</div>`;
