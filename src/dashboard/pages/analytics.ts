import { html } from 'hono/html';
import { ApiError } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import type { emailTimeSeries, reputationMetrics } from '../../services/analytics.js';
import type { Domain } from '../../services/domains.js';
import { callApi } from '../api-call.js';
import { fieldErrors, heading, jsonData, page, select, table, type Html } from '../layout.js';
import { section } from '../section.js';

type Series = Awaited<ReturnType<typeof emailTimeSeries>>;
type Reputation = Awaited<ReturnType<typeof reputationMetrics>>;
type Kind = keyof Series['totalCounts'];

/** The series in the order the chart, the cards and the table show them, each with its line's colour. */
const KINDS: readonly { kind: Kind; label: string; colour: string }[] = [
  { kind: 'sent', label: 'Sent', colour: '#3b5bdb' },
  { kind: 'delivered', label: 'Delivered', colour: '#2b8a3e' },
  { kind: 'opened', label: 'Opened', colour: '#1098ad' },
  { kind: 'clicked', label: 'Clicked', colour: '#7048e8' },
  { kind: 'bounced', label: 'Bounced', colour: '#e8590c' },
  { kind: 'complained', label: 'Complained', colour: '#c92a2a' },
];

const PERIODS = [
  { value: '7', label: 'Last 7 days' },
  { value: '30', label: 'Last 30 days' },
];

const CHART_ID = 'analytics-daily';

const count = (value: number) => value.toLocaleString('en');
// Days are UTC days (the API's): named in UTC, short enough for a phone's axis and table column.
const dayName = (date: string, options: Intl.DateTimeFormatOptions) => new Date(`${date}T00:00:00Z`).toLocaleDateString('en-GB', { ...options, timeZone: 'UTC' });
const axisLabel = (date: string) => dayName(date, { day: 'numeric', month: 'short' });
// Non-breaking spaces: a date is never split over two lines of a narrow table.
const rowLabel = (date: string) => dayName(date, { weekday: 'short', day: 'numeric', month: 'short' }).replace(/ /g, '\u00a0');
const percent = (value: number) => `${Number(value.toFixed(2))}%`;

const card = (label: string, value: string, sub?: Html) =>
  html`<div class="card"><div class="label">${label}</div><div class="value">${value}</div>${sub ? html`<div class="sub">${sub}</div>` : ''}</div>`;

/** A rate beside the reputation guard's limit for it, marked when over (in words, not by colour alone). */
const rateCard = (label: string, rate: number, limit: number) =>
  card(
    label,
    percent(rate),
    html`limit ${percent(limit)} ${rate > limit ? html`<span class="badge badge-failed">Over the limit</span>` : html`<span class="badge badge-success">Within the limit</span>`}`,
  );

function chartSpec(series: Series) {
  return {
    type: 'line',
    data: {
      labels: series.result.map((day) => axisLabel(day.date)),
      datasets: KINDS.map(({ kind, label, colour }) => ({
        label,
        data: series.result.map((day) => day[kind]),
        borderColor: colour,
        backgroundColor: colour,
      })),
    },
    options: { scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
  };
}

/**
 * The team's mail over the last 7 or 30 days (/analytics), all domains or one: the daily counts as
 * a chart and as a table (the same numbers for readers without the chart), the totals, and the
 * hard-bounce and complaint rates beside the limits at which the reputation guard pauses campaigns.
 */
export function analyticsPages(deps: AppDeps) {
  const app = section(deps, '/analytics');

  app.get('/', async (c) => {
    const days = c.req.query('days') ?? '7';
    const domainId = c.req.query('domainId') ?? '';
    const domains = await callApi<Domain[]>(c, deps, 'get', '/domains');
    const filters = (errors: Record<string, string> = {}) => html`<form method="get" action="/analytics" class="filters">
${select('days', 'Period', PERIODS, { value: days, error: errors.days })}
${select('domainId', 'Domain', [{ value: '', label: 'All domains' }, ...domains.map((domain) => ({ value: String(domain.id), label: domain.name }))], { value: domainId, error: errors.domainId })}
<button type="submit">Show</button>
</form>`;

    const query = { days, domainId };
    let series: Series;
    let reputation: Reputation;
    try {
      [series, reputation] = await Promise.all([
        callApi<Series>(c, deps, 'get', '/analytics/email-time-series', { query }),
        callApi<Reputation>(c, deps, 'get', '/analytics/reputation-metrics', { query }),
      ]);
    } catch (error) {
      // A period or domain typed into the address: said next to its field. Another team's domain is a 404 page.
      if (!(error instanceof ApiError) || error.code !== 'VALIDATION_ERROR') throw error;
      return page(c, { title: 'Analytics', section: 'Analytics', status: 400, body: html`${heading('Analytics')}${filters(fieldErrors(error))}` });
    }

    const scope = domains.find((domain) => String(domain.id) === domainId)?.name ?? 'all domains';
    const period = `last ${series.result.length} days`;
    return page(c, {
      title: 'Analytics',
      section: 'Analytics',
      body: html`${heading('Analytics')}
${filters()}
<h2>Totals, ${period}, ${scope}</h2>
<div class="cards" id="totals">${KINDS.map(({ kind, label }) => card(label, count(series.totalCounts[kind])))}</div>
<h2>Daily</h2>
<div class="panel"><div class="chart"><canvas data-chart="${CHART_ID}" role="img" aria-label="Daily sent, delivered, opened, clicked, bounced and complained mail, ${period}; the table below has the same numbers"></canvas></div></div>
${jsonData(CHART_ID, chartSpec(series))}
<script src="/assets/chart.js" defer></script>
<h2>Reputation, ${period}</h2>
<div class="cards" id="reputation">
${rateCard('Hard-bounce rate', reputation.bounceRate, deps.config.reputationMaxBounceRate)}
${rateCard('Complaint rate', reputation.complaintRate, deps.config.reputationMaxComplaintRate)}
${card('Delivered', count(reputation.delivered), html`${count(reputation.hardBounced)} hard-bounced, ${count(reputation.complained)} complained`)}
</div>
<p class="muted">Above a limit, the reputation guard pauses a domain's campaigns once ${count(deps.config.reputationMinDelivered)} of its emails are delivered.</p>
<h2>Day by day</h2>
${table(
  [...series.result].reverse(),
  [{ label: 'Date', cell: (day) => rowLabel(day.date) }, ...KINDS.map(({ kind, label }) => ({ label, cell: (day: Series['result'][number]) => count(day[kind]), className: 'num' }))],
  'No days in this period.',
)}`,
    });
  });

  return app;
}
