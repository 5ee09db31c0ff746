import type { KeyObject } from 'node:crypto';
import type { Config } from './config.js';
import type { DatabaseKind, Db } from './db/connection.js';
import type { Logger } from './log.js';
import type { RecipientTokens } from './mail/tokens.js';
import type { Metrics } from './metrics/metrics.js';
import type { Signals } from './workers/signals.js';

/**
 * What the process hands to everything it starts: services, workers and entrances each take the
 * part they use (`Pick<Deps, …>`), so a test can give them just that.
 */
export type Deps = {
  db: Db;
  dbKind: DatabaseKind;
  config: Config;
  log: Logger;
  /** Signs and checks the links in mail (unsubscribe, confirmation, tracking). */
  tokens: RecipientTokens;
  /**
   * Encrypts DKIM private keys for the database and decrypts them for signing, with a key derived
   * from SECRET (`KeyVault`, domains/key-vault.ts); `domain` names the key's owner in errors.
   */
  keyVault: {
    seal(privateKey: KeyObject): string;
    open(stored: string, domain: string): KeyObject;
    /** The same for secrets used in clear again (webhook signing secrets); `what` names the owner in errors. */
    sealText(text: string): string;
    openText(stored: string, what: string): string;
  };
  /** Wakes this process's workers when a service made work due. */
  signals: Signals;
  /** This process's Prometheus metrics (GET /metrics). */
  metrics: Metrics;
};
