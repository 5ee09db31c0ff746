import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { apiRoutes } from './api/index.js';
import { recipientPages } from './feedback/pages.js';
import { createApp } from './http/app.js';
import type { AppDeps } from './http/deps.js';

export type HttpServer = {
  url: string;
  port: number;
  /** Stops taking requests and lets the ones in flight finish. */
  close(): Promise<void>;
};

/** The HTTP side of the process: the API and the recipients' pages, listening on PORT. */
export async function startHttpServer(deps: AppDeps): Promise<HttpServer> {
  const app = createApp(deps, { routes: apiRoutes, pages: recipientPages(deps) });
  const http = createAdaptorServer({ fetch: app.fetch }) as Server;
  // Keep-alive sockets would otherwise hold a graceful close open until they time out.
  http.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(deps.config.port, deps.config.host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  const host = deps.config.host.includes(':') ? `[${deps.config.host}]` : deps.config.host;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeIdleConnections();
      }),
  };
}
