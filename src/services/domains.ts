import { isIP } from 'node:net';
import type { Config } from '../config.js';
import type { Deps } from '../deps.js';
import * as domains from '../data/domains.js';
import type { DomainRow } from '../data/domains.js';
import { generateDkimKeyPair, newDkimSelector } from '../domains/dkim.js';
import { audit } from '../events/audit.js';
import { reportDomainChange } from '../events/domains.js';
import { registrableParts, requiredRecords, type RecordKind } from '../domains/dns-records.js';
import { domainWarnings } from '../domains/warnings.js';
import { conflict, notFound, type ErrorDetail } from '../errors.js';
import { asciiHostname } from '../mail/address.js';
import { isSandbox } from '../sending/sandbox.js';
import { validationError } from '../validation.js';
import { assertDomainInScope, assertTeamWide, type Caller } from './caller.js';
import { sandboxDomain } from './sandbox-domain.js';
import { warmupSentOn } from '../data/warmup.js';
import { utcDay, warmupState, type WarmupState } from '../sending/warmup.js';

export type DomainDeps = Pick<Deps, 'db' | 'config' | 'signals' | 'keyVault' | 'recentKeys' | 'recentSenders' | 'clock'>;

export type Domain = ReturnType<typeof toDomain>;

function toDomain(row: DomainRow, config: Config, warmup: WarmupState) {
  const statuses: Record<RecordKind, DomainRow['status']> = {
    dkim: row.dkim_status, spf: row.spf_status, mx: row.mx_status, dmarc: row.dmarc_status,
  };
  const sandbox = isSandbox(row.name);
  // The sandbox domain needs no DNS record: it is verified by construction, and its mail never leaves.
  const records = sandbox ? [] : requiredRecords(
    { name: row.name, subdomain: row.subdomain, dkimSelector: row.dkim_selector, dkimPublicKey: row.dkim_public_key },
    config,
  );
  return {
    id: row.id,
    name: row.name,
    teamId: row.team_id,
    status: row.status,
    sandbox,
    region: row.region,
    clickTracking: row.click_tracking,
    openTracking: row.open_tracking,
    publicKey: row.dkim_public_key,
    dkimStatus: row.dkim_status,
    spfDetails: row.spf_status,
    dmarcAdded: row.dmarc_status === 'SUCCESS',
    isVerifying: row.is_verifying,
    errorMessage: row.error_message,
    subdomain: row.subdomain,
    verificationError: row.verification_error,
    lastCheckedTime: row.last_checked_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    dnsRecords: records.map((record) => ({
      type: record.type,
      name: record.name,
      value: record.value,
      ttl: 'Auto',
      priority: record.priority === null ? null : String(record.priority),
      status: statuses[record.kind],
      recommended: record.recommended,
    })),
    ipPool: row.ip_pool,
    warmup,
    // The sandbox's mail never leaves, so nothing about reaching the world concerns it.
    warnings: sandbox ? [] : domainWarnings(config),
  };
}

/** The domains as the API shows them, each warming-up one with what it has sent today. */
async function presented(deps: Pick<DomainDeps, 'db' | 'config' | 'clock'>, rows: DomainRow[]): Promise<Domain[]> {
  const today = utcDay(deps.clock());
  const warming = rows.filter((row) => row.warmup_started_on !== null);
  const sent = warming.length === 0 ? new Map<number, number>() : await warmupSentOn(deps.db, warming[0]!.team_id, warming.map((row) => row.id), today);
  return rows.map((row) =>
    toDomain(row, deps.config, warmupState({ startedOn: row.warmup_started_on, dailyLimits: row.warmup_daily_limits }, today, sent.get(row.id) ?? 0)),
  );
}

const presentedOne = async (deps: Pick<DomainDeps, 'db' | 'config' | 'clock'>, row: DomainRow) => (await presented(deps, [row]))[0]!;

const MAX_DOMAIN_ID = 2_147_483_647;
const MAX_HOST_LENGTH = 253;

/**
 * The domain id of the path. Not an integer: no such domain. A key scoped to a domain may touch
 * that one only, and is refused for every other id alike, so it learns nothing about them.
 */
function domainIdFor(caller: Caller, rawId: string): number {
  const id = /^\d{1,10}$/.test(rawId) ? Number(rawId) : NaN;
  if (!(id <= MAX_DOMAIN_ID)) throw notFound('Domain');
  assertDomainInScope(caller, id, `access domain ${rawId}`);
  return id;
}

function nameProblem(name: string): string | null {
  if (isIP(name.replace(/^\[|\]$/g, '')) !== 0) return 'must be a domain name, not an IP address';
  if (name.endsWith('.')) return 'must not end with a dot';
  return null;
}

function normalizeName(input: string, dkimSelector: string, config: Config): { name: string; subdomain: string | null } | ErrorDetail {
  const name = input.trim();
  const problem = nameProblem(name);
  const ascii = problem ? null : asciiHostname(name);
  if (!ascii) {
    return {
      path: 'name',
      message: problem ??
        `"${input}" is not a valid domain name: use letters, digits and hyphens in dot-separated labels of at most 63 characters, at most 253 in all (international names are allowed)`,
    };
  }
  if (isSandbox(ascii)) return { path: 'name', message: `${ascii} is the sandbox domain, which every team already has: send from it without adding it` };
  const parts = registrableParts(ascii);
  if (!parts) return { path: 'name', message: `${ascii} is a public suffix; register a domain under it` };
  const identity = { name: ascii, subdomain: parts.subdomain, dkimSelector, dkimPublicKey: '' };
  const tooLong = requiredRecords(identity, config).find((record) => record.host.length > MAX_HOST_LENGTH);
  if (tooLong) {
    return { path: 'name', message: `is too long: its ${tooLong.kind.toUpperCase()} record would be named ${tooLong.host.length} characters, over DNS's ${MAX_HOST_LENGTH}` };
  }
  return identity;
}

export async function createDomain(deps: DomainDeps, caller: Caller, input: { name: string; region?: string }) {
  assertTeamWide(caller, 'adding domains needs a key for the whole team');
  const { regions } = deps.config;
  const region = input.region ?? regions[0]!;
  const dkimSelector = newDkimSelector();
  const normalized = normalizeName(input.name, dkimSelector, deps.config);
  const problems: ErrorDetail[] = [];
  if ('path' in normalized) problems.push(normalized);
  if (!regions.includes(region)) problems.push({ path: 'region', message: `must be one of: ${regions.join(', ')}` });
  if ('path' in normalized || problems.length > 0) throw validationError(problems);

  const { privateKey, publicKey } = await generateDkimKeyPair();
  const row = await deps.db.transaction().execute(async (tx) => {
    const created = await domains.insertDomain(tx, {
      teamId: caller.teamId,
      name: normalized.name,
      subdomain: normalized.subdomain,
      region,
      dkimSelector,
      key: { sealedPrivateKey: deps.keyVault.seal(privateKey), publicKey },
      verifyFrom: deps.config.autoVerify ? new Date() : null,
    });
    if (created) {
      await reportDomainChange(tx, null, created, created.created_at);
      await audit(tx, caller, { action: 'domain.created', targetType: 'domain', targetId: created.id });
    }
    return created;
  });
  if (!row) throw conflict(`Domain ${normalized.name} is already registered for this team`);
  if (deps.config.autoVerify) deps.signals.emit('domainCheckDue', row.id);
  return presentedOne(deps, row);
}

/** The team's own domains, newest first, then its sandbox domain (made here when the team first looks). */
export async function listDomains(deps: DomainDeps, caller: Caller) {
  const rows = await domains.listDomains(deps.db, caller.teamId, caller.domainId);
  // A key scoped to another domain sees that one only.
  const sandbox = rows.find((row) => isSandbox(row.name)) ?? (caller.domainId === null ? await sandboxDomain(deps, caller.teamId) : undefined);
  const listed = [...rows.filter((row) => row !== sandbox), ...(sandbox ? [sandbox] : [])];
  return presented(deps, listed);
}

export async function getDomain(deps: DomainDeps, caller: Caller, { id: rawId }: { id: string }) {
  const row = await domains.findDomain(deps.db, caller.teamId, domainIdFor(caller, rawId));
  if (!row) throw notFound('Domain');
  return presentedOne(deps, row);
}

/** What PATCH /v1/domains/{id} takes. */
export type DomainUpdate = {
  openTracking?: boolean;
  clickTracking?: boolean;
  ipPool?: string;
  warmup?: { enabled: boolean; dailyLimits?: number[] };
};

export async function updateDomain(deps: DomainDeps, caller: Caller, { id: rawId, ...input }: { id: string } & DomainUpdate) {
  const id = domainIdFor(caller, rawId);
  const pools = ['default', ...Object.keys(deps.config.ipPools).filter((name) => name !== 'default')];
  if (input.ipPool !== undefined && !pools.includes(input.ipPool)) {
    throw validationError([{ path: 'ipPool', message: `must be one of the IP pools this server has (IP_POOLS): ${pools.join(', ')}` }]);
  }
  const row = await deps.db.transaction().execute(async (tx) => {
    const before = await domains.findDomain(tx, caller.teamId, id, true);
    if (!before) throw notFound('Domain');
    const { warmup, ...settings } = input;
    const after = (await domains.updateDomainSettings(tx, caller.teamId, id, { ...settings, warmup: warmup && warmupChange(before, warmup, utcDay(deps.clock())) }))!;
    await reportDomainChange(tx, before, after, after.updated_at);
    await audit(tx, caller, { action: 'domain.updated', targetType: 'domain', targetId: id });
    return after;
  });
  deps.signals.emit('domainChanged', row.id);
  return presentedOne(deps, row);
}

/**
 * Turning warm-up on starts it today (day 1), unless it is on already: then only the limits
 * change, and the ramp goes on from the day it had reached. Off forgets both.
 */
function warmupChange(before: DomainRow, warmup: NonNullable<DomainUpdate['warmup']>, today: string) {
  if (!warmup.enabled) return null;
  return { startedOn: before.warmup_started_on ?? today, dailyLimits: warmup.dailyLimits ?? (before.warmup_started_on ? before.warmup_daily_limits : null) };
}

export async function deleteDomain(deps: DomainDeps, caller: Caller, { id: rawId }: { id: string }) {
  const id = domainIdFor(caller, rawId);
  const deleted = await deps.db.transaction().execute(async (tx) => {
    const row = await domains.findDomain(tx, caller.teamId, id, true);
    if (!row) throw notFound('Domain');
    if (isSandbox(row.name)) {
      throw conflict(`Domain ${row.name} is the team's sandbox domain and cannot be deleted; its mail is only ever captured, never sent out`);
    }
    const keys = await domains.deleteDomain(tx, caller.teamId, id);
    await reportDomainChange(tx, row, null, new Date());
    await audit(tx, caller, { action: 'domain.deleted', targetType: 'domain', targetId: id });
    const withKeys = keys === 0 ? '' : `, with the ${keys} API key${keys === 1 ? '' : 's'} scoped to it`;
    return { id, success: true, message: `Domain ${row.name} deleted${withKeys}` };
  });
  deps.recentKeys.clear();
  deps.recentSenders.clear();
  deps.signals.emit('domainChanged', id);
  return deleted;
}

/**
 * Starts verification: PENDING and a check at once, then checks with backoff until the window
 * ends. A verified domain stays verified (its mail keeps flowing) and is simply re-checked now;
 * the sandbox domain has nothing to check and stays as it is.
 */
export async function verifyDomain(deps: DomainDeps, caller: Caller, { id: rawId }: { id: string }) {
  const id = domainIdFor(caller, rawId);
  const row = await deps.db.transaction().execute(async (tx) => {
    const current = await domains.findDomain(tx, caller.teamId, id, true);
    if (!current) throw notFound('Domain');
    if (isSandbox(current.name)) return current;
    const after = await domains.scheduleCheckNow(tx, caller.teamId, id, new Date(), current.status !== 'SUCCESS');
    await reportDomainChange(tx, current, after, after.updated_at);
    await audit(tx, caller, { action: 'domain.verificationRequested', targetType: 'domain', targetId: id });
    return current;
  });
  if (isSandbox(row.name)) return { message: `Domain ${row.name} is the sandbox domain: verified by construction, it has no DNS records to check` };
  deps.signals.emit('domainCheckDue', id);
  const message = row.status === 'SUCCESS'
    ? `Domain ${row.name} is verified; its DNS records are being checked again now`
    : `Verification of ${row.name} started: its DNS records are checked now, then again with backoff until the verification window ends`;
  return { message };
}
