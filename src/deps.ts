import type { KeyObject } from 'node:crypto';
import type { Config } from './config.js';
import type { findActiveKeyByHash } from './data/api-keys.js';
import type { findDomainSummary } from './data/domains.js';
import type { NewEmail } from './data/emails.js';
import type { DatabaseKind, Db } from './db/connection.js';
import type { GroupedWrites } from './db/grouped-writes.js';
import type { Logger } from './log.js';
import type { RecipientTokens } from './mail/tokens.js';
import type { Metrics } from './metrics/metrics.js';
import type { AnswerCache } from './reuse-for.js';
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
  /** The time the dispatcher claims and schedules by, and counts warm-up days by (a test moves it to cross a day). */
  clock: () => Date;
  // What the services keep between calls, one of each per database (made by the service named).
  /** API keys read moments ago, by token hash (services/api-keys.ts newRecentKeys). */
  recentKeys: AnswerCache<string, Promise<Awaited<ReturnType<typeof findActiveKeyByHash>>>>;
  /** Sender domains read moments ago, by team and name (services/verified-sender.ts newRecentSenders). */
  recentSenders: AnswerCache<string, Promise<Awaited<ReturnType<typeof findDomainSummary>>>>;
  /** Mail accepted without an Idempotency-Key, joined across requests into one statement (services/emails.ts newAcceptedMail). */
  acceptedMail: GroupedWrites<NewEmail>;
  /** Refreshes the contact statistics, one refresh at a time (services/contacts.ts contactStatisticsRefresher). */
  refreshContactStatistics: () => Promise<void>;
};
