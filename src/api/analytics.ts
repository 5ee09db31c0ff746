import { z } from 'zod';
import { defineRoute } from '../http/route.js';
import * as service from '../services/analytics.js';

const TAG = 'Analytics';

const domainId = z.coerce.number().int().min(1).max(2_147_483_647).optional()
  .describe('Only this domain of the team (404 when the team has no such domain); a key scoped to a domain sees only its own');

const counts = {
  sent: z.number().int(),
  delivered: z.number().int(),
  opened: z.number().int(),
  clicked: z.number().int(),
  bounced: z.number().int(),
  complained: z.number().int(),
};

export const analyticsRoutes = [
  defineRoute({
    method: 'get',
    path: '/analytics/reputation-metrics',
    tag: TAG,
    summary: 'Delivered, hard-bounced and complained mail, and the bounce and complaint rates',
    description:
      'Each email counts once per kind. `bounceRate` = hardBounced / delivered × 100 and `complaintRate` = complained / delivered × 100, ' +
      'in percent; both 0 when nothing was delivered. Days are UTC days; `days` = 1 is today.',
    query: z.object({ domainId, days: z.coerce.number().int().min(1).max(365).optional().describe('The last N days including today; all time when absent') }),
    response: z.object({
      delivered: z.number().int(),
      hardBounced: z.number().int(),
      complained: z.number().int(),
      bounceRate: z.number(),
      complaintRate: z.number(),
    }),
    handler: ({ deps, auth, query }) => service.reputationMetrics(deps, auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/analytics/email-time-series',
    tag: TAG,
    summary: 'Daily counts of sent, delivered, opened, clicked, bounced and complained mail',
    description: 'One entry per UTC day, oldest first, ending today; days without mail are zero.',
    query: z.object({ days: z.enum(['7', '30']).default('7').transform(Number), domainId }),
    response: z.object({
      result: z.array(z.object({ date: z.string().describe('YYYY-MM-DD'), ...counts })),
      totalCounts: z.object(counts),
    }),
    handler: ({ deps, auth, query }) => service.emailTimeSeries(deps, auth, query),
  }),
];
