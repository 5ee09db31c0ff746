import { createHash, createPublicKey, generateKeyPair, sign, verify, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { newId } from '../ids.js';
import { parseHeaderFields, type HeaderField } from '../mail/header-fields.js';

const generateRsaKeyPair = promisify(generateKeyPair);

export type DkimKeyPair = {
  /** Stored only as the key vault seals it (domains/key-vault.ts). */
  privateKey: KeyObject;
  /** Base64 SubjectPublicKeyInfo, the `p=` of the DNS record. */
  publicKey: string;
};

/** Each key gets its own selector, so a domain's key can be rotated without a clash. */
export const newDkimSelector = () => `mr${newId(10)}`;

export async function generateDkimKeyPair(): Promise<DkimKeyPair> {
  const { privateKey, publicKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
  });
  return { privateKey, publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64') };
}

export const dkimRecordValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`;

// What a recipient shows or acts on; a header absent from the message is simply not signed.
const SIGNED_HEADERS = [
  'from', 'sender', 'reply-to', 'to', 'cc', 'subject', 'date', 'message-id', 'in-reply-to', 'references',
  'mime-version', 'content-type', 'content-transfer-encoding', 'list-id', 'list-unsubscribe', 'list-unsubscribe-post',
];

/**
 * Signs messages for one domain (RFC 6376, rsa-sha256, relaxed/relaxed). Built once per domain:
 * decrypting and parsing the key costs more than the signature itself, so it stays a KeyObject.
 */
export class DkimSigner {
  constructor(
    readonly domain: string,
    readonly selector: string,
    private readonly key: KeyObject,
  ) {}

  /**
   * The message with its DKIM-Signature header field on top. The RSA signature, most of the cost
   * of sending a message, is computed on libuv's thread pool, off the event loop and on every core.
   */
  async sign(message: string | Buffer, now = new Date()): Promise<Buffer> {
    const bytes = Buffer.isBuffer(message) ? message : Buffer.from(message);
    // latin1 maps each byte to one character and back, so hashing sees the bytes that go on the wire.
    const { unsigned, data } = this.signedData(bytes.toString('latin1'), now);
    const signature = await new Promise<Buffer>((resolve, reject) =>
      sign('sha256', data, this.key, (error, result) => (error ? reject(error) : resolve(result))),
    );
    // Folding at the tag separators leaves the relaxed form, and so the signature, unchanged.
    const field = `${unsigned.replaceAll('; ', ';\r\n\t')}${signature.toString('base64')}\r\n`;
    return Buffer.concat([Buffer.from(field, 'latin1'), bytes]);
  }

  /** The signature field without its `b=` value, and the bytes that value signs. */
  private signedData(message: string, now: Date): { unsigned: string; data: Buffer } {
    const crlf = BARE_LF.test(message) ? message.replace(/\r?\n/g, '\r\n') : message;
    const split = crlf.indexOf('\r\n\r\n');
    const headerBlock = split === -1 ? crlf : crlf.slice(0, split + 2);
    const body = split === -1 ? '' : crlf.slice(split + 4);

    const fields = parseHeaderFields(headerBlock);
    const signed: HeaderField[] = [];
    const names: string[] = [];
    for (const name of SIGNED_HEADERS) {
      // Several instances are signed bottom-up, as verifiers pick them (RFC 6376 §5.4.2).
      for (const field of fields.filter((f) => f.name === name).reverse()) {
        signed.push(field);
        names.push(name);
      }
    }
    const tags = [
      'v=1', 'a=rsa-sha256', 'c=relaxed/relaxed', `d=${this.domain}`, `s=${this.selector}`,
      `t=${Math.floor(now.getTime() / 1000)}`, `h=${names.join(':')}`,
      `bh=${bodyHash(body)}`, 'b=',
    ];
    const unsigned = `DKIM-Signature: ${tags.join('; ')}`;
    const data = signed.map((field) => `${relaxedHeader(field.raw)}\r\n`).join('') + relaxedHeader(unsigned);
    return { unsigned, data: Buffer.from(data, 'latin1') };
  }
}

function relaxedHeader(raw: string): string {
  const colon = raw.indexOf(':');
  const value = raw.slice(colon + 1).replace(/\r\n/g, '').replace(/[ \t]+/g, ' ').trim();
  return `${raw.slice(0, colon).trim().toLowerCase()}:${value}`;
}

// A line feed without its carriage return; built messages have none, and are not copied to mend them.
const BARE_LF = /(?:^|[^\r])\n/;
// What relaxed body canonicalisation changes inside a body: a tab, a run of spaces, white space ending a line.
const UNRELAXED = /\t| {2}| \r\n| $/;

/**
 * The body hash (relaxed). A body with nothing to change but its trailing empty lines, as built
 * messages are (their parts are base64 or quoted-printable), is hashed as it is, without the
 * line-by-line copy.
 */
function bodyHash(body: string): string {
  const hash = createHash('sha256');
  if (UNRELAXED.test(body)) return hash.update(relaxedBody(body), 'latin1').digest('base64');
  let end = body.length;
  while (end >= 2 && body.charCodeAt(end - 2) === 0x0d && body.charCodeAt(end - 1) === 0x0a) end -= 2;
  if (end > 0) hash.update(body.slice(0, end), 'latin1').update('\r\n', 'latin1');
  return hash.digest('base64');
}

function relaxedBody(body: string): string {
  const lines = body.split('\r\n').map((line) => line.replace(/[ \t]+/g, ' ').replace(/ $/, ''));
  const text = lines.join('\r\n').replace(/(\r\n)+$/, '');
  return text === '' ? '' : `${text}\r\n`;
}

/** A DKIM tag list (RFC 6376 §3.2: a signature's value, a key record): names lower-cased, white space taken out of values. */
export function tagList(value: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of value.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).replace(/\s+/g, ''));
  }
  return tags;
}

/**
 * The header fields a valid DKIM signature made with this domain's key covers in a header block,
 * or null when no such signature is there. It is checked over the signed header fields
 * (rsa-sha256 with relaxed header canonicalisation, as DkimSigner writes them); the body hash is
 * not checked: reports often quote only the headers. What the signature proves is only what it
 * covers, so a caller reads its facts from these fields, never from the block at large, where a
 * second instance of a field may stand above the signed one.
 */
export function signedHeaderFields(headerBlock: string, key: { domain: string; selector: string; publicKey: string }): HeaderField[] | null {
  const fields = parseHeaderFields(headerBlock.replace(/\r?\n/g, '\r\n'));
  for (const field of fields.filter((f) => f.name === 'dkim-signature')) {
    const tags = tagList(field.raw.slice(field.raw.indexOf(':') + 1));
    const ours = tags.get('v') === '1' && tags.get('a') === 'rsa-sha256' && tags.get('c')?.startsWith('relaxed') &&
      tags.get('d')?.toLowerCase() === key.domain && tags.get('s') === key.selector;
    const names = (tags.get('h') ?? '').toLowerCase().split(':').filter(Boolean);
    if (!ours || !names.includes('from') || !tags.get('b')) continue;
    const unused = new Map<string, HeaderField[]>();
    for (const f of fields) unused.set(f.name, [...(unused.get(f.name) ?? []), f]);
    // Each listed name takes the bottom-most instance not yet taken (RFC 6376 §5.4.2); a name with none left signs nothing.
    const signed = names.flatMap((name) => unused.get(name)?.splice(-1, 1) ?? []);
    const data = signed.map((f) => `${relaxedHeader(f.raw)}\r\n`).join('') + relaxedHeader(field.raw.replace(/([:;]\s*b\s*=)[^;]*/, '$1'));
    try {
      const publicKey = createPublicKey({ key: Buffer.from(key.publicKey, 'base64'), format: 'der', type: 'spki' });
      if (verify('sha256', Buffer.from(data, 'latin1'), publicKey, Buffer.from(tags.get('b')!, 'base64'))) return signed;
    } catch {
      // A malformed key or signature proves nothing.
    }
  }
  return null;
}
