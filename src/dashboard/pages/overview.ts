import { html } from 'hono/html';
import type { AppDeps } from '../../http/deps.js';
import { callApi } from '../api-call.js';
import { badge, heading, page, table, type Html } from '../layout.js';
import { section } from '../section.js';

type Series = { result: Record<string, number | string>[]; totalCounts: Record<string, number> };
type Reputation = { delivered: number; hardBounced: number; complained: number; bounceRate: number; complaintRate: number };
type Campaign = { id: string; name: string; status: string; total: number; sent: number; delivered: number };

const KINDS = [
  ['sent', 'Sent'],
  ['delivered', 'Delivered'],
  ['bounced', 'Bounced'],
  ['complained', 'Complained'],
] as const;

const percent = (value: number) => `${Number(value.toFixed(2))}%`;

/** Sent of total as a bar and a number (a <progress>: the CSP allows no inline widths). */
export const progress = (sent: number, total: number) =>
  html`<progress max="${Math.max(total, 1)}" value="${Math.min(sent, total)}" aria-label="${sent} of ${total} sent"></progress><small class="muted">${sent.toLocaleString('en')} of ${total.toLocaleString('en')}</small>`;

function rateCard(label: string, rate: number, limit: number): Html {
  const over = rate > limit;
  return html`<div class="card"><div class="label">${label}</div><div class="value${over ? ' over' : ''}">${percent(rate)}</div><div class="sub">limit ${percent(limit)}${over ? ' · over the limit' : ''}</div></div>`;
}

/** The team at a glance: today's and this week's mail, reputation against the guard's limits, campaigns sending now. */
export function overviewPages(deps: AppDeps) {
  const app = section(deps, '/');
  app.get('/', async (c) => {
    const [week, reputation, running] = await Promise.all([
      callApi<Series>(c, deps, 'get', '/analytics/email-time-series', { query: { days: '7' } }),
      callApi<Reputation>(c, deps, 'get', '/analytics/reputation-metrics', { query: { days: '7' } }),
      callApi<{ campaigns: Campaign[] }>(c, deps, 'get', '/campaigns', { query: { status: 'RUNNING' } }),
    ]);
    const today = week.result.at(-1) ?? {};
    const cards = (title: string, counts: Record<string, unknown>) =>
      html`<h2>${title}</h2><div class="cards">${KINDS.map(
        ([kind, label]) => html`<div class="card"><div class="label">${label}</div><div class="value">${Number(counts[kind] ?? 0).toLocaleString('en')}</div></div>`,
      )}</div>`;
    return page(c, {
      title: 'Overview',
      section: 'Overview',
      body: html`${heading('Overview')}
${cards('Today', today)}
${cards('Last 7 days', week.totalCounts)}
<h2>Reputation, last 7 days</h2>
<div class="cards">
${rateCard('Hard-bounce rate', reputation.bounceRate, deps.config.reputationMaxBounceRate)}
${rateCard('Complaint rate', reputation.complaintRate, deps.config.reputationMaxComplaintRate)}
<div class="card"><div class="label">Delivered</div><div class="value">${reputation.delivered.toLocaleString('en')}</div><div class="sub">campaigns pause above a limit once ${deps.config.reputationMinDelivered.toLocaleString('en')} are delivered</div></div>
</div>
<h2>Campaigns sending now</h2>
${table(
  running.campaigns,
  [
    { label: 'Campaign', cell: (row) => html`<a href="/campaigns/${row.id}">${row.name}</a>` },
    { label: 'Status', cell: (row) => badge(row.status) },
    { label: 'Progress', cell: (row) => progress(row.sent, row.total) },
    { label: 'Delivered', cell: (row) => row.delivered.toLocaleString('en'), className: 'num' },
  ],
  html`No campaign is sending right now. <a href="/campaigns">All campaigns</a>`,
)}`,
    });
  });
  return app;
}
