import path from 'node:path';
import { z } from 'zod';

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

const envSchema = z.object({
  PORT: port(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  ROLE: z.enum(['all', 'api', 'worker']).default('all'),
  RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(1).max(1_000_000).default(20),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(10 * 1024 * 1024),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
});

export type Config = {
  port: number;
  host: string;
  publicUrl: string;
  databaseUrl: string | undefined;
  dataDir: string;
  role: 'all' | 'api' | 'worker';
  rateLimitPerSecond: number;
  maxBodyBytes: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
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
  return {
    port: e.PORT,
    host: e.HOST,
    publicUrl: (e.PUBLIC_URL ?? `http://${linkHost.includes(':') ? `[${linkHost}]` : linkHost}:${e.PORT}`).replace(/\/+$/, ''),
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(e.DATA_DIR),
    role: e.ROLE,
    rateLimitPerSecond: e.RATE_LIMIT_PER_SECOND,
    maxBodyBytes: e.MAX_BODY_BYTES,
    logLevel: e.LOG_LEVEL,
  };
}
