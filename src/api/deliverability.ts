import { z } from 'zod';
import { defineRoute } from '../http/route.js';
import * as service from '../services/deliverability.js';

const TAG = 'Deliverability';

export const deliverabilityRoutes = [
  defineRoute({
    method: 'get',
    path: '/deliverability/destinations',
    tag: TAG,
    summary: "Where the team's mail goes under direct delivery, destination by destination",
    description:
      'A destination is the registrable domain of the mail servers a recipient domain uses (every domain a provider hosts ' +
      'shares it: gmail.com and googlemail.com are both google.com). Per destination: mail waiting for it (retries, mail ' +
      'postponed while it was busy or paused, and attempts queued in a worker), attempts under way, the last hour\'s ' +
      "recipients delivered, deferred and bounced, and until when it is paused after asking to slow down. Empty unless " +
      'SMTP_URL=direct. A key scoped to a domain is refused (403): destinations mix every domain\'s mail.',
    response: z.object({
      data: z.array(
        z.object({
          destination: z.string(),
          queued: z.number().int(),
          inFlight: z.number().int(),
          lastHour: z.object({ delivered: z.number().int(), deferred: z.number().int(), bounced: z.number().int() }),
          pausedUntil: z.string().nullable(),
        }),
      ),
    }),
    handler: ({ deps, auth }) => service.listDestinations(deps, auth),
  }),
];
