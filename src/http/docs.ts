import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Hono } from 'hono';

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
<script>SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#ui', persistAuthorization: false });</script>
</body></html>`;

/** The interactive reference, served from the package's own files so it works with no internet. */
export function docsRoutes() {
  const docs = new Hono();
  const cache = new Map<string, string>();
  docs.get('/', (c) => c.html(page));
  docs.get('/:asset', (c) => {
    const name = c.req.param('asset');
    const type = assets[name];
    if (!type) return c.notFound();
    let body = cache.get(name);
    if (body === undefined) {
      body = readFileSync(path.join(assetDir, name), 'utf8');
      cache.set(name, body);
    }
    return c.body(body, 200, { 'Content-Type': type, 'Cache-Control': 'public, max-age=86400' });
  });
  return docs;
}
