import { html } from 'hono/html';
import { ApiError } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import type { emailTimeSeries, reputationMetrics } from '../../services/analytics.js';
import type { Domain } from '../../services/domains.js';
import { callApi } from '../api-call.js';
import { card, CHART_COLOURS, fieldErrors, heading, lineChart, page, rateCard, select, table } from '../layout.js';
import { section } from '../section.js';

type Series = Awaited<ReturnType<typeof emailTimeSeries>>;
type Reputation = Awaited<ReturnType<typeof reputationMetrics>>;
type Kind = keyof Series['totalCounts'];

/** The series in the order the chart, the cards and the table show them. */
const KINDS: readonly { kind: Kind; label: string }[] = [
  { kind: 'sent', label: 'Sent' },
  { kind: 'delivered', label: 'Delivered' },
  { kind: 'opened', label: 'Opened' },
  { kind: 'clicked', label: 'Clicked' },
  { kind: 'bounced', label: 'Bounced' },
  { kind: 'complained', label: 'Complained' },
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
    const volume = { delivered: reputation.delivered, minimum: deps.config.reputationMinDelivered };
    return page(c, {
      title: 'Analytics',
      section: 'Analytics',
      body: html`${heading('Analytics')}
${filters()}
<h2>Totals, ${period}, ${scope}</h2>
<div class="cards" id="totals">${KINDS.map(({ kind, label }) => card(label, count(series.totalCounts[kind])))}</div>
<h2>Daily</h2>
<div class="panel">${lineChart(
  CHART_ID,
  `Daily sent, delivered, opened, clicked, bounced and complained mail, ${period}; the table below has the same numbers`,
  series.result.map((day) => axisLabel(day.date)),
  KINDS.map(({ kind, label }) => ({ label, colour: CHART_COLOURS[kind], data: series.result.map((day) => day[kind]) })),
)}</div>
<h2>Reputation, ${period}</h2>
<div class="cards" id="reputation">
${rateCard('Hard-bounce rate', reputation.bounceRate, deps.config.reputationMaxBounceRate, volume)}
${rateCard('Complaint rate', reputation.complaintRate, deps.config.reputationMaxComplaintRate, volume)}
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
