import { Hono } from 'hono';
import { ping } from '../db/connection.js';
import { reuseFor } from '../reuse-for.js';
import type { AppDeps } from './deps.js';
import { sendJson } from './json.js';

type Check = 'ok' | 'unavailable';

/** How long one answer of the relay stands, so a probe every second does not open a connection every second. */
const RELAY_CHECK_TTL_MS = 10_000;
const RELAY_CHECK_TIMEOUT_MS = 5_000;

function withTimeout(check: () => Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([check(), timeout]).finally(() => clearTimeout(timer));
}

/** The relay's last answer, asked again once it is older than the TTL; concurrent probes share one question. */
function cachedRelayCheck(check: () => Promise<void>, log: AppDeps['log']): () => Promise<Check> {
  return reuseFor(RELAY_CHECK_TTL_MS, () =>
    withTimeout(check, RELAY_CHECK_TIMEOUT_MS).then(
      (): Check => 'ok',
      (error: unknown): Check => {
        log.warn('the SMTP relay does not answer', { error: error instanceof Error ? error.message : error });
        return 'unavailable';
      },
    ),
  );
}

/**
 * GET /health for load balancers and orchestrators: which role this process plays, and whether
 * what it depends on answers. Without the database nothing works (503); a relay that does not
 * answer leaves the process useful (it accepts mail and retries), so that is 200 and `degraded`.
 * Details stay in the log: the endpoint needs no key, so it names no host or error.
 */
export function healthRoute(deps: Pick<AppDeps, 'db' | 'dbKind' | 'config' | 'log'>, relay: { check(): Promise<void> } | null): Hono {
  const relayCheck = relay ? cachedRelayCheck(() => relay.check(), deps.log) : null;
  const app = new Hono();
  app.get('/', async (c) => {
    const [database, relayState] = await Promise.all([
      ping(deps.db).then(
        (): Check => 'ok',
        (error: unknown): Check => {
          deps.log.error('health check: the database does not answer', { error });
          return 'unavailable';
        },
      ),
      relayCheck?.(),
    ]);
    const checks = relayState ? { database, relay: relayState } : { database };
    const status = database !== 'ok' ? 'unavailable' : relayState === 'unavailable' ? 'degraded' : 'ok';
    return sendJson(c, { status, role: deps.config.role, database: deps.dbKind, checks }, database === 'ok' ? 200 : 503);
  });
  return app;
}
