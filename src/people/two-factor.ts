import { randomBytes } from 'node:crypto';
import * as accounts from '../data/account-security.js';
import type { Db } from '../db/connection.js';
import type { Deps } from '../deps.js';
import { conflict } from '../errors.js';
import { audit } from '../events/audit.js';
import { accountOf, checkCurrentPassword, WrongCredential, type Account, type Self } from './account.js';
import { hashToken } from './credentials.js';
import { base32Encode, looksLikeTotpCode, matchingStep, newTotpSecret, otpauthUri } from './totp.js';

type TwoFactorDeps = Pick<Deps, 'db' | 'keyVault'>;

const ISSUER = 'Mailroom';
export const RECOVERY_CODE_COUNT = 10;
// 80 random bits each: kept as a fast hash like tokens, which no offline search can undo.
const RECOVERY_CODE_BYTES = 10;

/** Ten new recovery codes, `xxxx-xxxx-xxxx-xxxx` in lower-case base32. */
function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => base32Encode(randomBytes(RECOVERY_CODE_BYTES)).toLowerCase().match(/.{4}/g)!.join('-'));
}

// Codes are read as typed or pasted: "123 456", " ABCD-efgh… ".
const withoutSpaces = (code: string) => code.replace(/\s/g, '');

/** A recovery code as typed (any case, dashes anywhere) as it is hashed. */
const recoveryCodeHash = (code: string) => hashToken(withoutSpaces(code).toLowerCase().replace(/-/g, ''));

const openSecret = (deps: Pick<Deps, 'keyVault'>, account: Account) => deps.keyVault.openText(account.totp_secret!, `The two-factor secret of ${account.email}`);

/**
 * Spends a second factor of the person, in `tx`: an authenticator code (of a time step after the
 * last one accepted) or an unused recovery code. False when it is neither.
 */
async function spendSecondFactor(tx: Db, deps: Pick<Deps, 'keyVault'>, account: Account, code: string, now: Date): Promise<boolean> {
  if (account.totp_enabled_at === null || account.totp_secret === null) return false;
  const typed = withoutSpaces(code);
  if (looksLikeTotpCode(typed)) {
    const step = matchingStep(openSecret(deps, account), typed, now);
    return step !== null && (await accounts.spendTotpStep(tx, account.id, step)) !== undefined;
  }
  return (await accounts.spendRecoveryCode(tx, account.id, recoveryCodeHash(typed), now)) !== undefined;
}

/** Spends the code in `tx`, or refuses it (WrongCredential on `code`). */
export async function requireSecondFactor(tx: Db, deps: Pick<Deps, 'keyVault'>, account: Account, code: string, now: Date): Promise<void> {
  if (!(await spendSecondFactor(tx, deps, account, code, now))) throw new WrongCredential('code', 'is not a current code of your authenticator app or an unused recovery code');
}

const requireOn = (account: Account) => {
  if (account.totp_enabled_at === null) throw conflict('Two-factor sign-in is off');
};

/**
 * Whether the person signs in with a second factor (and how many recovery codes they have left),
 * or is setting one up: a secret made, not yet confirmed with a code.
 */
export async function twoFactorStatus(deps: Pick<Deps, 'db'>, self: Self) {
  const account = await accountOf(deps, self);
  const enabled = account.totp_enabled_at !== null;
  return {
    enabled,
    settingUp: !enabled && account.totp_secret !== null,
    recoveryCodesLeft: enabled ? await accounts.countUnusedRecoveryCodes(deps.db, account.id) : 0,
  };
}

/**
 * Starts setting up two-factor sign-in, the current password required: a new secret, kept sealed
 * and not yet in force, for the person to add to their authenticator app. Answered once, here.
 */
export async function beginTwoFactorSetup(deps: TwoFactorDeps, self: Self, input: { currentPassword: string; now: Date }) {
  const account = await accountOf(deps, self);
  if (account.totp_enabled_at !== null) throw conflict('Two-factor sign-in is on already');
  await checkCurrentPassword(account, input.currentPassword);
  const secret = newTotpSecret();
  if (!(await accounts.storePendingTotpSecret(deps.db, account.id, deps.keyVault.sealText(secret), input.now))) throw conflict('Two-factor sign-in is on already');
  return { secret, uri: otpauthUri(ISSUER, account.email, secret) };
}

/**
 * Turns two-factor sign-in on once the person shows a current code of the secret being set up
 * (that code is then spent); answers the recovery codes, shown once.
 */
export async function enableTwoFactor(deps: TwoFactorDeps, self: Self, input: { code: string; now: Date }) {
  const account = await accountOf(deps, self);
  if (account.totp_enabled_at !== null) throw conflict('Two-factor sign-in is on already');
  if (account.totp_secret === null) throw conflict('Set up two-factor sign-in first');
  const step = matchingStep(openSecret(deps, account), withoutSpaces(input.code), input.now);
  if (step === null) throw new WrongCredential('code', 'is not the current code of your authenticator app');
  const recoveryCodes = newRecoveryCodes();
  await deps.db.transaction().execute(async (tx) => {
    if (!(await accounts.enableTotp(tx, account.id, account.totp_secret!, step, input.now))) throw conflict('Two-factor sign-in changed meanwhile (set up again, or turned on already): reload the page');
    await accounts.replaceRecoveryCodes(tx, account.id, recoveryCodes.map(recoveryCodeHash));
    await audit(tx, self, { action: 'user.twoFactorEnabled', targetType: 'user', targetId: account.id }, input.now);
  });
  return { recoveryCodes };
}

/** Turns two-factor sign-in off: the current password and a code (or recovery code) required. */
export async function disableTwoFactor(deps: TwoFactorDeps, self: Self, input: { currentPassword: string; code: string; now: Date }) {
  const account = await accountOf(deps, self);
  requireOn(account);
  await checkCurrentPassword(account, input.currentPassword);
  await deps.db.transaction().execute(async (tx) => {
    await requireSecondFactor(tx, deps, account, input.code, input.now);
    await accounts.disableTotp(tx, account.id, input.now);
    await audit(tx, self, { action: 'user.twoFactorDisabled', targetType: 'user', targetId: account.id }, input.now);
  });
}

/** New recovery codes for old ones, a code (or recovery code) required; answers them, shown once. */
export async function regenerateRecoveryCodes(deps: TwoFactorDeps, self: Self, input: { code: string; now: Date }) {
  const account = await accountOf(deps, self);
  requireOn(account);
  const recoveryCodes = newRecoveryCodes();
  await deps.db.transaction().execute(async (tx) => {
    await requireSecondFactor(tx, deps, account, input.code, input.now);
    await accounts.replaceRecoveryCodes(tx, account.id, recoveryCodes.map(recoveryCodeHash));
    await audit(tx, self, { action: 'user.recoveryCodesRegenerated', targetType: 'user', targetId: account.id }, input.now);
  });
  return { recoveryCodes };
}
