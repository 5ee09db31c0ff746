import type { Config } from '../config.js';
import type { Db, DatabaseKind } from '../db/connection.js';
import type { RecipientTokens } from '../feedback/tokens.js';
import type { Logger } from '../log.js';
import type { RateLimiter } from './rate-limit.js';

export type AppDeps = {
  db: Db;
  dbKind: DatabaseKind;
  config: Config;
  log: Logger;
  rateLimiter: RateLimiter;
  /** Signs and checks the links in mail (unsubscribe, double opt-in confirmation). */
  tokens: RecipientTokens;
};
