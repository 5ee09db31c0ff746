import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** What a recipient link carries: who it is for, and until when it holds (ms since the epoch). */
export type UnsubscribePayload = { k: 'u'; t: number; m: string; e: string; b: string; c: string };
export type ConfirmPayload = { k: 'c'; t: number; b: string; c: string; x: number };
/** Tracking: the email opened, and a link of it clicked, with the one URL the click may lead to. */
export type OpenPayload = { k: 'o'; e: string };
export type ClickPayload = { k: 'l'; e: string; u: string };
export type TokenPayload = UnsubscribePayload | ConfirmPayload | OpenPayload | ClickPayload;

/**
 * Signs and checks the tokens of recipient links: base64url JSON, a dot, and its HMAC-SHA256 under
 * the server secret. A token is only ever believed after its MAC matched in constant time.
 */
export class RecipientTokens {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(secret, 'utf8');
  }

  sign(payload: TokenPayload): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.mac(body).toString('base64url')}`;
  }

  /** The payload of a well-formed, untampered token of that kind; null otherwise. */
  verify<K extends TokenPayload['k']>(token: string, kind: K): Extract<TokenPayload, { k: K }> | null {
    const [body, mac, extra] = token.split('.');
    if (!body || !mac || extra !== undefined) return null;
    const given = Buffer.from(mac, 'base64url');
    const expected = this.mac(body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    try {
      const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as TokenPayload;
      return payload.k === kind ? (payload as Extract<TokenPayload, { k: K }>) : null;
    } catch {
      return null;
    }
  }

  private mac(body: string): Buffer {
    return createHmac('sha256', this.key).update(body).digest();
  }
}

/**
 * The secret from SECRET, or else the one kept in DATA_DIR/secret (mode 0600), generated on first
 * start: links in mail already sent must keep working across restarts.
 */
export async function loadSecret(configured: string | null, dataDir: string): Promise<string> {
  if (configured) return configured;
  const file = path.join(dataDir, 'secret');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  try {
    await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // Another process on the same directory wrote it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return (await readFile(file, 'utf8')).trim();
    throw error;
  }
  await chmod(file, 0o600);
  return secret;
}
