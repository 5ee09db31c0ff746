import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import { parseCommand } from './cli/commands.js';
import { controlSocketPath, serveControlSocket } from './cli/control-socket.js';
import type { Config } from './config.js';
import { openDatabase, type DatabaseHandle, type DatabaseSource } from './db/connection.js';
import { lockDataDir } from './db/data-dir-lock.js';
import { migrate } from './db/migrate.js';
import { startReleaser } from './campaigns/releaser.js';
import { startDomainWorker } from './domains/worker.js';
import { startInboundSmtp, type InboundListener } from './feedback/inbound-smtp.js';
import { loadSecret, RecipientTokens } from './feedback/tokens.js';
import { createApp } from './http/app.js';
import type { AppDeps } from './http/deps.js';
import { RateLimiter } from './http/rate-limit.js';
import { createLogger, type Logger } from './log.js';
import { startDispatcher } from './sending/dispatcher.js';

export type RunningServer = {
  url: string;
  port: number;
  /** The inbound SMTP listener's port; null when it is not running here. */
  inboundPort: number | null;
  deps: AppDeps;
  /** Stops taking requests, lets the ones in flight finish, then closes the database. */
  close(): Promise<void>;
};

export function databaseSourceFor(config: Config): DatabaseSource {
  return config.databaseUrl ? { url: config.databaseUrl } : { dataDir: config.dataDir };
}

/** Opens the database and brings its schema up to date; shared by the server and the CLI. */
export async function openMigratedDatabase(source: DatabaseSource, log: Logger): Promise<DatabaseHandle> {
  const handle = await openDatabase(source);
  try {
    const applied = await migrate(handle.db);
    if (applied.length > 0) log.info('migrations applied', { applied });
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}

/**
 * The server's database. The embedded one also holds the data-directory lock (PGlite allows one
 * process per directory) and serves the CLI's commands on the control socket, since the CLI
 * cannot open the directory itself meanwhile; closing the handle releases all three.
 */
async function openServerDatabase(source: DatabaseSource, log: Logger): Promise<DatabaseHandle> {
  if (!('dataDir' in source)) return openMigratedDatabase(source, log);
  const lock = await lockDataDir(source.dataDir);
  try {
    const database = await openMigratedDatabase(source, log);
    try {
      const execute = (command: string[]) => parseCommand(command).run(database.db);
      const control = await serveControlSocket(controlSocketPath(source.dataDir), execute, log);
      return {
        ...database,
        close: async () => {
          await control.close();
          await database.close();
          await lock.release();
        },
      };
    } catch (error) {
      await database.close();
      throw error;
    }
  } catch (error) {
    await lock.release();
    throw error;
  }
}

export async function startServer(
  config: Config,
  options: { database?: DatabaseSource; log?: Logger } = {},
): Promise<RunningServer> {
  const log = options.log ?? createLogger(config.logLevel);
  const database = await openServerDatabase(options.database ?? databaseSourceFor(config), log);
  let tokens: RecipientTokens;
  try {
    tokens = new RecipientTokens(await loadSecret(config.secret, config.dataDir));
  } catch (error) {
    await database.close();
    throw error;
  }
  const deps: AppDeps = { db: database.db, dbKind: database.kind, config, log, rateLimiter: new RateLimiter(), tokens };
  const app = createApp(deps);
  const http = createAdaptorServer({ fetch: app.fetch }) as Server;
  // Keep-alive sockets would otherwise hold a graceful close open until they time out.
  http.keepAliveTimeout = 5_000;

  try {
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(config.port, config.host, () => resolve());
    });
  } catch (error) {
    await database.close();
    throw error;
  }
  const { port } = http.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  log.info('listening', { url: `http://${host}:${port}`, database: database.kind });
  let inbound: InboundListener | null = null;
  if (config.role !== 'api' && config.inboundSmtpPort !== null) {
    try {
      inbound = await startInboundSmtp(deps, { host: config.inboundSmtpHost, port: config.inboundSmtpPort });
    } catch (error) {
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await database.close();
      throw new Error(`The inbound SMTP listener could not start on ${config.inboundSmtpHost}:${config.inboundSmtpPort} (INBOUND_SMTP_PORT): ${(error as Error).message}`);
    }
  }
  const domainWorker = config.role === 'api' ? null : startDomainWorker(deps);
  const dispatcher = config.role === 'api' ? null : startDispatcher(deps);
  const releaser = config.role === 'api' ? null : startReleaser(deps);

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    inboundPort: inbound?.port ?? null,
    deps,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          http.close(() => resolve());
          http.closeIdleConnections();
        });
        await inbound?.close();
        await domainWorker?.stop();
        await releaser?.stop();
        await dispatcher?.stop();
        await database.close();
      })()),
  };
}
