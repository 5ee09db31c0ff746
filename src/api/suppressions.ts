import { z } from 'zod';
import { defineRoute } from '../http/route.js';
import * as service from '../services/suppressions.js';

const TAG = 'Suppressions';

const suppressionSchema = z.object({
  email: z.string(),
  reason: z.enum(['HARD_BOUNCE', 'COMPLAINT', 'MANUAL']),
  sourceEmailId: z.string().nullable().describe('The email whose bounce or complaint added the address'),
  createdAt: z.string(),
});

const TEAM_WIDE = 'The list is the whole team\'s: keys scoped to a domain get 403.';

export const suppressionRoutes = [
  defineRoute({
    method: 'get',
    path: '/suppressions',
    tag: TAG,
    summary: "List the team's suppressed addresses",
    description: `Newest first. Mail to these addresses is never sent. ${TEAM_WIDE}`,
    query: z.object({
      page: z.coerce.number().int().min(1).default(1),
      limit: z.coerce.number().int().min(1).max(1000).default(100),
    }),
    response: z.object({ data: z.array(suppressionSchema), count: z.number().int() }),
    handler: ({ deps, auth, query }) => service.listSuppressions(deps, auth, query),
  }),
  defineRoute({
    method: 'post',
    path: '/suppressions',
    tag: TAG,
    summary: 'Suppress an address',
    description: `Reason MANUAL; an address already suppressed keeps its first entry. ${TEAM_WIDE}`,
    body: z.object({ email: z.string().max(320) }),
    response: suppressionSchema,
    handler: ({ deps, auth, body }) => service.addSuppression(deps, auth, body),
  }),
  defineRoute({
    method: 'delete',
    path: '/suppressions/{email}',
    tag: TAG,
    summary: 'Remove an address from the suppression list',
    description: `Mail to it is sent again. ${TEAM_WIDE}`,
    params: z.object({ email: z.string().min(3).max(320) }),
    response: z.object({ success: z.boolean() }),
    handler: ({ deps, auth, params }) => service.removeSuppression(deps, auth, params),
  }),
];
