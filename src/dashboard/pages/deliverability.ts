import { html } from 'hono/html';
import type { AppDeps } from '../../http/deps.js';
import { transportOf } from '../../sending/transports/index.js';
import type { listDestinations } from '../../services/deliverability.js';
import type { Domain } from '../../services/domains.js';
import { callApi } from '../api-call.js';
import { badge, heading, page, progress, table, time } from '../layout.js';
import { section } from '../section.js';

type Destination = Awaited<ReturnType<typeof listDestinations>>['data'][number];

const count = (value: number) => value.toLocaleString('en');

/**
 * Why the destinations table is empty on a server that does not deliver directly. The relay's URL
 * is never shown: it may carry the relay's password.
 */
function transportNote(deps: AppDeps) {
  const transport = transportOf(deps.config);
  if (transport === 'direct') return '';
  const how =
    transport === 'capture'
      ? 'SMTP_URL is not set, so its mail is captured on this server and never sent out.'
      : 'it hands its mail to the relay SMTP_URL names, which delivers it.';
  return html`<p class="transport-note">This server does not deliver mail directly: ${how} Destinations show here once it is started with <code>SMTP_URL=direct</code>.</p>`;
}

// A pause is the destination's doing (it asked to slow down), so it is marked as a warning rather
// than in the grey of a campaign someone paused. The time is beside the badge, not in it: a badge
// does not wrap, and at a phone's width the state must fit beside the name.
const destinationState = (d: Destination) =>
  d.pausedUntil ? html`<span class="badge badge-throttled">Paused</span> <small class="hint">until ${time(d.pausedUntil)}</small>` : badge('Flowing');

const warmupStatus = (warmup: Domain['warmup']) => (warmup.enabled ? `Day ${warmup.day}` : html`<span class="muted">Off</span>`);

const todaysCap = (warmup: Domain['warmup']) => (warmup.limitToday === null ? html`<span class="muted">no cap</span>` : count(warmup.limitToday));

function sentToday(warmup: Domain['warmup']) {
  if (!warmup.enabled) return html`<span class="muted">—</span>`;
  const sent = warmup.sentToday ?? 0;
  return warmup.limitToday === null ? count(sent) : progress(sent, warmup.limitToday);
}

/**
 * Where the team's mail goes under direct delivery (/deliverability): each destination's waiting
 * and under-way mail, its last hour and whether it is paused; and each domain's IP pool and
 * warm-up, which cap what it may send today.
 */
export function deliverabilityPages(deps: AppDeps) {
  const app = section(deps, '/deliverability');

  app.get('/', async (c) => {
    const [{ data: destinations }, domains] = await Promise.all([
      callApi<{ data: Destination[] }>(c, deps, 'get', '/deliverability/destinations'),
      callApi<Domain[]>(c, deps, 'get', '/domains'),
    ]);
    // The sandbox's mail never leaves this server: no pool, no warm-up.
    const sending = domains.filter((domain) => !domain.sandbox);
    return page(c, {
      title: 'Deliverability',
      section: 'Deliverability',
      body: html`${heading('Deliverability')}
<p class="muted">A destination is the registrable domain of the mail servers your recipients' domains use: every domain a provider hosts shares its limits (gmail.com and googlemail.com both go to google.com).</p>
${transportNote(deps)}
<h2>Destinations</h2>
<p class="hint">Delivered, deferred and bounced count recipients over the last hour.</p>
<div id="destinations">${table(
  destinations,
  [
    { label: 'Destination', cell: (d) => d.destination },
    { label: 'State', cell: destinationState },
    { label: 'Queued', cell: (d) => count(d.queued), className: 'num' },
    { label: 'In flight', cell: (d) => count(d.inFlight), className: 'num' },
    { label: 'Delivered', cell: (d) => count(d.lastHour.delivered), className: 'num' },
    { label: 'Deferred', cell: (d) => count(d.lastHour.deferred), className: 'num' },
    { label: 'Bounced', cell: (d) => count(d.lastHour.bounced), className: 'num' },
  ],
  'No mail has gone to a destination in the last hour, and none is waiting.',
)}</div>
<h2>Warm-up</h2>
<p class="hint">A domain warming up may send only up to its cap each UTC day; mail past it waits for the next day.</p>
<div id="warmup">${table(
  sending,
  [
    { label: 'Domain', cell: (d) => html`<a href="/domains/${d.id}">${d.name}</a>` },
    { label: 'Warm-up', cell: (d) => warmupStatus(d.warmup) },
    { label: "Today's cap", cell: (d) => todaysCap(d.warmup), className: 'num' },
    { label: 'Sent today', cell: (d) => sentToday(d.warmup) },
    { label: 'IP pool', cell: (d) => d.ipPool },
  ],
  html`No domains yet. <a href="/domains">Add the domain you send from</a>.`,
)}</div>`,
    });
  });

  return app;
}
