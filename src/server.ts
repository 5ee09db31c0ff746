import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createAdaptorServer } from '@hono/node-server';
import { apiRoutes } from './api/index.js';
import { dashboardPages } from './dashboard/index.js';
import { ApiError } from './errors.js';
import { recipientPages } from './feedback/pages.js';
import { createApp, type AppParts } from './http/app.js';
import type { AppDeps } from './http/deps.js';

export type HttpServer = {
  url: string;
  port: number;
  /** Stops taking requests and lets the ones in flight finish. */
  close(): Promise<void>;
};

/**
 * A request node cannot even parse (headers over its 16 KiB limit, broken framing) still gets the
 * one error shape, rather than node's bare status line.
 */
function answerUnreadableRequest(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const body = JSON.stringify(new ApiError('BAD_REQUEST', tooLarge ? 'Request header fields are larger than 16 KiB' : 'Malformed HTTP request').toBody());
  const status = tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request';
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/**
 * The HTTP side of the process, listening on PORT: the API and the recipients' pages where
 * `api` is set, /health always; `relay` is what /health asks whether mail can go out.
 */
export async function startHttpServer(deps: AppDeps, options: { api: boolean; relay: AppParts['relay'] }): Promise<HttpServer> {
  const api = options.api ? { routes: apiRoutes, pages: recipientPages(deps), dashboard: dashboardPages(deps) } : null;
  const app = createApp(deps, { api, relay: options.relay });
  const http = createAdaptorServer({ fetch: app.fetch }) as Server;
  // Keep-alive sockets would otherwise hold a graceful close open until they time out.
  http.keepAliveTimeout = 5_000;
  http.on('clientError', answerUnreadableRequest);
  await new Promise<void>((resolve, reject) => {
    // Named like the SMTP listeners' failures: the variable to change, not only node's EADDRINUSE.
    http.once('error', (error: NodeJS.ErrnoException) => {
      const variable = error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND' ? 'HOST' : 'PORT';
      reject(new Error(`The HTTP server could not start on ${deps.config.host}:${deps.config.port} (${variable}): ${error.message}`));
    });
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
