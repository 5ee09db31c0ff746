import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { teamRateLimiter } from '../../src/http/shared-rate-limit.js';
import { createLogger, type Logger } from '../../src/log.js';
import { startMailroom, type RunningService } from '../../src/main.js';
import { createApiKey } from '../../src/services/api-keys.js';
import { createTeam } from '../../src/services/teams.js';
import type { Permission } from '../../src/db/schema.js';
import { createTestDatabase } from './database.js';

export type TestServer = RunningService & {
  /** A new team with a full-permission key. */
  team(name?: string): Promise<{ teamId: number; apiKey: string }>;
  key(teamId: number, permission: Permission, domainId?: number): Promise<string>;
  /** Calls the API over real HTTP and returns status, headers and parsed JSON body. */
  call(method: string, path: string, options?: CallOptions): Promise<CallResult>;
  stop(): Promise<void>;
};

export type CallOptions = { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> };
export type CallResult = { status: number; headers: Headers; body: any };

/**
 * Starts the real server on a loopback port with a fresh database of this run's kind; with
 * `inbound`, its bounce and feedback listener too, on a free loopback port (`inboundPort`); with
 * `submission`, its SMTP submission listeners (`submissionPort`, `submissionTlsPort`); with
 * `rateLimitClock`, its rate limiter reads the time from there (milliseconds, like Date.now).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  options: { inbound?: boolean; submission?: boolean; log?: Logger; rateLimitClock?: () => number } = {},
): Promise<TestServer> {
  const database = await createTestDatabase();
  // Its own data directory: the capture transport writes the outbox there.
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-test-'));
  const config: Config = loadConfig({
    PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', RATE_LIMIT_PER_SECOND: '100000', AUTH_FAILURES_PER_MINUTE: '1000000', DATA_DIR: dataDir, INBOUND_SMTP_PORT: '0', SMTP_SUBMISSION_PORT: '0', SMTP_SUBMISSION_TLS_PORT: '0', WEBHOOK_ALLOWED_HOSTS: '127.0.0.1,::1', ...env,
  });
  if (options.inbound) config.inboundSmtpPort = 0;
  if (options.submission) {
    config.submissionPort = 0;
    config.submissionTlsPort = 0;
  }
  const server = await startMailroom(config, { database: database.source, log: options.log ?? createLogger(config.logLevel) });
  // The app reads its limiter from deps on every request.
  if (options.rateLimitClock) server.deps.rateLimiter = teamRateLimiter(server.deps, options.rateLimitClock);
  const { db } = server.deps;
  return {
    ...server,
    team: async (name = 'Team') => createTeam({ db }, { name }),
    key: async (teamId, permission, domainId) => (await createApiKey({ db }, { teamId, permission, domainId })).apiKey,
    call: (method, path, options = {}) => call(server.url, method, path, options),
    stop: async () => {
      await server.close();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Calls `api` (as `key`, unless the caller brings its own, as a TeamFixture does) and expects 200:
 * answers the body, or fails naming the call and what came back.
 */
export async function expectOk(api: Pick<TestServer, 'call'>, key: string | undefined, method: string, path: string, body?: unknown): Promise<any> {
  const res = await api.call(method, path, key === undefined ? { body } : { key, body });
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
}

/** The API of a server at `baseUrl` (a child process, say), as tests call a TestServer's. */
export const apiAt = (baseUrl: string): Pick<TestServer, 'call'> => ({ call: (method, path, options) => call(baseUrl, method, path, options) });

export async function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  // A connection of its own: on a loaded machine a pooled one may be one the server is closing at
  // its keep-alive timeout, and the call would fail with ECONNRESET before the server saw it.
  const headers: Record<string, string> = { connection: 'close', ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(baseUrl + path, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Left as text: the assertions on it will say what came back.
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

export type WireRequest = { method: string; path: string; headers: Record<string, string>; body?: string | Uint8Array };

/**
 * Sends a request on a connection of its own (no pooling), with the headers exactly as given and
 * the body's length added: for requests a fetch would change, and for refusals that leave the
 * connection closing (a pooled client would fail its next request on it).
 */
export function sendWire(port: number, request: WireRequest): Promise<CallResult & { text: string }> {
  const headers = { ...request.headers, ...(request.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(request.body)) }) };
  return new Promise((resolve, reject) => {
    const outgoing = http.request({ host: '127.0.0.1', port, method: request.method, path: request.path, headers, agent: false }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('error', reject);
      incoming.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Left as text: the assertions on it will say what came back.
        }
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(incoming.headers)) if (value !== undefined) responseHeaders.set(name, String(value));
        resolve({ status: incoming.statusCode!, headers: responseHeaders, body, text });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}
