import type { MxHost } from './mx-routes.js';

/** The server that answered, as the event details name it. */
export type Remote = { host: string; address: string; tls: boolean };

/**
 * What became of one recipient. `deferred`: tried, and refused for now (4xx, no connection, a
 * timeout): worth trying again. `postponed`: not tried at all (its destination paused or at its
 * limits): due again at `until`, without counting as an attempt.
 */
export type RecipientResult = (
  | { address: string; status: 'delivered'; reply: string; remote: Remote }
  | { address: string; status: 'bounced'; reply: string; code: number | null; remote: Remote | null; suppress: boolean }
  | { address: string; status: 'deferred'; reply: string; code: number | null; remote: Remote | null; suppress: false }
  | { address: string; status: 'postponed'; until: Date; reason: string }
) & {
  /** The destination the recipient's domain is routed to, once it is known. */
  destination?: string;
};

/** One transaction to one recipient domain: one message, its envelope sender, up to 100 of its recipients. */
export type Attempt = {
  teamId: number;
  from: string;
  recipients: string[];
  message: Buffer;
  /** The domain's mail servers, in the order to try them. */
  hosts: MxHost[];
  /** The IP pool the sending domain uses. */
  pool: string;
  /** Not begun by then: postponed, so that its claim is given back before its lease runs out. */
  deadline: number;
};

export const postponed = (recipients: string[], until: Date, reason: string): RecipientResult[] =>
  recipients.map((address) => ({ address, status: 'postponed', until, reason }));

export const deferred = (recipients: string[], reply: string, code: number | null, remote: Remote | null): RecipientResult[] =>
  recipients.map((address) => ({ address, status: 'deferred', reply, code, remote, suppress: false }));

/** Refused for good; `suppress`: the refusal is the recipient's own (a 5xx to RCPT or after DATA, a domain with no mail). */
export const bounced = (recipients: string[], reply: string, code: number | null, remote: Remote | null, suppress: boolean): RecipientResult[] =>
  recipients.map((address) => ({ address, status: 'bounced', reply, code, remote, suppress }));

/**
 * A reply that asks the sender to slow down: 421 (the server closes), or a 4xx naming rates, too
 * many connections or messages, or throttling. Greylisting ("try again later") is not one: it asks
 * for a retry, not a slower pace.
 */
export const saysSlowDown = (code: number | null, reply: string) =>
  code === 421 || (code !== null && code >= 400 && code < 500 && /too many|rate.?limit|slow down|throttl|exceed|4\.7\.28/i.test(reply));
