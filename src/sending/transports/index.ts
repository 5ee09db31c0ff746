import path from 'node:path';
import type { Config } from '../../config.js';
import { captureTransport } from './capture.js';
import { directTransport, type DirectOptions } from './direct/index.js';
import { smtpTransport } from './smtp.js';
import type { Transport } from './types.js';

export type { DeliveryResult, Feedback, RecipientResult, SendContext, Transport } from './types.js';

/** The relay when SMTP_URL names one; straight to the recipients' servers with `direct`; the capture transport otherwise. */
export function createTransport(config: Config, direct: DirectOptions = {}): Transport {
  if (!config.smtpUrl) return captureTransport(path.join(config.dataDir, 'outbox'));
  if (config.smtpUrl === 'direct') return directTransport(config, direct);
  return smtpTransport({
    url: config.smtpUrl,
    poolSize: config.smtpPoolSize,
    maxMessagesPerConnection: config.smtpMaxMessagesPerConnection,
    timeoutMs: config.smtpTimeoutMs,
  });
}

/** The transport createTransport makes of this configuration: what the entrances go by, as an API-only process makes none. */
export const transportOf = (config: Pick<Config, 'smtpUrl'>): Transport['name'] => (!config.smtpUrl ? 'capture' : config.smtpUrl === 'direct' ? 'direct' : 'smtp');
