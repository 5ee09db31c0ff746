import type { Envelope } from '../../mail/mime.js';
import { dataBlock, positive, RelaySession, sameTimeouts, SessionFailure, type Reply } from './relay-session.js';
import { parseRelayUrl, type RelayOptions } from './relay-url.js';
import type { DeliveryResult, RecipientRejection, Transport } from './types.js';

export type SmtpOptions = { url: string; poolSize: number; maxMessagesPerConnection: number; timeoutMs: number };

type Job = {
  envelope: Envelope;
  message: Buffer;
  resolve(result: DeliveryResult): void;
  /** Given back to the queue once already, after a session died before its message went out. */
  requeued: boolean;
};

const permanent = (reply: Reply) => reply.code >= 500 && reply.code < 600;

const temporary = (response: string, code: number | null): DeliveryResult => ({ kind: 'temporary', response, code });

/**
 * Sorts the relay's replies to one transaction. Only the receiver refusing the message or its
 * recipients is permanent; trouble on our side of the relay (MAIL FROM, the session) is retried,
 * so a misconfiguration cannot bounce and suppress a whole list.
 */
function resultOf(mail: Reply, rejected: RecipientRejection[], accepted: number, data: Reply, final: Reply | null): DeliveryResult {
  if (!positive(mail)) return temporary(mail.text, mail.code);
  if (accepted === 0) {
    const first = rejected[0]!;
    if (rejected.every((rejection) => rejection.code !== null && rejection.code >= 500)) {
      return { kind: 'permanent', response: first.response, code: first.code, rejected };
    }
    return temporary(first.response, first.code);
  }
  const refusal = final ?? data;
  if (final && positive(final)) {
    // The receiving server took responsibility for the message: that is what DELIVERED means here.
    // A relay that later fails to pass it on reports back with a DSN (the inbound listener).
    return { kind: 'sent', response: final.text, rejected, feedback: [{ status: 'DELIVERED', data: { response: final.text } }] };
  }
  if (permanent(refusal)) return { kind: 'permanent', response: refusal.text, code: refusal.code, rejected };
  return temporary(refusal.text, refusal.code);
}

/**
 * Relays through one SMTP server (SMTP_URL) over a pool of up to `poolSize` sessions, each reused
 * for `maxMessagesPerConnection` messages and reopened when the relay closes it. Messages go as
 * built, with an explicit envelope, so the DKIM signature stays intact.
 *
 * With PIPELINING a message costs one write: its body and final dot, followed by the next
 * message's MAIL FROM, RCPT TO and DATA, whose replies come back with the final dot's. A library
 * client in lock-step writes four times and waits four round trips, which on loopback or a fast
 * link costs more than the message itself.
 */
export function smtpTransport(options: SmtpOptions): Transport {
  const pool = new RelayPool(parseRelayUrl(options.url), options);
  return {
    name: 'smtp',
    send: (_emailId, message, envelope) => pool.send(envelope, message),
    // Connects, greets and logs in as a send would, then quits: the relay's answer right now.
    async check() {
      const session = await RelaySession.open(pool.relay, sameTimeouts(options.timeoutMs));
      await session.quit();
    },
    close: () => pool.close(),
  };
}

/** A session lost during a transaction; `messageOut`: its message may have reached the relay. */
class LostSession {
  constructor(readonly failure: SessionFailure, readonly messageOut: boolean) {}
}

const lost = (messageOut: boolean) => (error: unknown): never => {
  throw new LostSession(error instanceof SessionFailure ? error : new SessionFailure((error as Error).message), messageOut);
};

type Transacted = { result: DeliveryResult; next: { job: Job; replies: Promise<Reply>[] } | null };

class RelayPool {
  private readonly queue: Job[] = [];
  /** Sessions with nothing to do, each waiting for a job (or undefined: time to quit). */
  private readonly idle: Array<(job: Job | undefined) => void> = [];
  private readonly running = new Set<Promise<boolean>>();
  private live = 0;
  private closing = false;

  constructor(readonly relay: RelayOptions, private readonly options: SmtpOptions) {}

  send(envelope: Envelope, message: Buffer): Promise<DeliveryResult> {
    if (this.closing) return Promise.resolve(temporary('the transport is closing', null));
    // An address that would end its command line early could smuggle commands into the session.
    if ([envelope.from, ...envelope.to].some((address) => /[\r\n<>]/.test(address))) {
      return Promise.resolve({ kind: 'permanent', response: 'an envelope address holds a line break or an angle bracket', code: null, rejected: [] });
    }
    return new Promise<DeliveryResult>((resolve) => this.enqueue({ envelope, message, resolve, requeued: false }));
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const wake of [...this.idle]) wake(undefined);
    while (this.running.size > 0) await Promise.all(this.running);
    for (const job of this.queue.splice(0)) job.resolve(temporary('the transport closed before the message went out', null));
  }

  private enqueue(job: Job, first = false): void {
    const wake = this.idle.pop();
    if (wake) return wake(job);
    if (first) this.queue.unshift(job);
    else this.queue.push(job);
    if (this.running.size < this.options.poolSize) this.start();
  }

  private start(): void {
    const run: Promise<boolean> = this.serve().finally(() => this.running.delete(run));
    this.running.add(run);
    // A session used up or timed out makes way for another while mail waits; one that never
    // opened does not, or a relay that is down would be dialled in a loop.
    void run.then((opened) => {
      if (opened && this.queue.length > 0 && !this.closing && this.running.size < this.options.poolSize) this.start();
    });
  }

  private next(session: RelaySession): Promise<Job | undefined> | Job | undefined {
    const job = this.queue.shift();
    if (job || this.closing || session.closed) return job;
    return new Promise<Job | undefined>((resolve) => {
      const wake = (job: Job | undefined) => {
        clearTimeout(timer);
        stopListening();
        const at = this.idle.indexOf(wake);
        if (at !== -1) this.idle.splice(at, 1);
        resolve(job);
      };
      // An idle session is closed after SMTP_TIMEOUT_MS, as the relay would close it anyway.
      const timer = setTimeout(() => wake(undefined), this.options.timeoutMs);
      const stopListening = session.onClose(() => wake(undefined));
      this.idle.push(wake);
    });
  }

  /** One session's life: opened, then given jobs until it is used up, idle too long, or lost. Answers whether it opened. */
  private async serve(): Promise<boolean> {
    let session: RelaySession;
    try {
      session = await RelaySession.open(this.relay, sameTimeouts(this.options.timeoutMs));
    } catch (error) {
      // With no session up, the relay cannot be reached now: everything waiting is retried later.
      if (this.live === 0) {
        const failure = error as SessionFailure;
        for (const job of this.queue.splice(0)) job.resolve(temporary(failure.message, failure.code));
      }
      return false;
    }
    this.live++;
    try {
      await this.deliver(session);
    } finally {
      this.live--;
      await session.quit();
    }
    return true;
  }

  private async deliver(session: RelaySession): Promise<void> {
    let sent = 0;
    let job = await this.next(session);
    let envelopeReplies: Promise<Reply>[] | null = null;
    while (job) {
      sent++;
      const mayTakeNext = sent < this.options.maxMessagesPerConnection && !this.closing;
      let done: Transacted;
      try {
        done = await this.transact(session, job, envelopeReplies, mayTakeNext);
      } catch (error) {
        const { failure, messageOut } = error as LostSession;
        // A message that never left goes back once, for another session to send.
        if (!messageOut && !job.requeued) this.enqueue({ ...job, requeued: true }, true);
        else job.resolve(temporary(failure.message, failure.code));
        return;
      }
      job.resolve(done.result);
      if (done.next) {
        job = done.next.job;
        envelopeReplies = done.next.replies;
      } else {
        envelopeReplies = null;
        job = mayTakeNext && !session.closed ? await this.next(session) : undefined;
      }
    }
  }

  /**
   * One transaction. `envelopeReplies`: its envelope already went out behind the previous message.
   * With PIPELINING and `mayTakeNext`, the next queued job's envelope goes out behind this message,
   * and is answered with its replies.
   */
  private async transact(session: RelaySession, job: Job, envelopeReplies: Promise<Reply>[] | null, mayTakeNext: boolean): Promise<Transacted> {
    const commands = session.envelopeCommands(job.envelope);
    const replies = await (envelopeReplies ? Promise.all(envelopeReplies) : session.sendEnvelope(commands)).catch(lost(false));
    const [mail, ...rest] = replies as [Reply, ...Reply[]];
    const data = rest.length === job.envelope.to.length + 1 ? rest.pop()! : null;
    const rejected = rest.flatMap((reply, i) => (positive(reply) ? [] : [{ address: job.envelope.to[i]!, response: reply.text, code: reply.code }]));
    const accepted = rest.length - rejected.length;
    if (!positive(mail) || accepted === 0 || data?.code !== 354) {
      const result = resultOf(mail, rejected, accepted, data ?? mail, null);
      // A DATA the relay opened anyway is closed empty; a transaction it holds open is reset. The
      // answer is known either way: a session that fails here is only not used again.
      const ending = data?.code === 354 ? session.send(dataBlock(Buffer.alloc(0)), 1)[0]! : positive(mail) ? session.command('RSET') : null;
      if (ending) await ending.then((reply) => positive(reply) || session.destroy(), () => session.destroy());
      return { result, next: null };
    }
    const after = mayTakeNext && session.pipelining ? this.queue.shift() : undefined;
    const afterCommands = after ? session.envelopeCommands(after.envelope) : [];
    const [final, ...afterReplies] = session.send([...dataBlock(job.message), ...afterCommands], 1 + afterCommands.length);
    // The next envelope's replies are awaited by that job's transaction, or dropped with it here.
    for (const reply of afterReplies) reply.catch(() => undefined);
    const finalReply = await final!.catch((error: unknown) => {
      if (after) this.enqueue(after, true);
      return lost(true)(error);
    });
    return { result: resultOf(mail, rejected, accepted, data, finalReply), next: after ? { job: after, replies: afterReplies } : null };
  }
}
