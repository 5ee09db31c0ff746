import { lockTotpSecrets, storeTotpSecret } from '../data/account-security.js';
import { lockSigningKeys, storeSigningKey } from '../data/domains.js';
import { lockWebhookSecrets, storeWebhookSecret } from '../data/webhook-secrets.js';
import type { Db } from '../db/connection.js';
import { PLAINTEXT_PREFIX, type KeyVault } from './key-vault.js';

/**
 * Encrypts the keys an earlier version stored in plain text; answers how many it encrypted. Their
 * rows are locked as they are read, and a process starting at the same time reads them again once
 * this one commits, when they no longer match: each key is encrypted once.
 */
export const encryptPlaintextKeys = (db: Db, vault: KeyVault) => reseal(db, vault, vault, PLAINTEXT_PREFIX);

/**
 * Re-encrypts every domain's key, every webhook's signing secret and every person's two-factor
 * secret from one secret's vault to another's (SECRET rotation), all or none: one `from` cannot
 * decrypt throws and leaves everything as it was. Answers how many of each.
 */
export async function reencryptKeys(db: Db, from: KeyVault, to: KeyVault): Promise<{ keys: number; webhookSecrets: number; twoFactorSecrets: number }> {
  return db.transaction().execute(async (tx) => {
    const keys = await resealKeys(tx, from, to);
    const secrets = await lockWebhookSecrets(tx);
    for (const row of secrets) {
      await storeWebhookSecret(tx, { teamId: row.team_id, id: row.id }, to.sealText(from.openText(row.secret, `The signing secret of webhook ${row.id}`)));
    }
    const twoFactor = await lockTotpSecrets(tx);
    for (const row of twoFactor) {
      await storeTotpSecret(tx, row.id, to.sealText(from.openText(row.totp_secret!, `The two-factor secret of ${row.email}`)));
    }
    return { keys, webhookSecrets: secrets.length, twoFactorSecrets: twoFactor.length };
  });
}

function reseal(db: Db, from: KeyVault, to: KeyVault, prefix?: string): Promise<number> {
  return db.transaction().execute((tx) => resealKeys(tx, from, to, prefix));
}

async function resealKeys(tx: Db, from: KeyVault, to: KeyVault, prefix?: string): Promise<number> {
  const keys = await lockSigningKeys(tx, prefix);
  for (const key of keys) await storeSigningKey(tx, key.id, to.seal(from.open(key.dkim_private_key, key.name)));
  return keys.length;
}
