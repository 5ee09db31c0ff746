import { html } from 'hono/html';
import type { AppDeps } from '../../http/deps.js';
import { callApi } from '../api-call.js';
import { badge, card, heading, page, progress, rateCard, table } from '../layout.js';
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
    const volume = { delivered: reputation.delivered, minimum: deps.config.reputationMinDelivered };
    const cards = (title: string, counts: Record<string, unknown>) =>
      html`<h2>${title}</h2><div class="cards">${KINDS.map(
        ([kind, label]) => card(label, Number(counts[kind] ?? 0).toLocaleString('en')),
      )}</div>`;
    return page(c, {
      title: 'Overview',
      section: 'Overview',
      body: html`${heading('Overview')}
${cards('Today', today)}
${cards('Last 7 days', week.totalCounts)}
<h2>Reputation, last 7 days</h2>
<div class="cards">
${rateCard('Hard-bounce rate', reputation.bounceRate, deps.config.reputationMaxBounceRate, volume)}
${rateCard('Complaint rate', reputation.complaintRate, deps.config.reputationMaxComplaintRate, volume)}
${card('Delivered', reputation.delivered.toLocaleString('en'), `campaigns pause above a limit once ${deps.config.reputationMinDelivered.toLocaleString('en')} are delivered`)}
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
