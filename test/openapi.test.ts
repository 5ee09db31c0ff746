import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { apiRoutes } from '../src/api/index.js';
import { EVENT_TYPES } from '../src/events/contract.js';
import { launchBrowser } from './helpers/browser.js';
import { pathParams, routeName } from './helpers/fixtures.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let doc: any;

beforeAll(async () => {
  server = await startTestServer();
  doc = (await server.call('GET', '/v1/openapi.json')).body;
});
afterAll(() => server.stop());

describe('OpenAPI document', () => {
  it('is served without a key, as OpenAPI 3.1.0 of API version 1.0.0, under /v1 and /api/v1', async () => {
    const res = await server.call('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(doc).toMatchObject({ openapi: '3.1.0', info: { version: '1.0.0', title: expect.any(String) } });
    expect((await server.call('GET', '/api/v1/openapi.json')).body).toEqual(doc);
  });

  it('describes every route with its method, path parameters and request body, and nothing else', () => {
    const documented = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(apiRoutes.map((route) => `${route.method.toUpperCase()} /v1${route.path}`).sort());

    const operationIds = new Set<string>();
    for (const route of apiRoutes) {
      const what = routeName(route);
      const operation = doc.paths[`/v1${route.path}`][route.method];
      operationIds.add(operation.operationId);
      const inPath = operation.parameters.filter((p: { in: string }) => p.in === 'path');
      expect(inPath.map((p: { name: string }) => p.name).sort(), what).toEqual(pathParams(route).sort());
      for (const parameter of inPath) expect(parameter.required, `${what} ${parameter.name}`).toBe(true);
      const inQuery = operation.parameters.filter((p: { in: string }) => p.in === 'query').map((p: { name: string }) => p.name);
      expect(inQuery.sort(), what).toEqual(Object.keys(route.query?.shape ?? {}).sort());

      if (route.body) {
        const schema = operation.requestBody?.content?.['application/json']?.schema;
        expect(schema, what).toBeTruthy();
        if (route.body instanceof z.ZodObject) {
          expect(Object.keys(schema.properties).sort(), what).toEqual(Object.keys(route.body.shape).sort());
        }
      } else {
        expect(operation.requestBody, what).toBeUndefined();
      }
      // A download is described as its bytes, of its media type; everything else answers JSON (202 when taken to act on later).
      expect(operation.responses[route.accepted ? '202' : '200'].content[route.download ?? 'application/json'].schema, what).toEqual(
        route.download ? { type: 'string', format: 'binary' } : expect.objectContaining({}),
      );
      for (const status of ['400', '401', '403', '404', '429']) {
        expect(operation.responses[status].content['application/json'].schema, `${what} ${status}`).toEqual({
          // The interface description fixes the older shape for contact-book PATCH and DELETE.
          $ref: route.legacyErrors ? '#/components/schemas/LegacyError' : '#/components/schemas/Error',
        });
      }
    }
    expect(operationIds.size, 'operation ids are unique').toBe(apiRoutes.length);
    expect(doc.components.schemas.Error.required).toEqual(['error']);
    expect(doc.components.schemas.Error.properties.error.required).toEqual(['code', 'message']);
    expect(doc.components.schemas.LegacyError.required).toEqual(['error', 'code']);
  });

  it('names the same path parameters in every route path and its params schema', () => {
    for (const route of apiRoutes) {
      expect(Object.keys(route.params?.shape ?? {}).sort(), routeName(route)).toEqual(pathParams(route).sort());
    }
  });
});

describe('the webhook calls in the OpenAPI document', () => {
  it('lists every event type of the contract once, each with its body: the envelope, the type, and the data of that type', () => {
    expect(Object.keys(doc.webhooks)).toEqual(EVENT_TYPES);
    for (const type of EVENT_TYPES) {
      const body = doc.webhooks[type].post.requestBody.content['application/json'].schema;
      expect(body.required.sort(), type).toEqual(['attempt', 'createdAt', 'data', 'id', 'teamId', 'type', 'version']);
      expect(body.properties.type.const, type).toBe(type);
      expect(body.properties.data.type, type).toBe('object');
    }
    expect(doc.webhooks['email.bounced'].post.requestBody.content['application/json'].schema.properties.data.required).toContain('bounce');
    expect(doc.webhooks['campaign.status_changed'].post.requestBody.content['application/json'].schema.properties.data.required).toContain('previousStatus');
  });
});

describe('docs and health', () => {
  it('GET /docs is an HTML page whose assets and document are all served', async () => {
    const res = await fetch(`${server.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    // What the page and the files it loads refer to: its styles, its scripts, the document they read.
    const referencesIn = (text: string) => [...text.matchAll(/(?:href|src|url:)\s*=?\s*["']([^"']+)["']/g)].map((m) => m[1]!);
    const references = referencesIn(await res.text());
    const seen = new Set<string>();
    while (references.length > 0) {
      const reference = references.shift()!;
      if (seen.has(reference)) continue;
      seen.add(reference);
      const asset = await fetch(new URL(reference, `${server.url}/docs`));
      expect(asset.status, reference).toBe(200);
      const text = await asset.text();
      expect(text.length, reference).toBeGreaterThan(0);
      if (reference.endsWith('start.js')) references.push(...referencesIn(text));
    }
    expect(seen).toContain('/v1/openapi.json');
    expect(seen.size).toBeGreaterThanOrEqual(4);
  });

  it('GET /docs may not be framed, runs no inline script, posts no form, and still renders every operation under that policy', async () => {
    const res = await fetch(`${server.url}/docs`);
    const policy = res.headers.get('content-security-policy') ?? '';
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    for (const directive of ["frame-ancestors 'none'", "form-action 'none'", "script-src 'self'", "default-src 'none'"]) expect(policy).toContain(directive);
    expect(policy).not.toMatch(/script-src[^;]*unsafe-inline/);

    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      const refused: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
      });
      await page.goto(`${server.url}/docs`);
      await page.locator('.opblock').first().waitFor();
      // Every route, and every webhook call the document describes.
      expect(await page.locator('.opblock').count()).toBe(apiRoutes.length + EVENT_TYPES.length);
      expect(refused).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('GET /health answers 200 without a key', async () => {
    const res = await server.call('GET', '/health');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.body).toMatchObject({ status: 'ok' });
  });
});
