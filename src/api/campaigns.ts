import { z } from 'zod';
import { defineRoute } from '../http/route.js';
import * as service from '../services/campaigns.js';

const TAG = 'Campaigns';
const STATUSES = ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED', 'SENT'] as const;

const addresses = z.union([z.string().max(10_000), z.array(z.string().max(1000)).max(50)]);
const batchSize = z.number().int().min(1).max(100_000);

export const createCampaignBody = z.object({
  name: z.string().trim().min(1).max(255),
  from: z.string().min(1).max(1000).describe('`addr@domain` or `Name <addr@domain>` on a verified domain of the team'),
  subject: z.string().min(1).max(998),
  contactBookId: z.string().min(1).max(128),
  segmentId: z.string().min(1).max(64).optional().describe('A segment of the book: the campaign goes to its subscribed contacts as it matches them at release'),
  previewText: z.string().max(1000).optional(),
  content: z.string().min(1).max(5_000_000).optional().describe('Email editor JSON; rendered to HTML when `html` is absent'),
  html: z.string().min(1).max(5_000_000).optional(),
  replyTo: addresses.optional(),
  cc: addresses.optional(),
  bcc: addresses.optional(),
  sendNow: z.boolean().optional(),
  scheduledAt: z.string().trim().min(1).max(200).optional().describe('ISO 8601, or natural language read in SCHEDULE_TIMEZONE'),
  batchSize: batchSize.default(500),
  batchWindowMinutes: z.number().int().min(0).max(1440).default(0).describe('Minutes between batches; 0 releases them as fast as delivery allows'),
});

export const updateCampaignBody = z.object({
  name: createCampaignBody.shape.name.optional(),
  segmentId: z.string().min(1).max(64).nullable().optional().describe('A segment of the book, or null for the whole book; only before the release starts'),
});

export const campaignSchema = z.object({
  id: z.string(),
  name: z.string(),
  from: z.string(),
  subject: z.string(),
  previewText: z.string().nullable(),
  contactBookId: z.string().nullable(),
  segmentId: z.string().nullable().describe('The segment of the book it goes to; null: the whole book'),
  html: z.string().nullable(),
  content: z.string().nullable(),
  status: z.enum(STATUSES),
  pausedReason: z.string().nullable().describe('Why the reputation guard paused the campaign; null otherwise'),
  scheduledAt: z.string().nullable(),
  batchSize: z.number().int(),
  batchWindowMinutes: z.number().int(),
  total: z.number().int(),
  sent: z.number().int(),
  delivered: z.number().int(),
  opened: z.number().int(),
  clicked: z.number().int(),
  unsubscribed: z.number().int(),
  bounced: z.number().int(),
  hardBounced: z.number().int(),
  complained: z.number().int(),
  replyTo: z.array(z.string()),
  cc: z.array(z.string()),
  bcc: z.array(z.string()),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const params = z.object({ campaignId: z.string().min(1).max(128) });
const success = z.object({ success: z.boolean() });

export const campaignRoutes = [
  defineRoute({
    method: 'post',
    path: '/campaigns',
    tag: TAG,
    summary: 'Create a campaign, and schedule it with sendNow or scheduledAt',
    description: 'The body must contain `{{unsubscribeUrl}}`. Creating and scheduling are one transaction.',
    body: createCampaignBody,
    response: campaignSchema,
    handler: ({ deps, auth, body }) => service.createCampaign(deps, auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/campaigns',
    tag: TAG,
    summary: `List campaigns, newest first, ${service.PAGE_SIZE} a page`,
    query: z.object({
      page: z.coerce.number().int().min(1).default(1),
      status: z.enum(STATUSES).optional(),
      search: z.string().max(255).optional(),
    }),
    response: z.object({ campaigns: z.array(campaignSchema), totalPage: z.number().int() }),
    handler: ({ deps, auth, query }) => service.listCampaigns(deps, auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/campaigns/{campaignId}',
    tag: TAG,
    summary: 'Get a campaign with its counters',
    params,
    response: campaignSchema,
    handler: ({ deps, auth, params }) => service.getCampaign(deps, auth, params),
  }),
  defineRoute({
    method: 'patch',
    path: '/campaigns/{campaignId}',
    tag: TAG,
    summary: 'Rename a campaign, or change the segment it goes to before its release starts',
    description: '`segmentId` null sends to the whole book. A campaign whose release has started finishes with the segment it started with (its `total` was counted from it): 409.',
    params,
    body: updateCampaignBody,
    response: campaignSchema,
    handler: ({ deps, auth, params, body }) => service.updateCampaign(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'delete',
    path: '/campaigns/{campaignId}',
    tag: TAG,
    summary: 'Delete a campaign in any state; its mail not yet handed to SMTP is cancelled',
    params,
    response: campaignSchema,
    handler: ({ deps, auth, params }) => service.deleteCampaign(deps, auth, params),
  }),
  defineRoute({
    method: 'post',
    path: '/campaigns/{campaignId}/schedule',
    tag: TAG,
    summary: 'Schedule a DRAFT, SCHEDULED or PAUSED campaign (now when scheduledAt is absent)',
    params,
    body: z.object({ scheduledAt: z.string().trim().min(1).max(200).optional(), batchSize: batchSize.optional() }),
    response: success,
    handler: ({ deps, auth, params, body }) => service.scheduleCampaign(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'post',
    path: '/campaigns/{campaignId}/pause',
    tag: TAG,
    summary: 'Pause a SCHEDULED or RUNNING campaign: no new batches, and its unsent mail is held',
    params,
    response: success,
    handler: ({ deps, auth, params }) => service.pauseCampaign(deps, auth, params),
  }),
  defineRoute({
    method: 'post',
    path: '/campaigns/{campaignId}/resume',
    tag: TAG,
    summary: 'Resume a PAUSED campaign',
    params,
    response: success,
    handler: ({ deps, auth, params }) => service.resumeCampaign(deps, auth, params),
  }),
];
