import { z } from 'zod';
import { defineRoute } from '../http/route.js';
import * as service from '../services/templates.js';

const TAG = 'Templates';
const WRITES = 'Keys scoped to a domain may read and send with templates, not change them: 403.';

const fields = {
  name: z.string().trim().min(1).max(255),
  subject: z.string().min(1).max(998).describe('May hold {{name}} and {{name,fallback=text}} placeholders, as the bodies may'),
  html: z.string().min(1).max(5_000_000).nullable().optional(),
  text: z.string().min(1).max(5_000_000).nullable().optional(),
  content: z.string().min(1).max(5_000_000).nullable().optional().describe('Email editor JSON; html is rendered from it when html is absent'),
};

const templateSchema = z.object({
  id: z.string(),
  name: z.string(),
  subject: z.string(),
  html: z.string().nullable(),
  text: z.string().nullable(),
  content: z.string().nullable(),
  variables: z.array(z.string()).describe('The placeholder names the subject and bodies use'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const params = z.object({ templateId: z.string().min(1).max(128) });

export const templateRoutes = [
  defineRoute({
    method: 'post',
    path: '/templates',
    tag: TAG,
    summary: 'Create a template',
    description: `\`html\`, \`text\` or \`content\` is required. ${WRITES}`,
    body: z.object(fields),
    response: templateSchema,
    handler: ({ deps, auth, body }) => service.createTemplate(deps, auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/templates',
    tag: TAG,
    summary: "List the team's templates, newest first",
    query: z.object({
      page: z.coerce.number().int().min(1).default(1),
      limit: z.coerce.number().int().min(1).max(100).default(50),
    }),
    response: z.object({ data: z.array(templateSchema), count: z.number().int() }),
    handler: ({ deps, auth, query }) => service.listTemplates(deps, auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/templates/{templateId}',
    tag: TAG,
    summary: 'Get a template with the variables it uses',
    params,
    response: templateSchema,
    handler: ({ deps, auth, params }) => service.getTemplate(deps, auth, params),
  }),
  defineRoute({
    method: 'patch',
    path: '/templates/{templateId}',
    tag: TAG,
    summary: 'Change any field of a template',
    description: `New \`content\` without \`html\` renders the html afresh. Emails already sent keep what was rendered. ${WRITES}`,
    params,
    body: z.object(fields).partial(),
    response: templateSchema,
    handler: ({ deps, auth, params, body }) => service.updateTemplate(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'delete',
    path: '/templates/{templateId}',
    tag: TAG,
    summary: 'Delete a template',
    description: `Emails rendered from it keep what was rendered and its id. ${WRITES}`,
    params,
    response: z.object({ id: z.string(), success: z.boolean() }),
    handler: ({ deps, auth, params }) => service.deleteTemplate(deps, auth, params),
  }),
];
