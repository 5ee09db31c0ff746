import { setTimeout as delay } from 'node:timers/promises';
import type { Config } from '../config.js';
import type { DatabaseSource } from '../db/connection.js';
import { DataDirLockedError, lockDataDir } from '../db/data-dir-lock.js';
import { openMigratedDatabase } from '../db/migrate.js';
import { makeDataDirPrivate } from '../db/private-dir.js';
import type { Logger } from '../log.js';
import { loadSecret } from '../secret.js';
import type { ParsedCommand } from './commands.js';
import { controlSocketPath, sendCommand } from './control-socket.js';
import { CliError } from './failure.js';

// How long the CLI waits for a process that holds the data directory to answer on its socket: a
// server still creating or migrating its database, or another CLI run finishing.
const HOLDER_WAIT_MS = 20_000;
const RETRY_EVERY_MS = 250;

/**
 * Runs a checked command where the database is: PostgreSQL directly; the embedded database
 * directly when no process holds it, else through the server that does.
 */
export async function dispatch(config: Config, argv: readonly string[], command: ParsedCommand, log: Logger) {
  if (config.databaseUrl) return runDirect(config, { url: config.databaseUrl, poolSize: 2 }, command, log);

  const socketPath = controlSocketPath(config.dataDir);
  const deadline = Date.now() + HOLDER_WAIT_MS;
  for (;;) {
    let lock;
    try {
      lock = await lockDataDir(config.dataDir);
    } catch (error) {
      if (!(error instanceof DataDirLockedError)) throw error;
      log.info('handing the command to the server holding the data directory', { pid: error.pid, socket: socketPath });
      const reply = await sendCommand(socketPath, argv);
      if (reply?.ok) return reply.result;
      if (reply) throw new CliError(reply.error.code, reply.error.error);
      if (Date.now() > deadline) {
        throw new CliError('DATA_DIR_LOCKED', `${error.message} It does not answer on ${socketPath}.`);
      }
      await delay(RETRY_EVERY_MS);
      continue;
    }
    try {
      await makeDataDirPrivate(config.dataDir, log);
      return await runDirect(config, { dataDir: config.dataDir }, command, log);
    } finally {
      await lock.release();
    }
  }
}

async function runDirect(config: Config, source: DatabaseSource, command: ParsedCommand, log: Logger) {
  const database = await openMigratedDatabase(source, log);
  try {
    return await command.run({ db: database.db, runner: 'cli', publicUrl: config.publicUrl, secret: () => loadSecret(config.secret, config.dataDir) });
  } finally {
    await database.close();
  }
}
