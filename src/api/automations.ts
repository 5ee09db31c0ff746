import { z } from 'zod';
import { stepsSchema, triggerSchema } from '../audience/automation-steps.js';
import { RUN_STATUSES } from '../events/contract.js';
import { defineRoute } from '../http/route.js';
import { contactEmail } from './contacts.js';
import * as service from '../services/automations.js';

const TAG = 'Automations';
const iso = z.string().describe('ISO 8601, UTC, with milliseconds');
const name = z.string().trim().min(1).max(255);

const automationSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(['DRAFT', 'ACTIVE', 'PAUSED']),
  trigger: z.object({ type: z.enum(['contact.added', 'event']), contactBookId: z.string(), name: z.string().optional() }),
  allowReentry: z.boolean().describe('false: a contact walks it once; true: again after each run ends'),
  steps: z.array(z.record(z.string(), z.unknown())).describe('The steps as stored, every one with its id'),
  counters: z
    .array(z.object({ stepId: z.string(), entered: z.number().int(), waiting: z.number().int(), completed: z.number().int(), exited: z.number().int() }))
    .describe('Per step, in step order: runs that came to it, are at it now, went past it, and ended at it'),
  runs: z.object({ active: z.number().int(), completed: z.number().int(), exited: z.number().int() }),
  createdAt: iso,
  updatedAt: iso,
});

const runSchema = z.object({
  id: z.string(),
  automationId: z.string(),
  contactBookId: z.string(),
  contactId: z.string(),
  email: z.string(),
  status: z.enum(RUN_STATUSES),
  stepId: z.string().nullable().describe('The step it is at (ACTIVE) or ended at (EXITED); null once COMPLETED'),
  exitReason: z.string().nullable(),
  startedAt: iso,
  endedAt: iso.nullable(),
  nextAt: iso.nullable().describe('When its step is due (the end of a wait); null once it ended'),
  history: z.array(z.object({ stepId: z.string(), type: z.string(), at: iso, outcome: z.string().optional(), emailId: z.string().optional() })),
});

const params = z.object({ automationId: z.string().min(1).max(64) });
const STEPS_NOTE =
  'Steps: `wait` `{ duration: "2 days" }` (1 second to 365 days), `send` `{ templateId, from, replyTo?, subject? }` (the contact\'s ' +
  'email, firstName, lastName and properties, and the event\'s properties, are template variables; `{{unsubscribeUrl}}` too), ' +
  '`condition` `{ filter, then, else }` (a segment filter; an engagement condition may name `step`, an earlier send step), ' +
  '`update_contact` `{ properties }`, `exit`. Each has an `id` (made when left out) that stays across edits.';

export const automationRoutes = [
  defineRoute({
    method: 'post',
    path: '/automations',
    tag: TAG,
    summary: 'Create an automation: a trigger on a contact book and the steps each contact walks',
    description: `An invalid definition is a 400 naming each problem's path (\`steps[1].then[0].templateId\`); nothing is stored. A DRAFT starts no runs until it is made ACTIVE. ${STEPS_NOTE}`,
    body: z.object({
      name,
      trigger: triggerSchema,
      steps: stepsSchema,
      status: z.enum(['DRAFT', 'ACTIVE']).optional().describe('DRAFT unless said'),
      allowReentry: z.boolean().optional().describe('false unless said: a contact walks it once'),
    }),
    response: automationSchema,
    handler: ({ deps, auth, body }) => service.createAutomation(deps, auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/automations',
    tag: TAG,
    summary: `List automations, newest first, ${service.PAGE_SIZE} a page, each with its counters`,
    query: z.object({ page: z.coerce.number().int().min(1).default(1) }),
    response: z.object({ data: z.array(automationSchema), totalPage: z.number().int() }),
    handler: ({ deps, auth, query }) => service.listAutomations(deps, auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/automations/{automationId}',
    tag: TAG,
    summary: 'Get an automation with its counters per step',
    params,
    response: automationSchema,
    handler: ({ deps, auth, params }) => service.getAutomation(deps, auth, params),
  }),
  defineRoute({
    method: 'patch',
    path: '/automations/{automationId}',
    tag: TAG,
    summary: 'Rename an automation, change its steps, or activate, pause or resume it',
    description:
      'PAUSED holds every run at its step (new contacts still enter, and wait at the first step); ACTIVE resumes them. New steps keep ' +
      'the runs at each step whose id they keep; a run at a step they drop goes on to the next step they keep (or completes). ' +
      STEPS_NOTE,
    params,
    body: z.object({
      name: name.optional(),
      steps: stepsSchema.optional(),
      status: z.enum(['ACTIVE', 'PAUSED']).optional(),
      allowReentry: z.boolean().optional(),
      ifUpdatedAt: z
        .string()
        .max(64)
        .optional()
        .describe('The `updatedAt` the change was made against: when the automation changed since, the answer is 409 and nothing changes'),
    }),
    response: automationSchema,
    handler: ({ deps, auth, params, body }) => service.updateAutomation(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'delete',
    path: '/automations/{automationId}',
    tag: TAG,
    summary: 'Delete an automation; its active runs end (EXITED) and go with it',
    params,
    response: z.object({ id: z.string(), success: z.boolean() }),
    handler: ({ deps, auth, params }) => service.deleteAutomation(deps, auth, params),
  }),
  defineRoute({
    method: 'get',
    path: '/automations/{automationId}/runs',
    tag: TAG,
    summary: "The automation's runs, newest first, each with its step, next time and history",
    params,
    query: z.object({
      page: z.coerce.number().int().min(1).default(1),
      limit: z.coerce.number().int().min(1).max(100).default(50),
      contactId: z.string().min(1).max(64).optional().describe('Only the runs of this contact'),
      status: z.enum(RUN_STATUSES).optional(),
    }),
    response: z.object({ data: z.array(runSchema), total: z.number().int() }),
    handler: ({ deps, auth, params, query }) => service.listRuns(deps, auth, { ...params, ...query }),
  }),
  defineRoute({
    method: 'post',
    path: '/events',
    tag: TAG,
    summary: "Record a contact's event: the book's automations waiting for it start a run",
    description:
      'Names the contact by `contactId`, or by `email` (an address new to the book becomes a contact, as POST contacts would make it). ' +
      "`properties` are the run's template variables. 202: the steps run in the background.",
    accepted: true,
    body: z
      .object({
        name: z.string().trim().min(1).max(200),
        contactBookId: z.string().min(1).max(64),
        email: contactEmail.optional(),
        contactId: z.string().min(1).max(64).optional(),
        properties: z
          .record(z.string().min(1).max(256), z.string().max(10_000))
          .refine((properties) => Object.keys(properties).length <= 50, 'must hold at most 50 properties')
          .optional(),
      })
      .refine((body) => (body.email === undefined) !== (body.contactId === undefined), { message: 'must name the contact by email or by contactId (one of them)', path: ['email'] }),
    response: z.object({ id: z.string(), contactId: z.string(), runsStarted: z.number().int() }),
    handler: ({ deps, auth, body }) => service.recordEvent(deps, auth, body),
  }),
];
