import { lockSigningKeys, storeSigningKey } from '../data/domains.js';
import type { Db } from '../db/connection.js';
import { PLAINTEXT_PREFIX, type KeyVault } from './key-vault.js';

/**
 * Encrypts the keys an earlier version stored in plain text; answers how many it encrypted. Their
 * rows are locked as they are read, and a process starting at the same time reads them again once
 * this one commits, when they no longer match: each key is encrypted once.
 */
export const encryptPlaintextKeys = (db: Db, vault: KeyVault) => reseal(db, vault, vault, PLAINTEXT_PREFIX);

/**
 * Re-encrypts every domain's key from one secret's vault to another's (SECRET rotation), all or
 * none: a key `from` cannot decrypt throws and leaves every key as it was. Answers how many.
 */
export const reencryptKeys = (db: Db, from: KeyVault, to: KeyVault) => reseal(db, from, to);

function reseal(db: Db, from: KeyVault, to: KeyVault, prefix?: string): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const keys = await lockSigningKeys(tx, prefix);
    for (const key of keys) await storeSigningKey(tx, key.id, to.seal(from.open(key.dkim_private_key, key.name)));
    return keys.length;
  });
}
