import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Hono } from 'hono';

const here = (name: string) => new URL(`./assets/${name}`, import.meta.url);
// chart.js exports no path to its browser build; it sits beside the module its name resolves to.
const chartJs = path.join(path.dirname(createRequire(import.meta.url).resolve('chart.js')), 'chart.umd.min.js');

const ASSETS: Record<string, { file: URL | string; type: string }> = {
  'app.css': { file: here('app.css'), type: 'text/css; charset=utf-8' },
  'app.js': { file: here('app.js'), type: 'text/javascript; charset=utf-8' },
  'automations.css': { file: here('automations.css'), type: 'text/css; charset=utf-8' },
  'favicon.svg': { file: here('favicon.svg'), type: 'image/svg+xml' },
  'segments.css': { file: here('segments.css'), type: 'text/css; charset=utf-8' },
  'segments.js': { file: here('segments.js'), type: 'text/javascript; charset=utf-8' },
  'chart.js': { file: chartJs, type: 'text/javascript; charset=utf-8' },
};

/** The dashboard's styles and scripts, from this folder and installed packages: nothing from a CDN. */
export function assetRoutes() {
  const loaded = new Map(Object.entries(ASSETS).map(([name, asset]) => [name, { body: readFileSync(asset.file), type: asset.type }]));
  const app = new Hono();
  app.get('/:name', (c) => {
    const asset = loaded.get(c.req.param('name'));
    if (!asset) return c.notFound();
    return c.body(asset.body, 200, {
      'Content-Type': asset.type,
      'Cache-Control': 'public, max-age=3600',
      'X-Content-Type-Options': 'nosniff',
    });
  });
  return app;
}
