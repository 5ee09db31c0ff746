import { domainToASCII } from 'node:url';
import type { Config, PoolAddress } from '../../../config.js';
import type { Envelope } from '../../../mail/mime.js';
import type { DeliveryResult, SendContext, Transport } from '../types.js';
import { bounced, deferred, type RecipientResult } from './attempt.js';
import { Destination, type DestinationSettings, type OutcomeCounter } from './destination.js';
import { dnsQuerier, DnsTransientError } from './dns-query.js';
import { mxRoutes, tryOrder } from './mx-routes.js';

/** RFC 5321 §4.5.3.1.8: a transaction names at most 100 recipients. */
const MAX_RECIPIENTS_PER_TRANSACTION = 100;
// RFC 5321 §4.5.3.2's timeouts, in milliseconds; connecting is not among them.
const RFC_TIMEOUTS = { connect: 30_000, reply: 300_000, dataStart: 120_000, dataEnd: 600_000 };
const IDLE_MS = 5_000;

/** What a destination looks like to the deliverability view and the metrics. */
export type DestinationState = {
  name: string;
  queued: number;
  connections: number;
  limit: number;
  pausedUntil: Date | null;
  /** Attempts waiting and under way, per team. */
  teams: Map<number, { queued: number; inFlight: number }>;
};

export type DirectTransport = Transport & { destinations(): DestinationState[] };

export type DirectOptions = {
  /** Called with every outcome, per team and destination. */
  onOutcome?: OutcomeCounter;
  now?: () => number;
};

/** The recipient's domain as DNS knows it: lower case, international names in punycode. */
const domainOf = (address: string) => {
  const domain = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
  return domainToASCII(domain) || domain;
};

/** Round robin over a pool's addresses, each with the name it says HELO with. */
function poolRotation(config: Pick<Config, 'ipPools' | 'direct'>) {
  const rotations = new Map<string, { next(): PoolAddress & { ehlo: string } }>();
  const make = (members: PoolAddress[]) => {
    let turn = 0;
    return { next: () => {
      const member = members[turn++ % members.length]!;
      return { ...member, ehlo: member.ehloName ?? config.direct.ehloName };
    } };
  };
  return (pool: string) => {
    let rotation = rotations.get(pool);
    if (!rotation) {
      // The default pool, unless IP_POOLS names one, is whatever address the system picks.
      const members = config.ipPools[pool] ?? (pool === 'default' ? [{ address: '', ehloName: null }] : null);
      if (!members) return null;
      rotation = make(members);
      rotations.set(pool, rotation);
    }
    return rotation;
  };
}

/**
 * Delivers straight to each recipient's mail servers (SMTP_URL=direct): the recipients of an email
 * grouped by domain, each group routed by its MX records and queued at its destination, whose
 * limits it then waits for. Answers each recipient's own outcome.
 */
export function directTransport(
  config: Pick<Config, 'direct' | 'ipPools' | 'dnsServers' | 'dnsTimeoutMs' | 'dispatchBatchSize' | 'dispatchConcurrency'>,
  options: DirectOptions = {},
): DirectTransport {
  const now = options.now ?? Date.now;
  const routes = mxRoutes(dnsQuerier(config.dnsServers, config.dnsTimeoutMs));
  const scale = config.direct.timeoutScale;
  const pools = poolRotation(config);
  const settings: DestinationSettings = {
    mxPort: config.direct.mxPort,
    requireTls: config.direct.requireTls,
    timeouts: {
      connect: Math.round(RFC_TIMEOUTS.connect * scale),
      reply: Math.round(RFC_TIMEOUTS.reply * scale),
      dataStart: Math.round(RFC_TIMEOUTS.dataStart * scale),
      dataEnd: Math.round(RFC_TIMEOUTS.dataEnd * scale),
    },
    backoffMs: config.direct.backoffMs,
    // The dispatcher's places, shared among the destinations that have work and one more: a share
    // stays free for the mail of a destination that has none yet.
    fairShare: () => Math.floor((config.dispatchBatchSize * config.dispatchConcurrency) / ([...destinations.values()].filter((d) => d.busy).length + 1)),
    poolAddresses: pools,
    idleMs: IDLE_MS,
    now,
  };
  const destinations = new Map<string, Destination>();
  const destination = (name: string) => {
    let found = destinations.get(name);
    if (!found) {
      const policy = config.direct.policy[name] ?? {};
      found = new Destination(
        name,
        {
          maxConnections: policy.maxConnections ?? config.direct.maxConnections,
          messagesPerConnection: policy.messagesPerConnection ?? config.direct.messagesPerConnection,
          perMinute: policy.perMinute ?? config.direct.ratePerMinute,
        },
        settings,
        options.onOutcome ?? (() => {}),
      );
      destinations.set(name, found);
    }
    return found;
  };

  async function deliverToDomain(domain: string, recipients: string[], message: Buffer, envelope: Envelope, context: SendContext): Promise<RecipientResult[]> {
    // A pool this process does not have (IP_POOLS changed): the mail waits, never leaving from another pool's addresses.
    if (!pools(context.pool)) return deferred(recipients, `IP pool ${context.pool} is not configured here (IP_POOLS)`, null, null);
    let route;
    try {
      route = await routes.route(domain);
    } catch (error) {
      if (!(error instanceof DnsTransientError)) throw error;
      return deferred(recipients, error.message, null, null);
    }
    // Nowhere to deliver, now or later: the address cannot receive mail.
    if (route.kind === 'none') return bounced(recipients, route.reason, null, null, true);
    const target = destination(route.destination);
    const parts: Promise<RecipientResult[]>[] = [];
    for (let start = 0; start < recipients.length; start += MAX_RECIPIENTS_PER_TRANSACTION) {
      parts.push(target.submit({
        teamId: context.teamId,
        from: envelope.from,
        recipients: recipients.slice(start, start + MAX_RECIPIENTS_PER_TRANSACTION),
        message,
        hosts: tryOrder(route.hosts),
        pool: context.pool,
        deadline: context.deadline,
      }));
    }
    return (await Promise.all(parts)).flat().map((result) => ({ ...result, destination: route.destination }));
  }

  /** The destination a domain's mail goes to, if it can be routed now. */
  async function routedTo(domain: string): Promise<Destination | null> {
    const route = await routes.route(domain).catch(() => null);
    return route?.kind === 'hosts' ? destination(route.destination) : null;
  }

  return {
    name: 'direct',
    async admit(envelope) {
      const now = options.now?.() ?? Date.now();
      const holds = await Promise.all([...new Set(envelope.to.map(domainOf))].map(async (domain) => (await routedTo(domain))?.heldUntil(now)?.until ?? null));
      // Held only when no domain of the email takes it now: the others would wait for nothing.
      return holds.every((hold) => hold !== null) ? new Date(Math.min(...holds.map((hold) => hold!.getTime()))) : null;
    },
    async send(_emailId, message, envelope, context): Promise<DeliveryResult> {
      if (!context) throw new Error('direct delivery needs the sending context (team, IP pool, deadline)');
      const byDomain = new Map<string, string[]>();
      for (const address of envelope.to) {
        const domain = domainOf(address);
        byDomain.set(domain, [...(byDomain.get(domain) ?? []), address]);
      }
      const results = await Promise.all([...byDomain].map(([domain, recipients]) => deliverToDomain(domain, recipients, message, envelope, context)));
      return { kind: 'recipients', results: results.flat() };
    },
    // No one server to ask: each destination answers for itself when mail goes to it.
    check: async () => {},
    async close() {
      for (const target of destinations.values()) target.close();
    },
    destinations: () =>
      [...destinations.values()].map((target) => ({
        name: target.name,
        queued: target.queued,
        connections: target.connections,
        limit: target.limit,
        pausedUntil: target.pausedUntil > now() ? new Date(target.pausedUntil) : null,
        teams: target.teams(),
      })),
  };
}
