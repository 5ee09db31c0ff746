import { z } from 'zod';
import { inboundEmailSchema } from '../events/contract.js';
import { defineRoute } from '../http/route.js';
import * as emails from '../services/inbound-emails.js';
import * as routes from '../services/inbound-routes.js';

const TAG = 'Inbound';
const SCOPE_NOTE = 'A key scoped to a domain is refused (403): inbound mail is the whole team\'s.';

const routeSchema = z.object({
  id: z.string(),
  match: z.string().describe('The address it claims, or `*@domain` for every address of a domain; lower-cased'),
  action: z.enum(['store', 'webhook', 'forward']),
  forwardTo: z.array(z.string()),
  webhookIds: z.array(z.string()).nullable().describe('The webhooks told of its mail (action webhook); null: every webhook of the team that takes email.received'),
  dnsRecords: z
    .array(z.object({ type: z.literal('MX'), name: z.string(), value: z.string(), ttl: z.string(), priority: z.string(), zone: z.string() }))
    .describe("The MX record the route's domain needs, its name relative to `zone` (the team's verified domain), pointing at INBOUND_MX_HOST"),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const routeBody = {
  match: z.string().min(3).max(320),
  action: z.enum(['store', 'webhook', 'forward']).describe('store: keep it; webhook: keep it and send email.received; forward: keep it and send it on to forwardTo'),
  forwardTo: z.union([z.string().max(10_000), z.array(z.string().max(320)).max(50)]).optional().describe('Addresses a forward goes to (action forward)'),
  webhookIds: z.array(z.string().max(64)).max(100).nullable().optional().describe('Only these webhooks of the team hear of its mail; unset: every one that takes email.received'),
};

const routeParams = z.object({ id: z.string().min(1).max(64) });
const emailParams = z.object({ id: z.string().min(1).max(64) });

export const inboundRoutes = [
  defineRoute({
    method: 'post',
    path: '/inbound/routes',
    tag: TAG,
    summary: 'Route mail for an address, or every address of a domain, to the team',
    description:
      'The domain must be a verified domain of the team or a subdomain of one; a forward needs the domain itself verified (its ' +
      'mail is sent From the route\'s address). An address has one route; a domain is routed by one team (409 otherwise). The ' +
      `answer names the MX record to create. A more specific route wins: support@ before *@. ${SCOPE_NOTE}`,
    body: z.object(routeBody),
    response: routeSchema,
    handler: ({ deps, auth, body }) => routes.createRoute(deps, auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/inbound/routes',
    tag: TAG,
    summary: "The team's inbound routes",
    description: SCOPE_NOTE,
    response: z.object({ data: z.array(routeSchema) }),
    handler: ({ deps, auth }) => routes.listRoutes(deps, auth),
  }),
  defineRoute({
    method: 'get',
    path: '/inbound/routes/{id}',
    tag: TAG,
    summary: 'One inbound route',
    description: SCOPE_NOTE,
    params: routeParams,
    response: routeSchema,
    handler: ({ deps, auth, params }) => routes.getRoute(deps, auth, params),
  }),
  defineRoute({
    method: 'patch',
    path: '/inbound/routes/{id}',
    tag: TAG,
    summary: 'Change an inbound route',
    description: `Any of the fields of a new route, checked as for a new one. ${SCOPE_NOTE}`,
    params: routeParams,
    body: z.object({ ...routeBody, match: routeBody.match.optional(), action: routeBody.action.optional() }),
    response: routeSchema,
    handler: ({ deps, auth, params, body }) => routes.updateRoute(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'delete',
    path: '/inbound/routes/{id}',
    tag: TAG,
    summary: 'Delete an inbound route',
    description: `Mail to its addresses is refused from then on (550 at RCPT); mail it took stays. ${SCOPE_NOTE}`,
    params: routeParams,
    response: z.object({ id: z.string(), success: z.boolean() }),
    handler: ({ deps, auth, params }) => routes.deleteRoute(deps, auth, params),
  }),
  defineRoute({
    method: 'get',
    path: '/inbound/emails',
    tag: TAG,
    summary: 'Mail the team received, newest first',
    description: `Filters: the route that took it, the From address, an address it was sent to (envelope, To or Cc). ${SCOPE_NOTE}`,
    query: z.object({
      page: z.coerce.number().int().min(1).default(1),
      limit: z.coerce.number().int().min(1).max(100).default(50),
      routeId: z.string().max(64).optional(),
      from: z.string().max(320).optional(),
      to: z.string().max(320).optional(),
    }),
    response: z.object({ data: z.array(inboundEmailSchema), count: z.number().int() }),
    handler: ({ deps, auth, query }) => emails.listReceived(deps, auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/inbound/emails/{id}',
    tag: TAG,
    summary: 'One received message, parsed and authenticated',
    description: `Its text and html whole (webhook calls cut them at 256 KiB); null once retention dropped them. ${SCOPE_NOTE}`,
    params: emailParams,
    response: inboundEmailSchema,
    handler: ({ deps, auth, params }) => emails.getReceived(deps, auth, params),
  }),
  defineRoute({
    method: 'get',
    path: '/inbound/emails/{id}/raw',
    tag: TAG,
    summary: 'The message as it arrived, byte for byte',
    description: `message/rfc822, as a download. 404 once retention dropped it. ${SCOPE_NOTE}`,
    params: emailParams,
    download: 'message/rfc822',
    response: z.unknown(),
    handler: ({ deps, auth, params }) => emails.receivedRaw(deps, auth, params),
  }),
  defineRoute({
    method: 'get',
    path: '/inbound/emails/{id}/attachments/{attachmentId}',
    tag: TAG,
    summary: 'One attachment of a received message',
    description: `Its bytes, with the type the message gave it, as a download (never shown in a browser). ${SCOPE_NOTE}`,
    params: z.object({ id: z.string().min(1).max(64), attachmentId: z.string().min(1).max(64) }),
    download: 'application/octet-stream',
    response: z.unknown(),
    handler: ({ deps, auth, params }) => emails.receivedAttachment(deps, auth, params),
  }),
];
