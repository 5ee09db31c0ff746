import type { PoolAddress } from '../../../config.js';
import { positive, RelaySession, type Reply, type SessionTimeouts } from '../relay-session.js';
import { deferred, postponed, type Attempt, type RecipientResult, type Remote } from './attempt.js';
import { transact } from './mx-transaction.js';

/** A destination's limits: connections at once, messages over one connection, new messages a minute (null: no limit). */
export type Limits = { maxConnections: number; messagesPerConnection: number; perMinute: number | null };

/** What the destinations share: how to open sessions, and how long to pause one that asks us to slow down. */
export type DestinationSettings = {
  mxPort: number;
  requireTls: boolean;
  timeouts: SessionTimeouts;
  /** The first pause; each one after doubles it, up to 30 times as long. */
  backoffMs: number;
  /** Attempts one destination may keep waiting at the least: its share of what the dispatcher holds at once. */
  fairShare(): number;
  /** The addresses of an IP pool, round robin; null: the pool is not configured. */
  poolAddresses(pool: string): { next(): PoolAddress & { ehlo: string } } | null;
  /** How long a connection with nothing to send stays open for more. */
  idleMs: number;
  now(): number;
};

/** Outcomes counted per team, for the deliverability view. */
export type OutcomeCounter = (teamId: number, destination: string, status: 'delivered' | 'deferred' | 'bounced', count: number) => void;

/** `leaveBy`: not begun by then, it is postponed (its deadline, or its longest wait in the queue). */
type Job = { attempt: Attempt; leaveBy: number; resolve(results: RecipientResult[]): void };

type Connection = { session: RelaySession; remote: Remote; pool: string; localAddress: string | null; sent: number };

/** An attempt whose envelope went out behind the message before it, and the replies owed to it. */
type Ahead = { job: Job; replies: Promise<Reply>[] };

const MAX_PAUSE_FACTOR = 30;
const ONE_MINUTE = 60_000;
// Mail waits this long at most for a connection in memory, holding its claim and its place in the
// dispatcher; then it goes back to the queue in the database, due again a moment later, so a busy
// destination's backlog never crowds out other destinations' mail.
const MAX_QUEUE_WAIT_MS = 10_000;
const BUSY_RETRY_MS = 2_000;
// Past the rate, a runner waits for the next slot when it is this close; further, the mail is
// postponed to the slot.
const MAX_RATE_WAIT_MS = 1_000;
// Attempts may queue for a connection up to the destination's share of the dispatcher's places, or
// what it got through in this long lately: a slow destination beside others keeps its share, a fast
// one as many as it takes.
const BACKLOG_WINDOW_MS = 5_000;
// Attempts in a row that reached none of the destination's servers before it counts as down.
const DOWN_AFTER = 3;

/**
 * The mail of one destination (the registrable domain of the MX hosts: every domain one provider
 * hosts shares its limits): a queue, and runners that each hold one connection and take the next
 * attempt from it, up to `limit` at once. A destination that answers 421 or asks to slow down, or
 * whose servers do not answer three attempts in a row, has its limit halved and is paused (1
 * minute, doubling to 30); every delivery brings the limit back up by one and ends the doubling.
 * While paused, and past its rate, attempts are postponed to the time it may take them. The queue
 * holds the destination's share of the dispatcher's places (or about five seconds of what it takes
 * lately, when more), and an attempt waits in it ten seconds at most; the rest is postponed for a
 * moment. So a dead or slow destination holds back nothing but its own mail.
 */
export class Destination {
  private readonly queue: Job[] = [];
  private readonly active = new Set<Job>();
  private readonly waiting: Array<(job: Job | null) => void> = [];
  private readonly starts: number[] = [];
  private runners = 0;
  private pauses = 0;
  private unreachable = 0;
  // Attempts finished, per second, over the last BACKLOG_WINDOW_MS.
  private readonly finished = new Map<number, number>();
  private sweep: NodeJS.Timeout | undefined;
  limit: number;
  pausedUntil = 0;
  closing = false;

  constructor(
    readonly name: string,
    private readonly limits: Limits,
    private readonly settings: DestinationSettings,
    private readonly count: OutcomeCounter,
  ) {
    this.limit = limits.maxConnections;
  }

  /** Attempts waiting, and connections open. */
  get queued(): number {
    return this.queue.length;
  }

  get connections(): number {
    return this.runners;
  }

  /** Attempts waiting and under way, per team. */
  teams(): Map<number, { queued: number; inFlight: number }> {
    const counts = new Map<number, { queued: number; inFlight: number }>();
    const of = (teamId: number) => counts.get(teamId) ?? counts.set(teamId, { queued: 0, inFlight: 0 }).get(teamId)!;
    for (const job of this.queue) of(job.attempt.teamId).queued++;
    for (const job of this.active) of(job.attempt.teamId).inFlight++;
    return counts;
  }

  submit(attempt: Attempt): Promise<RecipientResult[]> {
    const now = this.settings.now();
    if (this.closing) return Promise.resolve(postponed(attempt.recipients, new Date(now), 'the transport is closing'));
    const held = this.heldUntil(now);
    if (held) return Promise.resolve(postponed(attempt.recipients, held.until, held.reason));
    return new Promise((resolve) => {
      const job = { attempt, leaveBy: Math.min(attempt.deadline, now + MAX_QUEUE_WAIT_MS), resolve };
      // A connection waiting for work takes it at once, unless the rate says to wait.
      const runner = this.rateWait(now) === 0 ? this.waiting.shift() : undefined;
      if (runner) return runner(job);
      this.queue.push(job);
      if (this.runners < this.limit) this.startRunner();
      this.scheduleSweep();
    });
  }

  /** Stops taking attempts: those waiting are postponed, connections close after their current one. */
  close(): void {
    this.closing = true;
    clearTimeout(this.sweep);
    for (const wake of this.waiting.splice(0)) wake(null);
    for (const job of this.queue.splice(0)) job.resolve(postponed(job.attempt.recipients, new Date(this.settings.now()), 'the transport closed'));
  }

  private startRunner(): void {
    this.runners++;
    void this.run().finally(() => {
      this.runners--;
      // Room for another runner while attempts wait (after a pause, or one runner's failure).
      if (this.queue.length > 0 && this.runners < this.limit && !this.closing && this.settings.now() >= this.pausedUntil) this.startRunner();
    });
  }

  /**
   * One runner: takes attempts one after another over one connection, reconnecting where an attempt
   * needs another server. An attempt whose envelope went out behind the one before comes first.
   */
  private async run(): Promise<void> {
    let connection: Connection | null = null;
    let ahead: Ahead | null = null;
    try {
      for (let job = await this.next(connection); job; job = ahead?.job ?? (await this.next(connection))) {
        ({ connection, ahead } = await this.deliver(job, connection, ahead?.replies));
      }
    } finally {
      if (connection) await connection.session.quit();
    }
  }

  /** The next attempt for a runner, waiting for one while its connection may idle; null: the runner ends. */
  private async next(connection: Connection | null): Promise<Job | null> {
    for (;;) {
      if (this.closing || this.runners > this.limit) return null;
      const now = this.settings.now();
      if (now < this.pausedUntil) {
        this.postponeQueue(new Date(this.pausedUntil), `${this.name} is paused: it asked us to slow down`);
        return null;
      }
      this.expireQueue(now);
      if (this.queue.length === 0) {
        if (!connection || connection.session.closed) return null;
        return this.waitForJob(connection);
      }
      const wait = this.rateWait(now);
      if (wait > MAX_RATE_WAIT_MS) {
        this.postponeQueue(new Date(now + wait), `${this.name} takes at most ${this.limits.perMinute} messages a minute`);
        return null;
      }
      if (wait > 0) {
        await new Promise((resolve) => setTimeout(resolve, wait));
        continue;
      }
      this.starts.push(now);
      return this.queue.shift()!;
    }
  }

  private waitForJob(connection: Connection): Promise<Job | null> {
    return new Promise((resolve) => {
      const wake = (job: Job | null) => {
        clearTimeout(timer);
        stopListening();
        const at = this.waiting.indexOf(wake);
        if (at !== -1) this.waiting.splice(at, 1);
        if (job) this.starts.push(this.settings.now());
        resolve(job);
      };
      const timer = setTimeout(() => wake(null), this.settings.idleMs);
      const stopListening = connection.session.onClose(() => wake(null));
      this.waiting.push(wake);
    });
  }

  /** Whether there is work waiting or under way. */
  get busy(): boolean {
    return this.queue.length > 0 || this.active.size > 0;
  }

  /** Until when the destination takes no new attempt, and why: paused, or its queue full; null when it takes one now. */
  heldUntil(now: number): { until: Date; reason: string } | null {
    if (now < this.pausedUntil) return { until: new Date(this.pausedUntil), reason: `${this.name} is paused: it asked us to slow down or did not answer` };
    if (this.queue.length >= this.backlogLimit(now)) {
      return { until: new Date(now + BUSY_RETRY_MS), reason: `${this.name} is busy: ${this.queue.length} attempts are waiting for a connection` };
    }
    return null;
  }

  /**
   * How many attempts may wait for a connection: its share of the dispatcher's places, or about
   * BACKLOG_WINDOW_MS of what got through lately when that is more.
   */
  private backlogLimit(now: number): number {
    let recent = 0;
    for (const [second, count] of this.finished) {
      if (second * 1000 < now - BACKLOG_WINDOW_MS) this.finished.delete(second);
      else recent += count;
    }
    return Math.max(this.limit * 2, this.settings.fairShare(), recent);
  }

  private countFinished(now: number): void {
    const second = Math.floor(now / 1000);
    this.finished.set(second, (this.finished.get(second) ?? 0) + 1);
  }

  /** How long until another message may start under the rate limit (0: now). */
  private rateWait(now: number): number {
    const { perMinute } = this.limits;
    while (this.starts.length > 0 && this.starts[0]! <= now - ONE_MINUTE) this.starts.shift();
    if (perMinute === null || this.starts.length < perMinute) return 0;
    return this.starts[this.starts.length - perMinute]! + ONE_MINUTE - now;
  }

  private expireQueue(now: number): void {
    for (const job of this.queue.filter((queued) => queued.leaveBy <= now)) {
      this.queue.splice(this.queue.indexOf(job), 1);
      job.resolve(postponed(job.attempt.recipients, new Date(now + BUSY_RETRY_MS), `${this.name} was busy: every connection to it was taken`));
    }
  }

  private postponeQueue(until: Date, reason: string): void {
    for (const job of this.queue.splice(0)) job.resolve(postponed(job.attempt.recipients, until, reason));
  }

  /** Attempts still queued when they must leave are postponed even while every runner is busy. */
  private scheduleSweep(): void {
    if (this.sweep || this.queue.length === 0) return;
    const earliest = Math.min(...this.queue.map((job) => job.leaveBy));
    this.sweep = setTimeout(() => {
      this.sweep = undefined;
      this.expireQueue(this.settings.now());
      if (this.queue.length > 0) this.scheduleSweep();
    }, Math.max(0, earliest - this.settings.now()));
    this.sweep.unref();
  }

  /**
   * One attempt: each server in turn, each of its addresses in turn, until every recipient is
   * settled; what no server settled is deferred with the last refusal. Answers the connection to
   * keep for the next attempt.
   */
  private async deliver(job: Job, kept: Connection | null, envelopeReplies: Promise<Reply>[] | undefined): Promise<{ connection: Connection | null; ahead: Ahead | null }> {
    this.active.add(job);
    try {
      return await this.deliverVia(job, kept, envelopeReplies);
    } finally {
      this.active.delete(job);
    }
  }

  /**
   * The next attempt, taken from the queue to go out behind the message under way on `connection`
   * (PIPELINING), when it goes to the same server from the same pool and may start now.
   */
  private takeAhead(connection: Connection): Job | null {
    const now = this.settings.now();
    const head = this.queue[0];
    if (!head || this.closing || now < this.pausedUntil || this.rateWait(now) > 0) return null;
    if (connection.sent + 1 >= this.limits.messagesPerConnection || head.attempt.pool !== connection.pool) return null;
    if (head.attempt.hosts[0]?.addresses[0] !== connection.remote.address) return null;
    this.queue.shift();
    this.starts.push(now);
    return head;
  }

  /**
   * An attempt that went out ahead but cannot follow on this connection (the one before it needs
   * another server) goes back to the head of the queue. A DATA the server opened for it cannot be
   * taken back (its end would deliver an empty message): the connection is dropped; an envelope
   * short of that is reset.
   */
  private async putBack(ahead: Ahead, connection: Connection): Promise<void> {
    const replies = await Promise.all(ahead.replies.map((reply) => reply.catch(() => null)));
    if (replies.at(-1)?.code === 354) connection.session.destroy();
    else if (!connection.session.closed && replies.some((reply) => reply && positive(reply))) {
      await connection.session.command('RSET').catch(() => connection.session.destroy());
    }
    this.queue.unshift(ahead.job);
  }

  private async deliverVia(job: Job, kept: Connection | null, envelopeReplies: Promise<Reply>[] | undefined): Promise<{ connection: Connection | null; ahead: Ahead | null }> {
    const { attempt } = job;
    let ahead: Ahead | null = null;
    const results: RecipientResult[] = [];
    let remaining = attempt.recipients;
    let refusal: { reply: string; code: number | null; remote: Remote | null } = { reply: 'no mail server of the domain could be reached', code: null, remote: null };
    let connection = kept;
    let reached = false;
    for (const host of attempt.hosts) {
      for (const address of host.addresses) {
        if (remaining.length === 0) break;
        if (!connection || connection.session.closed || connection.remote.address !== address || connection.pool !== attempt.pool || connection.sent >= this.limits.messagesPerConnection) {
          // Closed before the next one opens, so that the destination never sees more connections than the cap.
          if (connection) await connection.session.quit();
          connection = null;
          const opened = await this.connect(host.name, address, attempt.pool);
          if ('failure' in opened) {
            refusal = { reply: opened.failure, code: opened.code, remote: { host: host.name, address, tls: false } };
            if (opened.slowDown) this.slowDown();
            continue;
          }
          connection = opened;
        }
        reached = true;
        connection.sent++;
        const open = connection;
        let taken: Job | null = null;
        const lookahead = () => {
          taken = this.takeAhead(open);
          return taken && { from: taken.attempt.from, recipients: taken.attempt.recipients };
        };
        // The envelope sent ahead for this attempt answers its first transaction, on this connection.
        const replies = connection === kept ? envelopeReplies : undefined;
        envelopeReplies = undefined;
        const done = await transact(connection.session, { from: attempt.from, recipients: remaining, body: attempt.message }, connection.remote, { envelopeReplies: replies, lookahead });
        if (taken && done.ahead) ahead = { job: taken, replies: done.ahead };
        results.push(...done.settled);
        remaining = done.retry;
        if (ahead && remaining.length > 0) {
          await this.putBack(ahead, connection);
          ahead = null;
        }
        if (done.refusal) refusal = { ...done.refusal, remote: connection.remote };
        if (done.slowDown) this.slowDown();
        if (done.settled.some((result) => result.status === 'delivered')) this.recovered();
      }
      if (remaining.length === 0) break;
    }
    results.push(...deferred(remaining, refusal.reply, refusal.code, refusal.remote));
    // A destination none of whose servers answers, attempt after attempt, is down: it is paused
    // like one that asks us to slow down, rather than tied up in connection timeouts.
    this.unreachable = reached ? 0 : this.unreachable + 1;
    if (this.unreachable >= DOWN_AFTER) this.slowDown();
    this.countFinished(this.settings.now());
    for (const status of ['delivered', 'deferred', 'bounced'] as const) {
      const count = results.filter((result) => result.status === status).length;
      if (count > 0) this.count(attempt.teamId, this.name, status, count);
    }
    job.resolve(results);
    if (connection && (connection.session.closed || connection.sent >= this.limits.messagesPerConnection)) {
      if (ahead) this.queue.unshift(ahead.job);
      await connection.session.quit();
      return { connection: null, ahead: null };
    }
    return { connection, ahead };
  }

  private async connect(host: string, address: string, pool: string): Promise<Connection | { failure: string; code: number | null; slowDown: boolean }> {
    const addresses = this.settings.poolAddresses(pool);
    if (!addresses) return { failure: `IP pool ${pool} is not configured (IP_POOLS)`, code: null, slowDown: false };
    const source = addresses.next();
    try {
      const session = await RelaySession.open(
        {
          host: address,
          port: this.settings.mxPort,
          secure: false,
          requireTLS: this.settings.requireTls,
          ignoreTLS: false,
          // Opportunistic: a certificate nobody can vouch for still keeps the message from being read on the way.
          rejectUnauthorized: false,
          servername: host,
          auth: null,
          clientName: source.ehlo,
          localAddress: source.address || undefined,
        },
        this.settings.timeouts,
      );
      return { session, remote: { host, address, tls: session.encrypted }, pool, localAddress: source.address || null, sent: 0 };
    } catch (error) {
      const failure = error as Error & { code?: number | null };
      const code = typeof failure.code === 'number' ? failure.code : null;
      return { failure: failure.message, code, slowDown: code === 421 };
    }
  }

  /** Half the connections, and a pause that doubles each time until a delivery gets through. */
  private slowDown(): void {
    const now = this.settings.now();
    if (now < this.pausedUntil) return;
    this.limit = Math.max(1, Math.floor(this.limit / 2));
    this.pausedUntil = now + this.settings.backoffMs * Math.min(2 ** this.pauses, MAX_PAUSE_FACTOR);
    this.pauses++;
    // Connections past the new limit that wait for work close now: handed the next attempt after
    // the pause, they would keep the destination at its old number of connections. Those at work
    // end after their attempt (next()).
    for (let surplus = this.runners - this.limit; surplus > 0 && this.waiting.length > 0; surplus--) this.waiting.shift()!(null);
  }

  private recovered(): void {
    this.pauses = 0;
    if (this.limit < this.limits.maxConnections) this.limit++;
  }
}
