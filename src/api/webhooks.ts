import { z } from 'zod';
import { EVENT_TYPES } from '../events/contract.js';
import { defineRoute } from '../http/route.js';
import * as service from '../services/webhooks.js';

const TAG = 'Webhooks';
const TEAM_WIDE = 'A webhook carries the events of every domain of the team: a key scoped to a domain gets 403.';
const SECRET_SHOWN = 'The answer carries the signing secret; only create, GET of one webhook and rotate-secret show it.';

const eventType = z.enum(EVENT_TYPES, {
  error: (issue) => (typeof issue.input === 'string' ? `unknown event type ${JSON.stringify(issue.input)}` : undefined),
});

const fields = {
  url: z
    .string()
    .trim()
    .min(1)
    .max(2048)
    .describe(
      'http or https. Its host must resolve only to public addresses (loopback, private, link-local, CGNAT, multicast and ' +
        'unspecified ones are refused, with the reason) unless the server allows it in WEBHOOK_ALLOWED_HOSTS. Stored normalised',
    ),
  events: z
    .array(eventType)
    .min(1)
    .max(100)
    .nullable()
    .optional()
    .describe('The event types to call it for, repeats ignored; omitted or null: every type, including types added later'),
  domainIds: z
    .array(z.number().int().min(1).max(2_147_483_647))
    .max(100)
    .nullable()
    .optional()
    .describe("Only these domains' email events (other events are not domain-bound); omitted, null or empty: every domain. Each must be a domain of the team"),
  description: z.string().trim().max(500).nullable().optional(),
};

const webhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  events: z.array(z.string()).describe('Every type when it was created or changed without a list'),
  domainIds: z.array(z.number().int()).describe('Empty: email events of every domain'),
  status: z.enum(['ACTIVE', 'PAUSED', 'AUTO_DISABLED']).describe('AUTO_DISABLED after WEBHOOK_AUTO_DISABLE_AFTER calls in a row failed every attempt, or at once on a 410 Gone'),
  disabledReason: z.string().nullable().describe('Why it was AUTO_DISABLED'),
  createdAt: z.string(),
  updatedAt: z.string(),
});
const webhookWithSecret = webhookSchema.extend({
  secret: z.string().describe('whsec_ and base64 of 32 random bytes: signs every call (X-UseSend-Signature and webhook-signature)'),
});

const CALL_STATUSES = ['PENDING', 'DELIVERED', 'FAILED', 'DISCARDED'] as const;
const callSchema = z.object({
  id: z.string().describe('Also the webhook-id and X-UseSend-Call headers: the same on every attempt'),
  webhookId: z.string(),
  type: z.string(),
  status: z.enum(CALL_STATUSES).describe('FAILED: every attempt failed; DISCARDED: the receiver answered 410 Gone before it went out'),
  attempt: z.number().int().describe('Attempts made so far'),
  responseStatus: z.number().int().nullable().describe('Of the latest attempt; null when it got no response'),
  responseTimeMs: z.number().int().nullable(),
  lastError: z.string().nullable(),
  nextAttemptAt: z.string().nullable().describe('When it is tried next; null unless PENDING'),
  createdAt: z.string(),
  updatedAt: z.string(),
  payload: z
    .object({
      id: z.string(),
      type: z.string(),
      version: z.string(),
      createdAt: z.string(),
      teamId: z.number().int(),
      data: z.record(z.string(), z.unknown()),
      attempt: z.number().int(),
    })
    .describe('The body the receiver gets (of the latest attempt; of the first before any)'),
});

const page = {
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(100).default(50),
};
const params = z.object({ webhookId: z.string().min(1).max(128) });
const callParams = params.extend({ callId: z.string().min(1).max(128) });

export const webhookRoutes = [
  defineRoute({
    method: 'post',
    path: '/webhooks',
    tag: TAG,
    summary: 'Create a webhook',
    description: `A new webhook is ACTIVE and gets a new signing secret. At most ${service.MAX_WEBHOOKS_PER_TEAM} per team (409 beyond). A URL the guard refuses, an unknown event type or a domain the team does not have is a 400 naming the field. ${SECRET_SHOWN} ${TEAM_WIDE}`,
    body: z.object(fields),
    response: webhookWithSecret,
    handler: ({ deps, auth, body }) => service.createWebhook(deps, auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/webhooks',
    tag: TAG,
    summary: "List the team's webhooks, newest first",
    description: `Without their secrets. ${TEAM_WIDE}`,
    query: z.object(page),
    response: z.object({ data: z.array(webhookSchema), count: z.number().int() }),
    handler: ({ deps, auth, query }) => service.listWebhooks(deps, auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/webhooks/{webhookId}',
    tag: TAG,
    summary: 'Get a webhook with its signing secret',
    description: `${SECRET_SHOWN} ${TEAM_WIDE}`,
    // The secret signs every call: a person sees it only with the right to change the webhook.
    access: 'change',
    params,
    response: webhookWithSecret,
    handler: ({ deps, auth, params }) => service.getWebhook(deps, auth, params),
  }),
  defineRoute({
    method: 'patch',
    path: '/webhooks/{webhookId}',
    tag: TAG,
    summary: 'Change a webhook, pause it or re-activate it',
    description:
      '`status` ACTIVE or PAUSED (AUTO_DISABLED is set only by Mailroom). A paused webhook gets no new calls and its pending ones wait; ' +
      'setting ACTIVE on a PAUSED or AUTO_DISABLED one re-activates it, its run of failed calls counted from zero again. ' +
      `The URL, events and domains are checked as on create. ${TEAM_WIDE}`,
    params,
    body: z.object({ ...fields, url: fields.url.optional(), status: z.enum(['ACTIVE', 'PAUSED']).optional() }),
    response: webhookSchema,
    handler: ({ deps, auth, params, body }) => service.updateWebhook(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'delete',
    path: '/webhooks/{webhookId}',
    tag: TAG,
    summary: 'Delete a webhook and its call log',
    description: `Its pending calls are not made. ${TEAM_WIDE}`,
    params,
    response: z.object({ id: z.string(), success: z.boolean() }),
    handler: ({ deps, auth, params }) => service.deleteWebhook(deps, auth, params),
  }),
  defineRoute({
    method: 'post',
    path: '/webhooks/{webhookId}/rotate-secret',
    tag: TAG,
    summary: 'Give a webhook a new signing secret',
    description: `The old secret stops signing at once: every attempt from now on, retries of earlier calls too, is signed with the new one. ${SECRET_SHOWN} ${TEAM_WIDE}`,
    params,
    response: webhookWithSecret,
    handler: ({ deps, auth, params }) => service.rotateWebhookSecret(deps, auth, params),
  }),
  defineRoute({
    method: 'post',
    path: '/webhooks/{webhookId}/test',
    tag: TAG,
    summary: 'Send a webhook.test call now',
    description: `Answers the new call (PENDING, due now; see its log for the outcome), whatever event types the webhook hears. A webhook that is not ACTIVE is a 409. ${TEAM_WIDE}`,
    params,
    response: callSchema,
    handler: ({ deps, auth, params }) => service.testWebhook(deps, auth, params),
  }),
  defineRoute({
    method: 'get',
    path: '/webhooks/{webhookId}/calls',
    tag: TAG,
    summary: "A webhook's call log, newest first",
    description: `Optionally only calls of one \`status\`. ${TEAM_WIDE}`,
    params,
    query: z.object({ ...page, status: z.enum(CALL_STATUSES).optional() }),
    response: z.object({ data: z.array(callSchema), count: z.number().int() }),
    handler: ({ deps, auth, params, query }) => service.listWebhookCalls(deps, auth, { ...params, ...query }),
  }),
  defineRoute({
    method: 'get',
    path: '/webhooks/{webhookId}/calls/{callId}',
    tag: TAG,
    summary: 'Get one call of a webhook',
    description: TEAM_WIDE,
    params: callParams,
    response: callSchema,
    handler: ({ deps, auth, params }) => service.getWebhookCall(deps, auth, params),
  }),
  defineRoute({
    method: 'post',
    path: '/webhooks/{webhookId}/calls/{callId}/retry',
    tag: TAG,
    summary: 'Make a call again',
    description:
      'A DELIVERED, FAILED or DISCARDED call becomes PENDING, due now, with its attempts and last error kept; it goes out once more ' +
      `(when the webhook is ACTIVE), signed afresh. A PENDING call is answered as it is: it goes out on its own. ${TEAM_WIDE}`,
    params: callParams,
    response: callSchema,
    handler: ({ deps, auth, params }) => service.retryWebhookCall(deps, auth, params),
  }),
];
