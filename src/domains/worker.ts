import type { Resolver } from 'node:dns/promises';
import * as domains from '../data/domains.js';
import type { Deps } from '../deps.js';
import { reportDomainChange } from '../events/domains.js';
import { startWorkerLoop } from '../workers/loop.js';
import { ownClaims, type Claims } from '../workers/registry.js';
import { createDnsResolver, evaluateCheck, lookUpRecords } from './checker.js';

export type DomainWorkerDeps = Pick<Deps, 'db' | 'config' | 'log' | 'signals'>;
export type DomainWorker = { stop(): Promise<void> };

const BATCH = 20;
// Far longer than the slowest check (every lookup timing out on every server), so a lease only
// runs out when its worker died mid-check; another worker then checks the domain again.
const LEASE_MS = 120_000;

/**
 * Polls for domains whose check is due (verification with backoff, daily re-checks) and checks
 * them; a domainCheckDue signal has a domain checked at once (the service has already made it due,
 * so a worker of another process claims it on its next poll).
 */
export function startDomainWorker(deps: DomainWorkerDeps, options: { claims?: Claims } = {}): DomainWorker {
  const claims = options.claims ?? ownClaims();
  const resolver = createDnsResolver(deps.config);
  const claimAndCheck = async (limit: number, id?: number) => {
    const now = new Date();
    const claimed = await domains.claimDueDomains(deps.db, {
      now, leaseUntil: new Date(now.getTime() + LEASE_MS), token: claims.token(), limit, id, silent: claims.silent(),
    });
    await Promise.all(claimed.map((domain) => checkClaimed(deps, resolver, domain)));
    return claimed.length;
  };
  const loop = startWorkerLoop({
    // A full batch means more may be due: go on at once.
    pass: async () => (await claimAndCheck(BATCH)) === BATCH,
    pollMs: deps.config.domainWorkerPollMs,
    onError: (error) => deps.log.error('domain check poll failed', { error }),
  });

  // The requested domain alone, beside the passes: it is checked now even when many others are due.
  const unsubscribe = deps.signals.on('domainCheckDue', (domainId) => {
    void loop.track(claimAndCheck(1, domainId).then(
      () => undefined,
      (error: unknown) => deps.log.error('domain check failed', { error, domainId }),
    ));
  });

  return {
    async stop() {
      unsubscribe();
      await loop.stop();
    },
  };
}

async function checkClaimed(deps: DomainWorkerDeps, resolver: Resolver, domain: domains.ClaimedDomain) {
  try {
    const findings = await lookUpRecords(
      resolver,
      { name: domain.name, subdomain: domain.subdomain, dkimSelector: domain.dkim_selector, dkimPublicKey: domain.dkim_public_key },
      deps.config,
    );
    const outcome = evaluateCheck(
      { status: domain.status, verificationStartedAt: domain.verification_started_at, checkAttempts: domain.check_attempts },
      findings,
      new Date(),
      deps.config,
    );
    const written = await deps.db.transaction().execute(async (tx) => {
      const before = await domains.findClaimedDomain(tx, domain.id, domain.claim_token);
      const after = before && (await domains.recordCheck(tx, domain.id, domain.claim_token, outcome));
      if (after) await reportDomainChange(tx, before!, after, outcome.lastCheckedAt);
      return after !== undefined;
    });
    const fields = { domainId: domain.id, teamId: domain.team_id, name: domain.name, status: outcome.status };
    if (!written) deps.log.debug('domain check superseded by a newer one', fields);
    else if (outcome.status !== domain.status) deps.log.info('domain status changed', { ...fields, from: domain.status, verificationError: outcome.verificationError });
    else deps.log.debug('domain checked', fields);
  } catch (error) {
    // The claim stays until its lease runs out; the domain is checked again then.
    deps.log.error('domain check failed', { error, domainId: domain.id });
  }
}
