import { Hono, type Context, type MiddlewareHandler, type Next } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import { page, plainPage } from './layout.js';
import { checkOrigin, FORM_TYPES, requireSession, type DashboardEnv } from './session.js';

// Pages load only this site's own scripts and styles; an email's body is shown in a sandboxed
// frame of this site (the emails page sets its own, stricter policy for that frame).
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'";

export const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  const set = (name: string, value: string) => {
    if (!c.res.headers.has(name)) c.header(name, value);
  };
  set('Content-Security-Policy', CSP);
  set('X-Frame-Options', 'DENY');
  set('X-Content-Type-Options', 'nosniff');
  set('Referrer-Policy', 'same-origin');
  set('Cache-Control', 'no-store');
};

/** The most a form's body may hold: bytes, and, where it says, fields. */
export type FormBound = { bytes: number; fields?: number };

/**
 * Forms are read whole into memory, so their bodies are bounded (MAX_BODY_BYTES, unless `bound`
 * says less) like the API's, before anyone has signed in: a declared length over the bound is
 * refused unread, a chunked body once the bound is passed. With `fields`, the form is read here
 * (it is then at most `bytes`) and refused when it has more. A page that takes a file streams it
 * as another type and bounds it itself.
 */
export function limitForms(deps: Pick<AppDeps, 'config'>, bound: FormBound = { bytes: deps.config.maxBodyBytes }): MiddlewareHandler {
  const { bytes, fields } = bound;
  const limit = bodyLimit({
    maxSize: bytes,
    onError: () => {
      throw new ApiError('PAYLOAD_TOO_LARGE', `The form is larger than the limit of ${bytes} bytes`);
    },
  });
  const countFields =
    fields === undefined
      ? null
      : async (c: Context, next: Next) => {
          const form = await c.req.formData().catch(() => {
            throw new ApiError('BAD_REQUEST', 'The form could not be read');
          });
          if ([...form.keys()].length > fields) throw new ApiError('PAYLOAD_TOO_LARGE', `The form has more than ${fields} fields`);
          await next();
        };
  return (c, next) => {
    if (!FORM_TYPES.test(c.req.header('content-type') ?? '')) return next();
    return limit(c, countFields ? () => countFields(c, next) : next);
  };
}

/** Any error of a dashboard page as a page: the message next to the navigation, never a stack trace. */
export function renderError(deps: Pick<AppDeps, 'log'>) {
  return (error: Error, c: Context<DashboardEnv>) => {
    let known = error instanceof ApiError ? error : null;
    if (!known) {
      deps.log.error('dashboard request failed', { error, requestId: c.get('requestId'), method: c.req.method, path: c.req.path });
      known = new ApiError('INTERNAL_SERVER_ERROR', `Something went wrong on our side (request id ${c.get('requestId')})`);
    }
    const status = known.status as ContentfulStatusCode;
    const title = status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : status === 429 ? 'Too many attempts' : status >= 500 ? 'Server error' : 'That did not work';
    const body = html`<div class="page-head"><h1>${title}</h1></div><div class="panel"><p>${known.message}</p><p><a href="/">Back to the overview</a></p></div>`;
    if (status === 401) return plainPage(c, { title, status, body: html`<h1>${title}</h1><p>${known.message}</p><p><a class="button" href="/login">Sign in</a></p>` });
    return c.get('user') ? page(c, { title, section: 'Overview', body, status }) : plainPage(c, { title, body, status });
  };
}

/**
 * The app of one part of the dashboard at `prefix`: its pages answer only a signed-in person of a
 * team, state-changing requests need the CSRF token, and errors come back as pages.
 */
export function section(deps: AppDeps, prefix: string): Hono<DashboardEnv> {
  const app = new Hono<DashboardEnv>().basePath(prefix);
  const guard = [securityHeaders, checkOrigin(deps), limitForms(deps), requireSession(deps)] as const;
  if (prefix === '/') app.use('/', ...guard);
  else app.use('*', ...guard);
  app.onError(renderError(deps));
  return app;
}
