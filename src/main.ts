import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import { CampaignRenderer } from './campaigns/render.js';
import { startAutomationRunner, type AutomationRunner } from './automations/runner.js';
import { startReleaser, type Releaser } from './campaigns/releaser.js';
import { parseCommand, type CommandTarget } from './cli/commands.js';
import { controlSocketPath, serveControlSocket } from './cli/control-socket.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { queueStats } from './data/queue-stats.js';
import type { DatabaseHandle, DatabaseSource } from './db/connection.js';
import { lockDataDir } from './db/data-dir-lock.js';
import { openMigratedDatabase } from './db/migrate.js';
import { embeddedDatabaseExists } from './db/pglite-cluster.js';
import { makeDataDirPrivate } from './db/private-dir.js';
import { KeyVault } from './domains/key-vault.js';
import { encryptPlaintextKeys } from './domains/stored-keys.js';
import { startDomainWorker, type DomainWorker } from './domains/worker.js';
import { startInboundSmtp, type InboundListener } from './feedback/inbound-smtp.js';
import type { AppDeps } from './http/deps.js';
import { teamRateLimiter } from './http/shared-rate-limit.js';
import { createLogger, type Logger } from './log.js';
import { RecipientTokens } from './mail/tokens.js';
import { Metrics } from './metrics/metrics.js';
import { startRetention, type RetentionWorker } from './retention/worker.js';
import { loadSecret } from './secret.js';
import { startDispatcher, type Dispatcher } from './sending/dispatcher.js';
import { createTransport, type Transport } from './sending/transports/index.js';
import { measuredTransport } from './sending/transports/measured.js';
import { listenerCertificate, type Certificate } from './smtp/certificate.js';
import type { DirectTransport } from './sending/transports/direct/index.js';
import { DeliveryOutcomes, startDeliverabilityReporter } from './sending/deliverability-reporter.js';
import { startHttpServer, type HttpServer } from './server.js';
import { newRecentKeys } from './services/api-keys.js';
import { contactStatisticsRefresher } from './services/contacts.js';
import { newAcceptedMail } from './services/emails.js';
import { newRecentSenders } from './services/verified-sender.js';
import { startSubmission, type Submission } from './submission/index.js';
import { startWebhookSender, type WebhookSender } from './webhooks/sender.js';
import { startWorkerRegistry, type WorkerRegistry } from './workers/registry.js';
import { Signals } from './workers/signals.js';

export type RunningService = {
  url: string;
  port: number;
  /** The inbound SMTP listener's port; null when it is not running here. */
  inboundPort: number | null;
  /** The SMTP submission listeners' ports (STARTTLS, implicit TLS); null when not running here. */
  submissionPort: number | null;
  submissionTlsPort: number | null;
  deps: AppDeps;
  /** Stops taking requests, lets the work in flight finish, then closes the database. */
  close(): Promise<void>;
};

export function databaseSourceFor(config: Config): DatabaseSource {
  return config.databaseUrl ? { url: config.databaseUrl } : { dataDir: config.dataDir };
}

/**
 * The service's database. The embedded one also holds the data-directory lock (PGlite allows one
 * process per directory) and serves the CLI's commands on the control socket, since the CLI
 * cannot open the directory itself meanwhile; closing the handle releases all three.
 */
async function openServiceDatabase(
  source: DatabaseSource,
  commands: Pick<Extract<CommandTarget, { runner: 'server' }>, 'publicUrl' | 'recentKeys' | 'secret'>,
  log: Logger,
): Promise<DatabaseHandle> {
  if (!('dataDir' in source)) return openMigratedDatabase(source, log);
  const lock = await lockDataDir(source.dataDir);
  try {
    // Said before the wait, which on a first start is seconds of silence otherwise.
    if (embeddedDatabaseExists(source.dataDir)) log.info(`opening the embedded database in ${source.dataDir}`);
    else log.info(`creating the embedded database in ${source.dataDir} (first start: up to 10 s)`);
    const database = await openMigratedDatabase(source, log);
    try {
      const execute = (command: string[]) => parseCommand(command).run({ ...commands, db: database.db, runner: 'server' });
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

/** What a running process has open, closed in this order: entrances first, the database last. */
type Parts = {
  http?: HttpServer;
  submission?: Submission;
  inbound?: InboundListener;
  domainWorker?: DomainWorker;
  releaser?: Releaser;
  automationRunner?: AutomationRunner;
  dispatcher?: Dispatcher;
  deliverability?: { stop(): Promise<void> };
  webhookSender?: WebhookSender;
  retention?: RetentionWorker;
  workers?: WorkerRegistry;
  database?: DatabaseHandle;
};

async function closeParts(parts: Parts): Promise<void> {
  await parts.http?.close();
  await parts.submission?.close();
  await parts.inbound?.close();
  await parts.domainWorker?.stop();
  await parts.releaser?.stop();
  await parts.automationRunner?.stop();
  await parts.dispatcher?.stop();
  await parts.deliverability?.stop();
  await parts.webhookSender?.stop();
  await parts.retention?.stop();
  // Last of the workers: it marks this one stopped, so what it still holds is taken over at once.
  await parts.workers?.stop();
  await parts.database?.close();
}

/**
 * Starts Mailroom: the database (migrated); unless ROLE=worker, the HTTP API, its pages and SMTP
 * submission; unless ROLE=api, the inbound SMTP listener and the workers (domain checks, campaign
 * release, automation runs, dispatch, webhook calls, retention); on every role /health. All share one set of
 * dependencies and one set of signals.
 */
export async function startMailroom(
  config: Config,
  options: { database?: DatabaseSource; log?: Logger; transport?: Transport } = {},
): Promise<RunningService> {
  const log = options.log ?? createLogger(config.logLevel);
  const parts: Parts = {};
  try {
    await makeDataDirPrivate(config.dataDir, log);
    // Made before the database opens: a key the CLI revokes through the control socket is forgotten here at once.
    const recentKeys = newRecentKeys();
    const database = (parts.database = await openServiceDatabase(options.database ?? databaseSourceFor(config), { publicUrl: config.publicUrl, recentKeys, secret: () => loadSecret(config.secret, config.dataDir) }, log));
    const secret = await loadSecret(config.secret, config.dataDir);
    const tokens = new RecipientTokens(secret);
    const keyVault = new KeyVault(secret);
    const encrypted = await encryptPlaintextKeys(database.db, keyVault);
    if (encrypted > 0) log.info('DKIM private keys stored in plain text by an earlier version were encrypted', { count: encrypted });
    const deps: AppDeps = {
      db: database.db, dbKind: database.kind, config, log, tokens, keyVault, signals: new Signals(),
      metrics: new Metrics({ queue: () => queueStats(database.db, new Date()), poolInUse: database.inUse }),
      clock: () => new Date(),
      rateLimiter: teamRateLimiter({ db: database.db, dbKind: database.kind, log }),
      recentKeys,
      recentSenders: newRecentSenders(),
      acceptedMail: newAcceptedMail(database.db, database.kind),
      refreshContactStatistics: contactStatisticsRefresher(database.db, log),
    };
    const outcomes = new DeliveryOutcomes(deps.metrics);
    // Made before the port opens, so /health can ask the relay from the first request on. Direct
    // delivery's pauses and rates go by the dispatcher's clock (deps.clock, which a test may move).
    const made = config.role === 'api' ? null : (options.transport ?? createTransport(config, { onOutcome: outcomes.count, now: () => deps.clock().getTime() }));
    const transport = made && measuredTransport(made, deps.metrics);
    const http = (parts.http = await startHttpServer(deps, { api: config.role !== 'worker', relay: transport }));
    log.info('listening', { url: http.url, database: database.kind, role: config.role });
    // One certificate for both SMTP listeners, read (or made) once, when the first of them starts.
    let certificate: Promise<Certificate> | undefined;
    const certificateOf = () => (certificate ??= listenerCertificate(config, log));
    if (config.role !== 'worker') parts.submission = await startSubmission(deps, certificateOf);
    if (transport) {
      if (config.inboundSmtpPort !== null) {
        try {
          parts.inbound = await startInboundSmtp(deps, { host: config.inboundSmtpHost, port: config.inboundSmtpPort, certificate: await certificateOf() });
        } catch (error) {
          throw new Error(`The inbound SMTP listener could not start on ${config.inboundSmtpHost}:${config.inboundSmtpPort} (INBOUND_SMTP_PORT): ${(error as Error).message}`);
        }
      }
      const claims = (parts.workers = await startWorkerRegistry(deps));
      parts.domainWorker = startDomainWorker(deps, { claims });
      const campaigns = new CampaignRenderer(database.db, config, tokens);
      parts.dispatcher = startDispatcher(deps, { transport, campaigns, claims });
      if (made?.name === 'direct') {
        const destinations = (made as DirectTransport).destinations;
        deps.metrics.watchDirectQueues(destinations);
        parts.deliverability = startDeliverabilityReporter(deps, { outcomes, destinations, workerId: claims.id });
      }
      parts.releaser = startReleaser(deps);
      parts.automationRunner = startAutomationRunner(deps);
      parts.webhookSender = startWebhookSender(deps, { claims });
      parts.retention = startRetention(deps);
    }
    let closing: Promise<void> | undefined;
    return {
      url: http.url,
      port: http.port,
      inboundPort: parts.inbound?.port ?? null,
      submissionPort: parts.submission?.port ?? null,
      submissionTlsPort: parts.submission?.tlsPort ?? null,
      deps,
      close: () => (closing ??= closeParts(parts)),
    };
  } catch (error) {
    await closeParts(parts);
    throw error;
  }
}

/**
 * How far V8 lets the old generation grow past what was live at its last full collection before
 * collecting it again, for the whole process. Left to V8 the factor reaches 4: sending at full
 * speed promotes each claimed batch's rows and messages (they outlive two young collections), and
 * a process whose live data is ~50 MB let ~150 MB of them pile up, most of what its RSS grew by.
 * At 2, measured on a 100,000-contact campaign, an automation's send step and a campaign with a
 * webhook on (BENCHMARKS.md), the peaks fell by 35 to 110 MB and the rates did not move: a full
 * collection marks what is live, about the same however much garbage lies beside it, and does
 * most of it on threads of its own. Set at run time rather than on node's command line, which
 * refuses a flag that its V8 no longer knows.
 */
export function limitHeapGrowth(): void {
  v8.setFlagsFromString('--heap-growing-percent=100');
}

/** Every port the process listens on, in one line, for whoever just typed `npm start`. */
function readyLine(service: RunningService, config: Config): string {
  const listening = [`HTTP on ${service.url}`];
  if (service.submissionPort !== null) listening.push(`SMTP submission on ${config.submissionHost}:${service.submissionPort} (STARTTLS)`);
  if (service.submissionTlsPort !== null) listening.push(`SMTP submission on ${config.submissionHost}:${service.submissionTlsPort} (TLS)`);
  if (service.inboundPort !== null) listening.push(`inbound SMTP (routed mail, bounces, complaints) on ${config.inboundSmtpHost}:${service.inboundPort}`);
  return `ready: ${listening.join(', ')}`;
}

/** The process: configuration from the environment, a start, and a graceful stop on SIGTERM or SIGINT. */
async function run(): Promise<void> {
  limitHeapGrowth();
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  const log = createLogger(config.logLevel);
  const starting = startMailroom(config, { log });
  // Listened for from the start: a stop asked for while the workers are still starting waits for
  // them, then closes everything, instead of killing the process half-started.
  const shutdown = (signal: string) => {
    log.info('shutting down', { signal });
    // What is still claimed then is taken over by another worker within seconds (PostgreSQL) or
    // let go at the next start (the embedded database): cut short, a drain loses nothing.
    setTimeout(() => {
      log.error('shutdown did not finish within SHUTDOWN_TIMEOUT_MS; exiting with work still claimed', { timeoutMs: config.shutdownTimeoutMs });
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    starting.then((service) => service.close()).then(
      () => process.exit(0),
      (error: unknown) => {
        log.error('shutdown failed', { error });
        process.exit(1);
      },
    );
  };
  // Ctrl-C on `npm start` reaches the service twice, from the terminal and passed on by npm: a
  // repeat must not cut the drain short (SHUTDOWN_TIMEOUT_MS bounds it).
  let stopping = false;
  const onSignal = (signal: string) => {
    if (stopping) return log.info('already shutting down', { signal });
    stopping = true;
    shutdown(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    log.info(readyLine(await starting, config));
  } catch (error) {
    log.error('failed to start', { error: error instanceof Error ? error.message : error });
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await run();
