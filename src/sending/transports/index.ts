import path from 'node:path';
import type { Config } from '../../config.js';
import { captureTransport } from './capture.js';
import { smtpTransport } from './smtp.js';
import type { Transport } from './types.js';

export type { DeliveryResult, Feedback, Transport } from './types.js';

/** SMTP when SMTP_URL is set; the capture transport otherwise. */
export function createTransport(config: Config): Transport {
  if (!config.smtpUrl) return captureTransport(path.join(config.dataDir, 'outbox'));
  return smtpTransport({
    url: config.smtpUrl,
    poolSize: config.smtpPoolSize,
    maxMessagesPerConnection: config.smtpMaxMessagesPerConnection,
    timeoutMs: config.smtpTimeoutMs,
  });
}

/** The transport createTransport makes of this configuration: what the entrances go by, as an API-only process makes none. */
export const transportOf = (config: Pick<Config, 'smtpUrl'>): Transport['name'] => (config.smtpUrl ? 'smtp' : 'capture');
