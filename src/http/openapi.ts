import { z } from 'zod';
import { callBodySchema, EVENT_TYPES } from '../events/contract.js';
import type { RouteDef } from './route.js';

const errorFields = {
  code: {
    type: 'string',
    enum: [
      'BAD_REQUEST', 'VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'METHOD_NOT_ALLOWED',
      'CONFLICT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED', 'INTERNAL_SERVER_ERROR',
    ],
  },
  message: { type: 'string', description: 'What went wrong, for people' },
  details: {
    type: 'array',
    items: {
      type: 'object',
      required: ['path', 'message'],
      properties: { path: { type: 'string' }, message: { type: 'string' } },
    },
  },
} as const;

const errorSchema = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'object', required: ['code', 'message'], properties: errorFields } },
} as const;

/** Contact-book PATCH and DELETE, as the interface description fixes them. */
const legacyErrorSchema = {
  type: 'object',
  required: ['error', 'code'],
  properties: { error: errorFields.message, code: errorFields.code, details: errorFields.details },
} as const;

const errorResponses = {
  '400': 'Malformed JSON or invalid fields (VALIDATION_ERROR names every one)',
  '401': 'Missing, malformed or unknown API key',
  '403': 'The key lacks the permission or domain scope for this call',
  '404': 'No such resource in this team',
  '409': 'The resource is in a state that forbids this',
  '413': 'Body larger than the configured limit',
  '415': 'Body is not JSON',
  '429': 'Team rate limit exceeded; see Retry-After',
};

/**
 * Schemas a recursive schema (a segment's filter) refers to by name, gathered into the document's
 * components: a `$ref` to `#/$defs/…` would point into the document's root, where nothing is.
 */
const shared: Record<string, unknown> = {};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output') {
  const { $schema: _ignored, $defs, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  const toComponents = (value: unknown) => JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', '"#/components/schemas/')) as Record<string, unknown>;
  for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, unknown>)) shared[name] = toComponents(def);
  return toComponents(rest);
}

function parameters(schema: z.ZodObject<z.ZodRawShape> | undefined, location: 'path' | 'query') {
  if (!schema) return [];
  return Object.entries(schema.shape).map(([name, field]) => ({
    name,
    in: location,
    required: location === 'path' || !(field as z.ZodType).safeParse(undefined).success,
    schema: jsonSchema(field as z.ZodType, 'input'),
  }));
}

/** The OpenAPI 3.1 document, built from the very schemas that validate each request. */
export function buildOpenApi(routes: RouteDef[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const operation: Record<string, unknown> = {
      operationId: `${route.method}${route.path.replace(/[{}]/g, '').replace(/\/(\w)/g, (_m, ch: string) => ch.toUpperCase())}`,
      tags: [route.tag],
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      'x-permission': route.permission ?? 'full',
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      ...(route.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } } }
        : {}),
      responses: {
        [route.accepted ? '202' : '200']: route.download
          ? { description: 'The bytes, as a download', content: { [route.download]: { schema: { type: 'string', format: 'binary' } } } }
          : { description: route.accepted ? 'Accepted' : 'OK', content: { 'application/json': { schema: jsonSchema(route.response, 'output') } } },
        ...Object.fromEntries(
          Object.entries(errorResponses).map(([status, description]) => [
            status,
            { description, content: { 'application/json': { schema: { $ref: `#/components/schemas/${route.legacyErrors ? 'LegacyError' : 'Error'}` } } } },
          ]),
        ),
      },
    };
    (paths[`/v1${route.path}`] ??= {})[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Mailroom API',
      version: '1.0.0',
      description: 'Email sending API compatible with the useSend v1 public API. Every path is also served under /api/v1.',
    },
    servers: [{ url: '/' }],
    security: [{ bearerAuth: [] }],
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key made with the CLI' } },
      schemas: { Error: errorSchema, LegacyError: legacyErrorSchema, ...shared },
    },
    paths,
    // The calls Mailroom makes to a team's webhooks, one per event type, with the exact body of each.
    webhooks: Object.fromEntries(
      EVENT_TYPES.map((type) => [
        type,
        {
          post: {
            operationId: `webhook.${type}`,
            tags: ['Webhook events'],
            summary: `The call for ${type}`,
            requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(callBodySchema(type), 'output') } } },
            responses: { '200': { description: 'Any 2xx answer ends the call; anything else is retried' } },
          },
        },
      ]),
    ),
  };
}
