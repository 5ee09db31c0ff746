import { createCipheriv, createDecipheriv, createPrivateKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';

// Names what the derived key is for, so it is never the key of another use of SECRET (link signing).
// Webhook secrets are sealed under it too; the name is kept so keys stored before still open.
const HKDF_INFO = 'mailroom: DKIM private keys at rest, AES-256-GCM, v1';
const FORMAT = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** How a key stored before keys were encrypted begins (PEM); nothing encrypted begins so. */
export const PLAINTEXT_PREFIX = '-----BEGIN';

/** A stored value this vault cannot open; the message names its owner, never the secret. */
export class KeyVaultError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyVaultError';
  }
}

/**
 * Encrypts DKIM private keys for the database and decrypts them straight into KeyObjects. The key
 * is derived from SECRET with HKDF-SHA256; each private key (PKCS#8 DER) is sealed with AES-256-GCM
 * under a random IV and stored as `v1:<iv>:<tag>:<ciphertext>` (base64), so a dump or backup of
 * the database carries no usable key without SECRET.
 */
export class KeyVault {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), HKDF_INFO, 32));
  }

  seal(privateKey: KeyObject): string {
    const der = privateKey.export({ type: 'pkcs8', format: 'der' });
    try {
      return this.encrypt(der);
    } finally {
      der.fill(0);
    }
  }

  /**
   * The signing key of a stored value. A PEM is read as it is: a process of an earlier version
   * sharing the database may have written it since this one encrypted the rest at start.
   */
  open(stored: string, domain: string): KeyObject {
    if (stored.startsWith(PLAINTEXT_PREFIX)) return createPrivateKey(stored);
    const der = this.decrypt(stored, `The DKIM private key of ${domain}`);
    try {
      return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    } finally {
      der.fill(0);
    }
  }

  /** A secret that must be used again in clear (a webhook's signing secret), sealed as keys are. */
  sealText(text: string): string {
    return this.encrypt(Buffer.from(text, 'utf8'));
  }

  /** `what` names the secret's owner in errors, never the secret. */
  openText(stored: string, what: string): string {
    return this.decrypt(stored, what).toString('utf8');
  }

  private encrypt(plain: Buffer): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    const ciphertext = Buffer.concat([cipher.update(plain), cipher.final()]);
    return [FORMAT, ...[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString('base64'))].join(':');
  }

  private decrypt(stored: string, what: string): Buffer {
    const [format, iv, tag, ciphertext, ...rest] = stored.split(':');
    if (format !== FORMAT || ciphertext === undefined || rest.length > 0) {
      throw new KeyVaultError(`${what} is stored in a form this version of Mailroom does not know`);
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv!, 'base64'), { authTagLength: TAG_BYTES });
    try {
      decipher.setAuthTag(Buffer.from(tag!, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]);
    } catch {
      throw new KeyVaultError(
        `${what} cannot be decrypted with this SECRET: it was encrypted with another one ` +
          '(start Mailroom with the SECRET it had when it was stored, or the one given to "secret rotate"), or altered',
      );
    }
  }
}
