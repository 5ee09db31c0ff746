import { createHmac, timingSafeEqual } from 'node:crypto';

/** What each kind of recipient link says: who it is for, and (a confirmation) until when it holds. */
export type LinkFields = {
  /** `campaignId`: empty for an automation's mail. */
  unsubscribe: { teamId: number; campaignId: string; emailId: string; bookId: string; contactId: string };
  /** `expiresAt`: milliseconds since the epoch. */
  confirm: { teamId: number; bookId: string; contactId: string; expiresAt: number };
  /** Tracking: the email opened. */
  open: { emailId: string };
  /** Tracking: a link of the email clicked, with the one URL the click may lead to. */
  click: { emailId: string; url: string };
  /** A person's invite: `nonce` is drawn afresh for each invite, so a new one retires the old link. */
  invite: { userId: string; nonce: string };
  /** A password reset, by the id of its row. */
  reset: { resetId: string };
};
export type LinkKind = keyof LinkFields;

type FieldCodec = readonly [wireKey: string, type: 'string' | 'number'];

/**
 * How each kind is written in a token: a one-letter tag and one-letter keys keep links short.
 * Links already sent must keep working, so these letters never change.
 */
const WIRE: { [K in LinkKind]: { tag: string; fields: { [F in keyof LinkFields[K]]: FieldCodec } } } = {
  unsubscribe: {
    tag: 'u',
    fields: { teamId: ['t', 'number'], campaignId: ['m', 'string'], emailId: ['e', 'string'], bookId: ['b', 'string'], contactId: ['c', 'string'] },
  },
  confirm: { tag: 'c', fields: { teamId: ['t', 'number'], bookId: ['b', 'string'], contactId: ['c', 'string'], expiresAt: ['x', 'number'] } },
  open: { tag: 'o', fields: { emailId: ['e', 'string'] } },
  click: { tag: 'l', fields: { emailId: ['e', 'string'], url: ['u', 'string'] } },
  invite: { tag: 'i', fields: { userId: ['u', 'string'], nonce: ['n', 'string'] } },
  reset: { tag: 'r', fields: { resetId: ['r', 'string'] } },
};

/**
 * Signs and checks the tokens of recipient links: base64url JSON, a dot, and its HMAC-SHA256 under
 * the server secret. A token is only ever believed after its MAC matched in constant time, and
 * only as the kind it was made for, with every field of that kind present and of its type.
 */
export class RecipientTokens {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = Buffer.from(secret, 'utf8');
  }

  sign<K extends LinkKind>(kind: K, fields: LinkFields[K]): string {
    const { tag, fields: codecs } = WIRE[kind];
    const wire: Record<string, unknown> = { k: tag };
    for (const [name, [key]] of Object.entries<FieldCodec>(codecs)) wire[key] = fields[name as keyof LinkFields[K]];
    const body = Buffer.from(JSON.stringify(wire)).toString('base64url');
    return `${body}.${this.mac(body).toString('base64url')}`;
  }

  /** The fields of a well-formed, untampered token of that kind; null otherwise. */
  verify<K extends LinkKind>(token: string, kind: K): LinkFields[K] | null {
    const [body, mac, extra] = token.split('.');
    if (!body || !mac || extra !== undefined) return null;
    // Compared as text: base64url decoding forgives padding, the standard alphabet and the spare
    // bits of the last character, and a token must have exactly one accepted spelling.
    const given = Buffer.from(mac);
    const expected = Buffer.from(this.mac(body).toString('base64url'));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let wire: Record<string, unknown>;
    try {
      wire = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
    } catch {
      return null;
    }
    const { tag, fields: codecs } = WIRE[kind];
    if (typeof wire !== 'object' || wire === null || wire.k !== tag) return null;
    const fields: Record<string, unknown> = {};
    for (const [name, [key, type]] of Object.entries<FieldCodec>(codecs)) {
      if (typeof wire[key] !== type) return null;
      fields[name] = wire[key];
    }
    return fields as LinkFields[K];
  }

  /**
   * The tag that proves an address naming this email was made here (the VERP return path, the
   * List-Unsubscribe mailto): 64 bits of the HMAC, in lower-case hex so that mail servers which
   * change the case of a local part do not break it. Link tokens are MACs of base64url text, which
   * never contains the ':' that starts this input, so neither can stand in for the other.
   */
  addressTag(emailId: string): string {
    return createHmac('sha256', this.key).update(`address:${emailId}`).digest('hex').slice(0, 16);
  }

  /** Whether `tag` is this email's address tag, compared in constant time. */
  checkAddressTag(emailId: string, tag: string): boolean {
    const expected = Buffer.from(this.addressTag(emailId));
    const given = Buffer.from(tag.toLowerCase());
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private mac(body: string): Buffer {
    return createHmac('sha256', this.key).update(body).digest();
  }
}
