import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { domainToASCII } from 'node:url';
import { z } from 'zod';

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
const hours = (fallback: number) => z.coerce.number().positive().max(24 * 366).default(fallback);

// Operator-given names may be one label (`localhost`) and may start with `_` (`_spf.example.com`).
const OPERATOR_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
const hostName = z.string().transform((value, ctx) => {
  const ascii = domainToASCII(value.trim());
  if (!ascii || ascii.length > 253 || !ascii.split('.').every((label) => OPERATOR_LABEL.test(label))) {
    ctx.addIssue({ code: 'custom', message: 'must be a DNS host name' });
    return z.NEVER;
  }
  return ascii;
});

const list = (value: string) => value.split(',').map((item) => item.trim()).filter(Boolean);

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** `ip`, `ip:port`, `[ipv6]` or `[ipv6]:port`, as node:dns setServers takes them. */
function isDnsServer(entry: string): boolean {
  const match = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry) ?? /^([^:]+)(?::(\d{1,5}))?$/.exec(entry);
  if (!match) return isIP(entry) === 6;
  return isIP(match[1]!) !== 0 && (match[2] === undefined || (Number(match[2]) >= 1 && Number(match[2]) <= 65535));
}

/** A host name, an IP address or a CIDR range (`10.0.0.0/8`, `fd00::/8`), as WEBHOOK_ALLOWED_HOSTS lists them. */
function isAllowEntry(entry: string): boolean {
  const [address, bits, ...rest] = entry.split('/');
  if (rest.length > 0) return false;
  const family = isIP(address!.replace(/^\[|\]$/g, ''));
  if (bits !== undefined) return family !== 0 && /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
  return family !== 0 || hostName.safeParse(entry).success;
}

/** A port (`443`) or a range of ports (`1024-65535`), as WEBHOOK_ALLOWED_PORTS lists them. */
export function portRange(entry: string): [number, number] | null {
  const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(entry);
  if (!match) return null;
  const low = Number(match[1]);
  const high = Number(match[2] ?? match[1]);
  return low >= 1 && low <= high && high <= 65535 ? [low, high] : null;
}

/** One destination's limits, as DELIVERY_POLICY_FILE gives them. */
const destinationPolicy = z.strictObject({
  maxConnections: z.number().int().min(1).max(1000).optional(),
  messagesPerConnection: z.number().int().min(1).max(100_000).optional(),
  perMinute: z.number().int().min(1).max(10_000_000).optional(),
});
export type DestinationPolicy = z.infer<typeof destinationPolicy>;

/** DELIVERY_POLICY_FILE: JSON naming destinations (registrable domains of MX hosts) and their limits. */
const policyFile = z.string().transform((file, ctx) => {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `cannot read ${file} as JSON: ${(error as Error).message}` });
    return z.NEVER;
  }
  const parsed = z.record(z.string().regex(/^[a-z0-9.-]{1,253}$/, 'destinations are lower-case domain names'), destinationPolicy).safeParse(json);
  if (!parsed.success) {
    ctx.addIssue({ code: 'custom', message: `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(top)'} ${i.message}`).join('; ')}` });
    return z.NEVER;
  }
  return parsed.data;
});

/** A source address of an IP pool and the name it says HELO with (null: EHLO_NAME). */
export type PoolAddress = { address: string; ehloName: string | null };

/**
 * IP_POOLS: `name=addr[/ehlo-name],addr…;name2=…`. Every address is an IP literal that this
 * machine can bind; a pool name may be given once.
 */
const ipPools = z.string().transform((value, ctx) => {
  const pools: Record<string, PoolAddress[]> = {};
  for (const entry of value.split(';').map((part) => part.trim()).filter(Boolean)) {
    const [name, addresses = ''] = entry.split('=', 2).map((part) => part.trim()) as [string, string?];
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name) || name in pools) {
      ctx.addIssue({ code: 'custom', message: `"${name}" is not a pool name (letters, digits, _ and -), or is given twice` });
      return z.NEVER;
    }
    const members = list(addresses).map((member) => {
      const [address = '', ehlo] = member.split('/', 2);
      return { address: address.replace(/^\[|\]$/g, ''), ehlo };
    });
    const bad = members.find((m) => isIP(m.address) === 0 || (m.ehlo !== undefined && !hostName.safeParse(m.ehlo).success));
    if (members.length === 0 || bad) {
      ctx.addIssue({ code: 'custom', message: `pool ${name} must list IP addresses, each optionally /its-helo-name${bad ? ` (not: ${bad.address}${bad.ehlo ? `/${bad.ehlo}` : ''})` : ''}` });
      return z.NEVER;
    }
    pools[name] = members.map((m) => ({ address: m.address, ehloName: m.ehlo === undefined ? null : hostName.parse(m.ehlo) }));
  }
  return pools;
});

/** SECRET, and the new secret `secret rotate` takes. */
export const secretSchema = z.string().min(16, 'must be at least 16 characters');

const envSchema = z.object({
  PORT: port(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  SECRET: secretSchema.optional(),
  ROLE: z.enum(['all', 'api', 'worker']).default('all'),
  RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(1).max(1_000_000).default(20),
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(30),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(10 * 1024 * 1024),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  DNS_SERVERS: z
    .string()
    .transform(list)
    .refine((servers) => servers.every(isDnsServer), 'must be a comma-separated list of ip[:port] (IPv6 as [ip]:port)')
    .optional(),
  DNS_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(3000),
  RETURN_PATH_SUBDOMAIN: hostName.default('mail'),
  SYSTEM_FROM: z
    .string()
    .trim()
    .regex(/^([^<>]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/, 'must be an address, optionally with a name: "Mailroom <no-reply@example.com>"')
    .optional(),
  INBOUND_MX_HOST: hostName.optional(),
  SPF_INCLUDE: hostName.optional(),
  INBOUND_SMTP_PORT: port(2525),
  INBOUND_SMTP_HOST: z.string().min(1).optional(),
  INBOUND_MAX_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).optional(),
  // The name INBOUND_MAX_BYTES had before the listener took mail for teams too.
  INBOUND_SMTP_MAX_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).optional(),
  REPUTATION_MAX_BOUNCE_RATE: z.coerce.number().min(0).max(100).default(5),
  REPUTATION_MAX_COMPLAINT_RATE: z.coerce.number().min(0).max(100).default(0.1),
  REPUTATION_MIN_DELIVERED: z.coerce.number().int().min(1).max(100_000_000).default(1000),
  REGIONS: z
    .string()
    .transform(list)
    .refine((regions) => regions.length > 0 && regions.every((r) => /^[A-Za-z0-9_-]{1,64}$/.test(r)), 'must be a comma-separated list of region names')
    .default(['us-east-1']),
  AUTO_VERIFY: z.stringbool().default(false),
  DOMAIN_VERIFICATION_WINDOW_HOURS: hours(72),
  DOMAIN_RECHECK_HOURS: hours(24),
  DOMAIN_WORKER_POLL_MS: z.coerce.number().int().min(10).max(3_600_000).default(5000),
  SMTP_URL: z
    .union([z.literal('direct'), z.url({ protocol: /^smtps?$/ })], { error: 'must be an smtp:// or smtps:// URL, or "direct"' })
    .optional(),
  DIRECT_MX_PORT: port(25),
  EHLO_NAME: hostName.optional(),
  DIRECT_REQUIRE_TLS: z.stringbool().default(false),
  DIRECT_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1000).default(10),
  DIRECT_MESSAGES_PER_CONNECTION: z.coerce.number().int().min(1).max(100_000).default(100),
  DIRECT_RATE_PER_MINUTE: z.coerce.number().int().min(1).max(10_000_000).optional(),
  DIRECT_TIMEOUT_SCALE: z.coerce.number().min(0.0001).max(10).default(1),
  DIRECT_BACKOFF_MS: z.coerce.number().int().min(10).max(3_600_000).default(60_000),
  DELIVERY_POLICY_FILE: policyFile.optional(),
  IP_POOLS: ipPools.optional(),
  SMTP_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(5),
  SMTP_MAX_MESSAGES_PER_CONNECTION: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  SMTP_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  SCHEDULE_TIMEZONE: z.string().refine(isTimeZone, 'must be an IANA time zone name such as UTC or Europe/Berlin').default('UTC'),
  DISPATCH_BATCH_SIZE: z.coerce.number().int().min(1).max(1000).default(500),
  DISPATCH_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  DISPATCH_POLL_MS: z.coerce.number().int().min(10).max(3_600_000).default(1000),
  DISPATCH_LEASE_SECONDS: z.coerce.number().positive().max(86_400).default(300),
  CAMPAIGN_POLL_MS: z.coerce.number().int().min(10).max(3_600_000).default(1000),
  AUTOMATION_POLL_MS: z.coerce.number().int().min(10).max(3_600_000).default(1000),
  AUTOMATION_BATCH_SIZE: z.coerce.number().int().min(1).max(10_000).default(1000),
  SEND_RETRY_WINDOW_HOURS: hours(24),
  SEND_RETRY_BASE_MS: z.coerce.number().int().min(1).max(3_600_000).default(60_000),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(1).max(3_600_000).default(5000),
  WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(8),
  WEBHOOK_AUTO_DISABLE_AFTER: z.coerce.number().int().min(1).max(1_000_000).default(30),
  WEBHOOK_ALLOWED_HOSTS: z
    .string()
    .transform(list)
    .refine((entries) => entries.every(isAllowEntry), 'must be a comma-separated list of host names, IP addresses or CIDR ranges')
    .default([]),
  WEBHOOK_ALLOWED_PORTS: z
    .string()
    .transform(list)
    .refine((entries) => entries.length > 0 && entries.every((entry) => portRange(entry) !== null), 'must be a comma-separated list of ports and ranges, such as 80,443,1024-65535')
    .default(['80', '443', '1024-65535']),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(128),
  WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(3_600_000).default(1000),
  RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  RETENTION_INTERVAL_MS: z.coerce.number().int().min(1000).max(7 * 86_400_000).default(3_600_000),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(365),
  SMTP_SUBMISSION_PORT: port(2587),
  SMTP_SUBMISSION_TLS_PORT: port(2465),
  SMTP_SUBMISSION_HOST: z.string().min(1).optional(),
  SMTP_SUBMISSION_MAX_BYTES: z.coerce.number().int().min(1024).max(1024 * 1024 * 1024).default(10 * 1024 * 1024),
  SMTP_LISTENER_SESSION_TIMEOUT_MS: z.coerce.number().int().min(1000).max(86_400_000).default(300_000),
  TLS_CERT_FILE: z.string().min(1).optional(),
  TLS_KEY_FILE: z.string().min(1).optional(),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  // What a bearer token can carry (see http/auth.ts).
  METRICS_TOKEN: z.string().regex(/^[\x21-\x7e]{16,512}$/, 'must be 16 to 512 printable ASCII characters, without spaces').optional(),
}).refine((env) => (env.TLS_CERT_FILE === undefined) === (env.TLS_KEY_FILE === undefined), {
  path: ['TLS_CERT_FILE'],
  message: 'TLS_CERT_FILE and TLS_KEY_FILE are set together or not at all',
});

export type Config = {
  port: number;
  host: string;
  publicUrl: string;
  databaseUrl: string | undefined;
  dataDir: string;
  /** Signs recipient links and encrypts DKIM keys at rest; null: the one generated once and kept in DATA_DIR/secret. */
  secret: string | null;
  role: 'all' | 'api' | 'worker';
  rateLimitPerSecond: number;
  /** Requests with a missing or wrong key one client address may make per minute before it gets 429s. */
  authFailuresPerMinute: number;
  maxBodyBytes: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** Resolvers for domain verification; empty means the system's. */
  dnsServers: string[];
  dnsTimeoutMs: number;
  returnPathSubdomain: string;
  /** The sender of the mail Mailroom sends to people of a team (invites, password resets); null: their links are only shown. */
  systemFrom: string | null;
  inboundMxHost: string;
  spfInclude: string;
  /** The bounce and feedback listener; null: not started. 0 (only set by code) takes a free port. */
  inboundSmtpPort: number | null;
  inboundSmtpHost: string;
  /** The largest message the inbound listener takes (announced in SIZE; larger ones get 552). */
  inboundMaxBytes: number;
  /** Percentages of delivered mail above which the reputation guard pauses a domain's campaigns. */
  reputationMaxBounceRate: number;
  reputationMaxComplaintRate: number;
  /** The guard judges the most recent days that add up to at least this many delivered. */
  reputationMinDelivered: number;
  regions: string[];
  /** Whether creating a domain starts its verification without a PUT .../verify. */
  autoVerify: boolean;
  domainVerificationWindowMs: number;
  domainRecheckMs: number;
  domainWorkerPollMs: number;
  /** Unset: the capture transport (.eml files under DATA_DIR/outbox); `direct`: to recipients' MX hosts. */
  smtpUrl: string | undefined;
  /** Delivery straight to recipients' mail servers (SMTP_URL=direct). */
  direct: {
    mxPort: number;
    /** The HELO name of connections from an address without a name of its own. */
    ehloName: string;
    requireTls: boolean;
    maxConnections: number;
    messagesPerConnection: number;
    ratePerMinute: number | null;
    /** Limits per destination that differ from the ones above. */
    policy: Record<string, DestinationPolicy>;
    /** Multiplies RFC 5321's timeouts (5 minutes for a reply, 10 for the end of DATA); tests shrink them. */
    timeoutScale: number;
    /** A destination that says "slow down" pauses this long, doubling each time it does again (at most 30 times). */
    backoffMs: number;
  };
  /** Source addresses by pool name; `default` is the system's choice unless named here. */
  ipPools: Record<string, PoolAddress[]>;
  smtpPoolSize: number;
  smtpMaxMessagesPerConnection: number;
  smtpTimeoutMs: number;
  /** IANA name; natural-language scheduledAt values are read in it. */
  scheduleTimeZone: string;
  dispatchBatchSize: number;
  /** Claimed batches in flight at once per process; with the batch size, the most mail a crash can send twice. */
  dispatchConcurrency: number;
  dispatchPollMs: number;
  dispatchLeaseMs: number;
  /** How often the campaign releaser looks for due batches. */
  campaignPollMs: number;
  /** How often the automation runner looks for due runs, and how many it takes in one transaction. */
  automationPollMs: number;
  automationBatchSize: number;
  /** Temporary failures are retried until this long after the email was due, then it FAILED. */
  sendRetryWindowMs: number;
  /** The first retry's delay; each next one doubles (capped at an hour), with jitter. */
  sendRetryBaseMs: number;
  /** One webhook call's limit, from connecting to the end of the response. */
  webhookTimeoutMs: number;
  /** A failed call's first retry delay; each next one is four times longer, with jitter. */
  webhookRetryBaseMs: number;
  webhookMaxAttempts: number;
  /** Calls in a row that failed every attempt before a webhook is AUTO_DISABLED. */
  webhookAutoDisableAfter: number;
  /** Destinations the address guard lets through although they are not public: hosts, IPs, CIDRs. */
  webhookAllowedHosts: string[];
  /** The ports a webhook URL may name: the well-known ports of other services are refused. */
  webhookAllowedPorts: string[];
  /** Calls in flight at once per process; one webhook takes at most half of them. */
  webhookConcurrency: number;
  webhookPollMs: number;
  /** Emails keep their bodies and attachments, and webhook calls are kept, this many days. */
  retentionDays: number;
  /** How often a worker runs retention. */
  retentionIntervalMs: number;
  /** The audit log keeps a change this many days. */
  auditRetentionDays: number;
  /** The SMTP submission listeners (STARTTLS, implicit TLS); null: not started. 0 (only set by code) takes a free port. */
  submissionPort: number | null;
  submissionTlsPort: number | null;
  submissionHost: string;
  submissionMaxBytes: number;
  /** The longest one session of the inbound and submission listeners may last; their command deadlines are shorter. */
  smtpListenerSessionTimeoutMs: number;
  /** PEM files of the submission listeners' certificate; null: a self-signed one kept in DATA_DIR. */
  tls: { certFile: string; keyFile: string } | null;
  /** How long a stop (SIGTERM) may drain before the process exits anyway, leaving its claims to be taken over. */
  shutdownTimeoutMs: number;
  /** The bearer token GET /metrics asks for; null: /metrics is off. */
  metricsToken: string | null;
};

export class ConfigError extends Error {}

/** Reads every setting once; an unset or empty variable takes its default, a bad one is named. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(
    Object.keys(envSchema.shape)
      .map((key) => [key, env[key]] as const)
      .filter(([, value]) => value !== undefined && value !== ''),
  );
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  const linkHost = e.HOST === '0.0.0.0' || e.HOST === '::' ? 'localhost' : e.HOST;
  const publicUrl = (e.PUBLIC_URL ?? `http://${linkHost.includes(':') ? `[${linkHost}]` : linkHost}:${e.PORT}`).replace(/\/+$/, '');
  const inboundMxHost = e.INBOUND_MX_HOST ?? mxHostOf(publicUrl);
  return {
    port: e.PORT,
    host: e.HOST,
    publicUrl,
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(e.DATA_DIR),
    secret: e.SECRET ?? null,
    role: e.ROLE,
    rateLimitPerSecond: e.RATE_LIMIT_PER_SECOND,
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    maxBodyBytes: e.MAX_BODY_BYTES,
    logLevel: e.LOG_LEVEL,
    dnsServers: e.DNS_SERVERS ?? [],
    dnsTimeoutMs: e.DNS_TIMEOUT_MS,
    returnPathSubdomain: e.RETURN_PATH_SUBDOMAIN,
    systemFrom: e.SYSTEM_FROM ?? null,
    inboundMxHost,
    // The conventional place for a sender's SPF policy (like _spf.google.com): the operator lists
    // the outbound IPs there once, and every customer domain includes it.
    spfInclude: e.SPF_INCLUDE ?? `_spf.${inboundMxHost}`,
    inboundSmtpPort: e.INBOUND_SMTP_PORT === 0 ? null : e.INBOUND_SMTP_PORT,
    inboundSmtpHost: e.INBOUND_SMTP_HOST ?? e.HOST,
    inboundMaxBytes: e.INBOUND_MAX_BYTES ?? e.INBOUND_SMTP_MAX_BYTES ?? 25 * 1024 * 1024,
    reputationMaxBounceRate: e.REPUTATION_MAX_BOUNCE_RATE,
    reputationMaxComplaintRate: e.REPUTATION_MAX_COMPLAINT_RATE,
    reputationMinDelivered: e.REPUTATION_MIN_DELIVERED,
    regions: e.REGIONS,
    autoVerify: e.AUTO_VERIFY,
    domainVerificationWindowMs: e.DOMAIN_VERIFICATION_WINDOW_HOURS * 3_600_000,
    domainRecheckMs: e.DOMAIN_RECHECK_HOURS * 3_600_000,
    domainWorkerPollMs: e.DOMAIN_WORKER_POLL_MS,
    smtpUrl: e.SMTP_URL,
    direct: {
      mxPort: e.DIRECT_MX_PORT,
      ehloName: e.EHLO_NAME ?? ehloNameOf(publicUrl),
      requireTls: e.DIRECT_REQUIRE_TLS,
      maxConnections: e.DIRECT_MAX_CONNECTIONS,
      messagesPerConnection: e.DIRECT_MESSAGES_PER_CONNECTION,
      ratePerMinute: e.DIRECT_RATE_PER_MINUTE ?? null,
      policy: e.DELIVERY_POLICY_FILE ?? {},
      timeoutScale: e.DIRECT_TIMEOUT_SCALE,
      backoffMs: e.DIRECT_BACKOFF_MS,
    },
    ipPools: e.IP_POOLS ?? {},
    smtpPoolSize: e.SMTP_POOL_SIZE,
    smtpMaxMessagesPerConnection: e.SMTP_MAX_MESSAGES_PER_CONNECTION,
    smtpTimeoutMs: e.SMTP_TIMEOUT_MS,
    scheduleTimeZone: e.SCHEDULE_TIMEZONE,
    dispatchBatchSize: e.DISPATCH_BATCH_SIZE,
    dispatchConcurrency: e.DISPATCH_CONCURRENCY,
    dispatchPollMs: e.DISPATCH_POLL_MS,
    dispatchLeaseMs: e.DISPATCH_LEASE_SECONDS * 1000,
    campaignPollMs: e.CAMPAIGN_POLL_MS,
    automationPollMs: e.AUTOMATION_POLL_MS,
    automationBatchSize: e.AUTOMATION_BATCH_SIZE,
    sendRetryWindowMs: e.SEND_RETRY_WINDOW_HOURS * 3_600_000,
    sendRetryBaseMs: e.SEND_RETRY_BASE_MS,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    webhookRetryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
    webhookMaxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
    webhookAutoDisableAfter: e.WEBHOOK_AUTO_DISABLE_AFTER,
    webhookAllowedHosts: e.WEBHOOK_ALLOWED_HOSTS,
    webhookAllowedPorts: e.WEBHOOK_ALLOWED_PORTS,
    webhookConcurrency: e.WEBHOOK_CONCURRENCY,
    webhookPollMs: e.WEBHOOK_POLL_MS,
    retentionDays: e.RETENTION_DAYS,
    retentionIntervalMs: e.RETENTION_INTERVAL_MS,
    auditRetentionDays: e.AUDIT_RETENTION_DAYS,
    submissionPort: e.SMTP_SUBMISSION_PORT === 0 ? null : e.SMTP_SUBMISSION_PORT,
    submissionTlsPort: e.SMTP_SUBMISSION_TLS_PORT === 0 ? null : e.SMTP_SUBMISSION_TLS_PORT,
    submissionHost: e.SMTP_SUBMISSION_HOST ?? e.HOST,
    submissionMaxBytes: e.SMTP_SUBMISSION_MAX_BYTES,
    smtpListenerSessionTimeoutMs: e.SMTP_LISTENER_SESSION_TIMEOUT_MS,
    tls: e.TLS_CERT_FILE && e.TLS_KEY_FILE ? { certFile: path.resolve(e.TLS_CERT_FILE), keyFile: path.resolve(e.TLS_KEY_FILE) } : null,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    metricsToken: e.METRICS_TOKEN ?? null,
  };
}

/** The public host's name; an IP literal says HELO as an address literal (RFC 5321 §4.1.3). */
function ehloNameOf(publicUrl: string): string {
  const host = new URL(publicUrl).hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  return family === 0 ? host : family === 4 ? `[${host}]` : `[IPv6:${host}]`;
}

/** The public host receives the bounces too; an IP literal cannot be an MX target, so then `localhost`. */
function mxHostOf(publicUrl: string): string {
  const host = new URL(publicUrl).hostname;
  return isIP(host.replace(/^\[|\]$/g, '')) ? 'localhost' : host;
}
