import type { Deps } from '../deps.js';
import * as domains from '../data/domains.js';
import type { DomainRow } from '../data/domains.js';
import { generateDkimKeyPair, newDkimSelector } from '../domains/dkim.js';
import { registrableParts } from '../domains/dns-records.js';
import { SANDBOX_DOMAIN } from '../sending/sandbox.js';

export type SandboxDeps = Pick<Deps, 'db' | 'config' | 'keyVault'>;

/**
 * The team's sandbox domain, made on its first use (listed, or sent from), so that every team has
 * one, those made before it existed too, with nothing for an operator to do. It has a DKIM key of
 * its own like any domain, so its mail is signed and built exactly as real mail is. Made in
 * `deps.db`, so a transaction makes it with its own writes. Not reported as a domain.created event:
 * the team did not add it, it was always there.
 */
export async function sandboxDomain(deps: SandboxDeps, teamId: number): Promise<DomainRow> {
  const found = await domains.findDomainNamed(deps.db, teamId, SANDBOX_DOMAIN);
  if (found) return found;
  const { privateKey, publicKey } = await generateDkimKeyPair();
  const created = await domains.insertDomain(deps.db, {
    teamId,
    name: SANDBOX_DOMAIN,
    subdomain: registrableParts(SANDBOX_DOMAIN)!.subdomain,
    region: deps.config.regions[0]!,
    dkimSelector: newDkimSelector(),
    key: { sealedPrivateKey: deps.keyVault.seal(privateKey), publicKey },
    verifyFrom: null,
    verified: true,
  });
  // Undefined when a request made it meanwhile: that one is the team's.
  return created ?? (await domains.findDomainNamed(deps.db, teamId, SANDBOX_DOMAIN))!;
}
