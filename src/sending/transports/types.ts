import type { EmailStatus } from '../../db/schema.js';
import type { Envelope } from '../../mail/mime.js';
import type { RecipientResult } from './direct/attempt.js';

export type { RecipientResult } from './direct/attempt.js';

/** What a receiver reported after accepting the message (the capture transport's simulator). */
export type Feedback = {
  status: Extract<EmailStatus, 'DELIVERED' | 'DELIVERY_DELAYED' | 'BOUNCED' | 'COMPLAINED'>;
  data: Record<string, unknown>;
  /** Addresses to put on the team's suppression list. */
  suppress?: { addresses: string[]; reason: 'HARD_BOUNCE' | 'COMPLAINT' };
};

export type RecipientRejection = { address: string; response: string; code: number | null };

/**
 * The answer to one hand-over. `sent`: accepted for at least one recipient (`rejected` lists those
 * refused). `temporary`: worth trying again later (4xx, connection trouble). `permanent`: refused
 * for good (5xx); `rejected` lists recipients refused one by one, the ones to suppress.
 * `recipients`: each recipient's own outcome (direct delivery, where recipients go to different
 * servers).
 */
export type DeliveryResult =
  | { kind: 'sent'; response: string; rejected: RecipientRejection[]; feedback: Feedback[] }
  | { kind: 'temporary'; response: string; code: number | null }
  | { kind: 'permanent'; response: string; code: number | null; rejected: RecipientRejection[] }
  | { kind: 'recipients'; results: RecipientResult[] };

/** Who sends, over which addresses, and by when an attempt must have begun (its claim runs out soon after). */
export type SendContext = { teamId: number; pool: string; deadline: number };

/** One way out for finished messages; every driver passes the same shared test suite. */
export interface Transport {
  readonly name: 'smtp' | 'capture' | 'direct';
  send(emailId: string, message: Buffer, envelope: Envelope, context?: SendContext): Promise<DeliveryResult>;
  /**
   * Before a message is signed: the time before which none of its recipients can be taken (their
   * destinations paused or full), or null to go ahead. Transports that take everything at once have none.
   */
  admit?(envelope: Envelope, context: SendContext): Promise<Date | null>;
  /** Rejects when mail could not go out now (the relay does not answer or refuses our login). */
  check(): Promise<void>;
  close(): Promise<void>;
}
