import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/connection.js';
import type { DomainStatus, DomainsTable } from '../db/schema.js';
import { claimIsFree } from './workers.js';

// Everything a response may show: never the private key, never the worker's lease.
const COLUMNS = [
  'id', 'team_id', 'name', 'region', 'status', 'subdomain', 'dkim_selector', 'dkim_public_key',
  'click_tracking', 'open_tracking', 'dkim_status', 'spf_status', 'mx_status', 'dmarc_status', 'is_verifying',
  'last_checked_at', 'verification_error', 'error_message', 'created_at', 'updated_at', 'ip_pool', 'warmup_daily_limits',
] as const;
// A date read as its text (YYYY-MM-DD): the two database clients would make different Dates of it.
const WARMUP_STARTED_ON = sql<string | null>`to_char(warmup_started_on, 'YYYY-MM-DD')`.as('warmup_started_on');
const PUBLIC_COLUMNS = [...COLUMNS, WARMUP_STARTED_ON] as const;

export type DomainRow = Pick<Selectable<DomainsTable>, (typeof COLUMNS)[number]> & { warmup_started_on: string | null };

const CLAIMED_COLUMNS = [
  'id', 'team_id', 'name', 'subdomain', 'dkim_selector', 'dkim_public_key', 'status',
  'verification_started_at', 'check_attempts', 'claim_token',
] as const;

export type ClaimedDomain = Pick<Selectable<DomainsTable>, (typeof CLAIMED_COLUMNS)[number]> & { claim_token: string };

/** A domain of the team, by id or by name: its id, name and status. */
export async function findDomainSummary(db: Db, teamId: number, key: { id: number } | { name: string }) {
  const query = db.selectFrom('domains').select(['id', 'name', 'status']).where('team_id', '=', teamId);
  return ('id' in key ? query.where('id', '=', key.id) : query.where('name', '=', key.name)).executeTakeFirst();
}

/**
 * The domain mail to a person of `teamId` is sent from when SYSTEM_FROM names `name`: the team's
 * own, else the oldest of any team; only a verified one (or a sandbox domain, verified by construction).
 */
export async function findSystemSender(db: Db, name: string, teamId: number) {
  return db
    .selectFrom('domains')
    .select(['team_id', 'id', 'name'])
    .where('name', '=', name)
    .where('status', '=', 'SUCCESS')
    .orderBy(sql`team_id = ${teamId}`, 'desc')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

/** The status of each DNS record a domain needs. */
export type RecordStatuses = { dkim: DomainStatus; spf: DomainStatus; mx: DomainStatus; dmarc: DomainStatus };

/** What one DNS check of a domain concluded, as it is stored. */
export type CheckOutcome = {
  status: DomainStatus;
  records: RecordStatuses;
  isVerifying: boolean;
  verificationError: string | null;
  errorMessage: string | null;
  lastCheckedAt: Date;
  verificationStartedAt: Date | null;
  nextCheckAt: Date | null;
  checkAttempts: number;
};

export type NewDomain = {
  teamId: number;
  name: string;
  subdomain: string | null;
  region: string;
  dkimSelector: string;
  /** The private key as the key vault sealed it, and the base64 public key. */
  key: { sealedPrivateKey: string; publicKey: string };
  /** Set when verification starts at creation. */
  verifyFrom: Date | null;
  /** Verified as it is made, every record SUCCESS, and never checked (the sandbox domain). */
  verified?: true;
};

const VERIFIED = { status: 'SUCCESS', dkim_status: 'SUCCESS', spf_status: 'SUCCESS', mx_status: 'SUCCESS', dmarc_status: 'SUCCESS' } as const;

/** Undefined when the team already has a domain of that name. */
export async function insertDomain(db: Db, domain: NewDomain): Promise<DomainRow | undefined> {
  return db
    .insertInto('domains')
    .values({
      team_id: domain.teamId,
      name: domain.name,
      subdomain: domain.subdomain,
      region: domain.region,
      dkim_selector: domain.dkimSelector,
      dkim_private_key: domain.key.sealedPrivateKey,
      dkim_public_key: domain.key.publicKey,
      verification_started_at: domain.verifyFrom,
      next_check_at: domain.verifyFrom,
      is_verifying: domain.verifyFrom !== null,
      ...(domain.verified && VERIFIED),
    })
    .onConflict((oc) => oc.columns(['team_id', 'name']).doNothing())
    .returning(PUBLIC_COLUMNS)
    .executeTakeFirst();
}

/** The team's domains, or only `onlyId` of them. */
export async function listDomains(db: Db, teamId: number, onlyId: number | null): Promise<DomainRow[]> {
  let query = db.selectFrom('domains').select(PUBLIC_COLUMNS).where('team_id', '=', teamId);
  if (onlyId !== null) query = query.where('id', '=', onlyId);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

export async function findDomainNamed(db: Db, teamId: number, name: string): Promise<DomainRow | undefined> {
  return db.selectFrom('domains').select(PUBLIC_COLUMNS).where('team_id', '=', teamId).where('name', '=', name).executeTakeFirst();
}

export async function findDomain(db: Db, teamId: number, id: number, forUpdate = false): Promise<DomainRow | undefined> {
  let query = db.selectFrom('domains').select(PUBLIC_COLUMNS).where('team_id', '=', teamId).where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** What PATCH /v1/domains/{id} may change; `warmup` null turns warm-up off. */
export type DomainChanges = {
  openTracking?: boolean;
  clickTracking?: boolean;
  ipPool?: string;
  warmup?: { startedOn: string; dailyLimits: number[] | null } | null;
};

export async function updateDomainSettings(db: Db, teamId: number, id: number, fields: DomainChanges): Promise<DomainRow | undefined> {
  return db
    .updateTable('domains')
    .set({
      open_tracking: fields.openTracking,
      click_tracking: fields.clickTracking,
      ip_pool: fields.ipPool,
      ...(fields.warmup !== undefined && {
        warmup_started_on: fields.warmup?.startedOn ?? null,
        warmup_daily_limits: fields.warmup?.dailyLimits ?? null,
      }),
      updated_at: new Date(),
    })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returning(PUBLIC_COLUMNS)
    .executeTakeFirst();
}

/**
 * API keys scoped to the domain go with it (ON DELETE CASCADE); answers how many there were. Its
 * mail stays, without a domain, so none of it is ever sent unsigned: emails have no foreign key to
 * clear it (emails_team_domain_created).
 */
export async function deleteDomain(db: Db, teamId: number, id: number): Promise<number> {
  const { keys } = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number>().as('keys'))
    .where('team_id', '=', teamId)
    .where('domain_id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  await db.deleteFrom('domains').where('team_id', '=', teamId).where('id', '=', id).execute();
  await db.updateTable('emails').set({ domain_id: null }).where('team_id', '=', teamId).where('domain_id', '=', id).execute();
  return Number(keys);
}

/**
 * Plans a check at once and drops any claim, so a check already under way cannot overwrite what
 * this one finds. `restart` also opens a new verification window with every record pending.
 * Answers the domain as it left it.
 */
export async function scheduleCheckNow(db: Db, teamId: number, id: number, now: Date, restart: boolean): Promise<DomainRow> {
  const pending = 'PENDING' as const;
  return db
    .updateTable('domains')
    .set({
      next_check_at: now,
      is_verifying: true,
      claim_token: null,
      claimed_until: null,
      updated_at: now,
      ...(restart && {
        status: pending,
        dkim_status: pending,
        spf_status: pending,
        mx_status: pending,
        dmarc_status: pending,
        error_message: null,
        verification_started_at: now,
        check_attempts: 0,
      }),
    })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returning(PUBLIC_COLUMNS)
    .executeTakeFirstOrThrow();
}

/**
 * Claims domains whose check is due, for `leaseUntil`. One statement, so no transaction stays open
 * across the DNS lookups; SKIP LOCKED lets any number of workers claim side by side.
 * Uses domains_next_check.
 */
export async function claimDueDomains(
  db: Db,
  claim: { now: Date; leaseUntil: Date; token: string; limit: number; id?: number; silent: readonly string[] },
): Promise<ClaimedDomain[]> {
  return (await db
    .updateTable('domains')
    .set({ claim_token: claim.token, claimed_until: claim.leaseUntil, is_verifying: true })
    .where('id', 'in', (eb) => {
      let due = eb
        .selectFrom('domains')
        .select('id')
        .where('next_check_at', '<=', claim.now)
        .where(claimIsFree(sql.ref('claim_token'), sql.ref('claimed_until'), claim.now, claim.silent));
      if (claim.id !== undefined) due = due.where('id', '=', claim.id);
      return due.orderBy('next_check_at').limit(claim.limit).forUpdate().skipLocked();
    })
    .returning(CLAIMED_COLUMNS)
    .execute()) as ClaimedDomain[];
}

/** The domain a check claimed, locked, while its claim holds. */
export async function findClaimedDomain(db: Db, id: number, claimToken: string): Promise<DomainRow | undefined> {
  return db.selectFrom('domains').select(PUBLIC_COLUMNS).where('id', '=', id).where('claim_token', '=', claimToken).forUpdate().executeTakeFirst();
}

/** Writes a check's outcome unless the claim was superseded; answers the domain as it left it, if written. */
export async function recordCheck(db: Db, id: number, claimToken: string, outcome: CheckOutcome): Promise<DomainRow | undefined> {
  return db
    .updateTable('domains')
    .set({
      status: outcome.status,
      dkim_status: outcome.records.dkim,
      spf_status: outcome.records.spf,
      mx_status: outcome.records.mx,
      dmarc_status: outcome.records.dmarc,
      is_verifying: outcome.isVerifying,
      verification_error: outcome.verificationError,
      error_message: outcome.errorMessage,
      last_checked_at: outcome.lastCheckedAt,
      verification_started_at: outcome.verificationStartedAt,
      next_check_at: outcome.nextCheckAt,
      check_attempts: outcome.checkAttempts,
      claim_token: null,
      claimed_until: null,
      updated_at: outcome.lastCheckedAt,
    })
    .where('id', '=', id)
    .where('claim_token', '=', claimToken)
    .returning(PUBLIC_COLUMNS)
    .executeTakeFirst();
}

/** What sending needs of a domain: its signing key, tracking settings, IP pool and warm-up. */
export async function findSendingDomain(db: Db, teamId: number, id: number) {
  return db
    .selectFrom('domains')
    .select(['name', 'dkim_selector', 'dkim_private_key', 'open_tracking', 'click_tracking', 'ip_pool', 'warmup_daily_limits', WARMUP_STARTED_ON])
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Whether any team has a domain of this name (domains_name). */
export async function domainNameExists(db: Db, name: string): Promise<boolean> {
  return (await db.selectFrom('domains').select('id').where('name', '=', name).limit(1).executeTakeFirst()) !== undefined;
}

/**
 * Every domain's stored signing key, or only those whose stored text starts with `prefix`, locked
 * until the transaction ends. In id order, so two processes locking them at once cannot deadlock.
 */
export async function lockSigningKeys(db: Db, prefix?: string) {
  let query = db.selectFrom('domains').select(['id', 'name', 'dkim_private_key']);
  if (prefix !== undefined) query = query.where(sql<boolean>`starts_with(dkim_private_key, ${prefix})`);
  return query.orderBy('id').forUpdate().execute();
}

export async function storeSigningKey(db: Db, id: number, stored: string): Promise<void> {
  await db.updateTable('domains').set({ dkim_private_key: stored }).where('id', '=', id).execute();
}
