import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { accepts } from 'hono/accepts';
import { bodyLimit } from 'hono/body-limit';
import { ApiError } from '../errors.js';
import { authMiddleware, type AuthContext } from './auth.js';
import { authorize } from './authorize.js';
import type { AppDeps } from './deps.js';
import { docsRoutes } from './docs.js';
import { healthRoute } from './health.js';
import { parseInput } from './input.js';
import { readJsonBody, sendDownload, sendError, sendJson } from './json.js';
import { metricsRoute, requestMetrics } from './metrics.js';
import { buildOpenApi } from './openapi.js';
import { bySpecificity, type RouteDef } from './route.js';

type Env = { Variables: { auth: AuthContext; requestId: string } };

const REQUEST_ID = /^[\w.:-]{1,128}$/;
const API_PREFIX = /^\/(?:api\/)?v1(?=\/|$)/;

export type AppParts = {
  /**
   * The API, the recipients' pages and the dashboard (for signed-in people); null on a worker,
   * whose port answers only /health (and /metrics).
   */
  api: { routes: RouteDef[]; pages: Hono; dashboard: Hono } | null;
  /** What /health asks whether mail can go out; null where this process sends none. */
  relay: { check(): Promise<void> } | null;
};

/**
 * The HTTP app: the API routes under /v1 (and /api/v1) behind the key check, the interactive
 * reference, the pages that need no key (the recipients' pages) and the dashboard, all with the one
 * error shape. An API call made outside /v1 is told where the API is, never sent to the sign-in page.
 */
export function createApp(deps: AppDeps, parts: AppParts) {
  const routes = [...(parts.api?.routes ?? [])].sort(bySpecificity);
  const openApi = buildOpenApi(routes);
  const app = new Hono<Env>();
  const v1 = new Hono<Env>();

  app.use('*', requestMetrics(deps));
  app.use('*', async (c, next) => {
    const incoming = c.req.header('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    c.set('requestId', requestId);
    c.header('X-Request-Id', requestId);
    await next();
  });

  const matchers = routes.map((route) => ({
    method: route.method.toUpperCase(),
    // Exactly what the router matches: a path it would not serve must not be reported as a 405.
    pattern: new RegExp(`^${route.path.replace(/\{\w+\}/g, '[^/]+')}$`),
    legacyErrors: route.legacyErrors === true,
  }));
  // Every route's pattern in one expression: one test per request instead of one per route ((?!) matches nothing).
  const anyRoute = new RegExp(matchers.map((m) => m.pattern.source).join('|') || '(?!)');
  /** The request's path below /v1 (or /api/v1); null outside the API. */
  const apiPath = (path: string) => {
    const prefix = API_PREFIX.exec(path);
    return prefix ? path.slice(prefix[0].length) : null;
  };
  /** A request that reads like an API client's rather than a browser's: it carries a key, or asks for JSON over a page. */
  const looksLikeApiCall = (c: Context) =>
    /^Bearer\s/i.test(c.req.header('authorization') ?? '') ||
    accepts(c, { header: 'Accept', supports: ['text/html', 'application/json'], default: 'text/html' }) === 'application/json';
  /** The 404 of an API call made outside /v1, pointing at the API call it probably meant. */
  const missingPrefix = (c: Context) => {
    const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
    const meant = matchers.some((m) => m.method === method && m.pattern.test(c.req.path));
    const where = meant ? `${c.req.method} /v1${c.req.path}` : 'its reference is at /docs';
    return new ApiError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}: the API is under /v1 (${where})`);
  };
  app.route('/health', healthRoute(deps, parts.relay));
  app.route('/metrics', metricsRoute(deps));

  v1.get('/openapi.json', (c) => sendJson(c, openApi));
  // Before auth: a path no route serves is the same 404 for anyone, and costs no key lookup.
  v1.use('*', async (c, next) => {
    const rest = apiPath(c.req.path);
    if (rest !== null && !anyRoute.test(rest)) throw new ApiError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}`);
    await next();
  });
  v1.use('*', authMiddleware(deps));
  // After auth, so only a known team's requests are read (a chunked body is buffered to measure
  // it), each one is charged to its rate limit, and a 413 carries the rate-limit headers too.
  const tooLarge = () => new ApiError('PAYLOAD_TOO_LARGE', `Request body exceeds the limit of ${deps.config.maxBodyBytes} bytes`);
  const limitStream = bodyLimit({
    maxSize: deps.config.maxBodyBytes,
    onError: () => {
      throw tooLarge();
    },
  });
  v1.use('*', async (c, next) => {
    // node reads no more than a declared Content-Length: checking the number is enough, and leaves
    // the body to be read straight from the socket instead of through a web stream built per request.
    const declared = c.req.header('content-length');
    if (declared === undefined || c.req.header('transfer-encoding') !== undefined) return limitStream(c, next);
    if (Number(declared) > deps.config.maxBodyBytes) throw tooLarge();
    await next();
  });
  for (const route of routes) {
    v1.on(route.method.toUpperCase(), route.path.replace(/\{(\w+)\}/g, ':$1'), (c) => handle(c, route, deps));
  }
  if (parts.api) {
    app.route('/docs', docsRoutes());
    app.route('/', parts.api.pages);
    // Ahead of the dashboard, which would send an API client to its sign-in page: `curl /emails`
    // with a key learns where the API is instead.
    app.use('*', async (c, next) => {
      if (apiPath(c.req.path) === null && looksLikeApiCall(c)) throw missingPrefix(c);
      await next();
    });
    app.route('/', parts.api.dashboard);
    // Mounted once complete: Hono copies a sub-app's routes when it is mounted.
    app.route('/v1', v1);
    app.route('/api/v1', v1);
  }

  /** Every error of a route that keeps the legacy shape has it, whatever refused the call (key, limit, body, rules). */
  const respondError = (c: Context, error: ApiError) => {
    // Refused before its body was read (no key, over a limit, no route): the rest of the body is
    // still on its way, so the connection cannot carry another request. Saying so keeps a client
    // that reuses connections from sending its next request into one about to close.
    const bodyUnread = (Number(c.req.header('content-length') ?? 0) > 0 || c.req.header('transfer-encoding') !== undefined) && !c.req.raw.bodyUsed;
    if (bodyUnread) c.header('Connection', 'close');
    const rest = apiPath(c.req.path);
    const legacy = rest !== null && matchers.some((m) => m.legacyErrors && m.method === c.req.method && m.pattern.test(rest));
    return sendError(c, error, legacy ? 'legacy' : 'standard');
  };

  app.notFound((c) => {
    const rest = apiPath(c.req.path);
    if (rest !== null) {
      const allowed = new Set(matchers.filter((m) => m.pattern.test(rest)).map((m) => m.method));
      if (allowed.size > 0) {
        // Hono answers HEAD with the GET handler, so wherever GET is allowed, HEAD is too.
        if (allowed.has('GET')) allowed.add('HEAD');
        c.header('Allow', [...allowed].join(', '));
        return respondError(c, new ApiError('METHOD_NOT_ALLOWED', `Method ${c.req.method} is not allowed on ${c.req.path}`));
      }
    }
    return respondError(c, new ApiError('NOT_FOUND', `No route for ${c.req.method} ${c.req.path}`));
  });

  app.onError((error, c) => {
    if (error instanceof ApiError) return respondError(c, error);
    deps.log.error('request failed', { error, requestId: c.get('requestId'), method: c.req.method, path: c.req.path });
    return respondError(c, new ApiError('INTERNAL_SERVER_ERROR', `Internal server error (request id ${c.get('requestId')})`));
  });

  return app;
}

async function handle(c: Context<Env>, route: RouteDef, deps: AppDeps) {
  const auth = c.get('auth');
  authorize(auth, route);
  const params = route.params ? parseInput(route.params, c.req.param()) : undefined;
  const query = route.query ? parseInput(route.query, c.req.query()) : undefined;
  // A call that takes no body still refuses one that is not JSON, as every other call does; a
  // JSON body it takes no fields from is ignored like unknown fields are.
  const raw = await readJsonBody(c);
  const body = route.body ? parseInput(route.body, raw) : undefined;
  const result = await route.handler({ params, query, body, auth, deps, c } as never);
  return route.download ? sendDownload(c, result as Parameters<typeof sendDownload>[1]) : sendJson(c, result, route.accepted ? 202 : 200);
}
