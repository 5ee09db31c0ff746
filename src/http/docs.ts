import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Hono } from 'hono';
import { AnswerCache } from '../reuse-for.js';

const require = createRequire(import.meta.url);
const assetDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const assets: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

const page = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Mailroom API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/start.js"></script>
</body></html>`;
// A file of its own rather than an inline script, so the page's policy can refuse every inline script.
const start = "SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#ui', persistAuthorization: false });\n";

// The reference runs only its own files; it reads the document from this site, and nothing may frame it
// (a framed "Try it out" form would carry a visitor's key into someone else's page) or post it elsewhere.
// Swagger UI sets inline styles and draws its icons from data: URLs.
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/** The interactive reference, served from the package's own files so it works with no internet. */
export function docsRoutes() {
  const docs = new Hono();
  const files = new AnswerCache<string, string>({ maxEntries: Object.keys(assets).length });
  docs.use('*', async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.header(name, value);
  });
  docs.get('/', (c) => c.html(page));
  docs.get('/start.js', (c) => c.body(start, 200, { 'Content-Type': 'text/javascript; charset=utf-8' }));
  docs.get('/:asset', (c) => {
    const name = c.req.param('asset');
    const type = assets[name];
    if (!type) return c.notFound();
    const body = files.get(name, () => readFileSync(path.join(assetDir, name), 'utf8'));
    return c.body(body, 200, { 'Content-Type': type, 'Cache-Control': 'public, max-age=86400' });
  });
  return docs;
}
