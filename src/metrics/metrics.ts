import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { reuseFor } from '../reuse-for.js';

/** Mail due now, how long the oldest of it has been due (0 when none is), and automation runs due. */
export type QueueStats = { due: number; oldestDueSeconds: number; runsDue: number };

/** What the gauges read when they are scraped; everything else is counted as it happens. */
export type MetricSources = {
  queue: () => Promise<QueueStats>;
  /** Database connections running a statement or holding a transaction right now. */
  poolInUse: () => number;
};

/** A scrape within this long of the last reads the queue from then: scrapes cannot load the database. */
const QUEUE_CACHE_MS = 1000;

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
// A hand-over to the relay or a campaign batch may take up to a timeout of tens of seconds.
const SLOW_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * The process's metrics, in a registry of its own rather than prom-client's global one, so several
 * servers in one process (the tests) each count their own. Labels stay few: route templates,
 * statuses and classes, never an email's or a team's id.
 */
export class Metrics {
  private readonly registry = new Registry();
  private readonly registers = [this.registry];

  private readonly httpRequests = this.counter('mailroom_http_requests_total', 'HTTP requests answered, by method, route template and status', ['method', 'route', 'status']);
  private readonly httpDuration = this.histogram('mailroom_http_request_duration_seconds', 'Time from a request reaching the app to its response, by route template', SECONDS, ['route']);
  private readonly emails = this.counter('mailroom_emails_total', 'Emails reaching each status (one per status change recorded)', ['status']);
  private readonly smtpDuration = this.histogram('mailroom_smtp_send_duration_seconds', 'Time to hand one message to the relay, whatever it answered', SLOW_SECONDS);
  private readonly smtpReplies = this.counter('mailroom_smtp_replies_total', "The relay's answers to hand-overs, by reply class (2xx, 4xx, 5xx; error: no reply)", ['class']);
  private readonly webhookCalls = this.counter('mailroom_webhook_calls_total', 'Webhook call attempts recorded, by outcome (delivered, retry, failed, gone)', ['outcome']);
  private readonly directOutcomes = this.counter('mailroom_direct_deliveries_total', "Recipients' outcomes under direct delivery, by destination and result (delivered, deferred, bounced)", ['destination', 'result']);
  private readonly automationSteps = this.counter('mailroom_automation_steps_total', 'Automation steps run, by step type (wait, send, condition, update_contact, exit)', ['type']);
  private readonly releaseDuration = this.histogram('mailroom_release_batch_seconds', 'Time to release one campaign batch (claim, insert its emails, move the cursor, commit)', SLOW_SECONDS);

  constructor(private readonly sources: MetricSources) {
    collectDefaultMetrics({ register: this.registry });
    this.gauge('mailroom_queue_due', 'Emails due to be sent now and not sent yet (in flight included), across every process of the database', async () => (await this.queue())?.due);
    this.gauge('mailroom_queue_oldest_due_seconds', 'How long the email due the longest has been waiting', async () => (await this.queue())?.oldestDueSeconds);
    this.gauge('mailroom_automation_runs_due', 'Automation runs whose step is due now (paused automations included), across every process of the database', async () => (await this.queue())?.runsDue);
    this.gauge('mailroom_db_pool_in_use', "This process's database connections busy now (the embedded database has one)", () => sources.poolInUse());
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of every family. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  request(method: string, route: string, status: number, seconds: number): void {
    this.httpRequests.inc({ method, route, status });
    this.httpDuration.observe({ route }, seconds);
  }

  /** Counted by whoever moved the emails, once the write has committed. */
  emailsReached(status: string, count = 1): void {
    if (count > 0) this.emails.inc({ status }, count);
  }

  /** `code` null: no reply at all (the connection failed or timed out). */
  smtpReply(code: number | null, seconds: number): void {
    this.smtpDuration.observe(seconds);
    this.smtpReplies.inc({ class: code === null ? 'error' : `${Math.floor(code / 100)}xx` });
  }

  directDeliveries(destination: string, result: string, count: number): void {
    if (count > 0) this.directOutcomes.inc({ destination, result }, count);
  }

  /** Reads each destination's queue when scraped: attempts waiting in this process for a connection. */
  watchDirectQueues(read: () => Array<{ name: string; queued: number }>): void {
    const gauge: Gauge<'destination'> = new Gauge({
      name: 'mailroom_direct_queue',
      help: 'Attempts waiting in this process for a connection to their destination (direct delivery)',
      labelNames: ['destination'],
      registers: this.registers,
      collect: () => {
        gauge.reset();
        for (const destination of read()) gauge.set({ destination: destination.name }, destination.queued);
      },
    });
  }

  webhookCall(outcome: string): void {
    this.webhookCalls.inc({ outcome });
  }

  /** Counted by the automation runner once its batch has committed. */
  automationStepsRun(type: string, count: number): void {
    if (count > 0) this.automationSteps.inc({ type }, count);
  }

  releaseBatch(seconds: number): void {
    this.releaseDuration.observe(seconds);
  }

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: this.registers });
  }

  private histogram<L extends string = never>(name: string, help: string, buckets: number[], labelNames: readonly L[] = []): Histogram<L> {
    return new Histogram({ name, help, buckets, labelNames, registers: this.registers });
  }

  /** A gauge read when scraped; undefined (a failed read) shows as NaN rather than a made-up number. */
  private gauge(name: string, help: string, read: () => number | undefined | Promise<number | undefined>): void {
    const gauge: Gauge = new Gauge({ name, help, registers: this.registers, collect: async () => gauge.set((await read()) ?? Number.NaN) });
  }

  /** The queue as last read, read again when older than the cache; undefined when the read failed. */
  private readonly queue = reuseFor(QUEUE_CACHE_MS, () => this.sources.queue().catch(() => undefined));
}
