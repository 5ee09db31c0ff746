import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './log.js';
import { startServer } from './server.js';

let config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(2);
}
const log = createLogger(config.logLevel);

try {
  const server = await startServer(config, { log });
  const shutdown = (signal: string) => {
    log.info('shutting down', { signal });
    server.close().then(
      () => process.exit(0),
      (error) => {
        log.error('shutdown failed', { error });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
} catch (error) {
  log.error('failed to start', { error: error instanceof Error ? error.message : error });
  process.exit(1);
}
