/**
 * Webhooks against sending: a campaign to a book of N contacts delivered twice, each time on a
 * fresh database: once with no webhook (off) and once with one webhook subscribed to every email
 * event (on), its calls made
 * by the webhook sender in the same process as the dispatcher, to a loopback receiver in a
 * process of its own that answers 200 at once.
 *
 *   npx tsx bench/webhooks.ts [postgres://…/db] [contacts]   (no URL: embedded PGlite)
 *
 * The bar (the issue's): delivery with the webhook on at ≥ 0.9 × the rate with it off, and every
 * call arriving. Each phase releases its campaign with the releaser, then a dispatcher drains
 * the queue (the delivery rate compared); in the on phase the sender runs from before the release
 * until the receiver has every call and the database has each one DELIVERED. A call that never
 * arrives fails the benchmark.
 */
import os from 'node:os';
import { sql } from 'kysely';
import { EVENT_TYPES } from '../src/events/contract.js';
import { AllowList } from '../src/webhooks/address-guard.js';
import { callBody } from '../src/webhooks/payload.js';
import { WebhookPoster } from '../src/webhooks/post.js';
import { slotsPerWebhook, startWebhookSender, type WebhookSender } from '../src/webhooks/sender.js';
import { signedHeaders } from '../src/webhooks/signing.js';
import { startCpuSplit } from './cpu-split.js';
import { createCampaign, importBook, releaseAll, startBenchHarness, startLineProcess, type BenchHarness } from './harness.js';

export type WebhooksBenchResult = {
  database: 'postgres' | 'pglite';
  contacts: number;
  /** coreSeconds: the CPU the delivery took of the benchmark's own parts (this process, the database, the sink). */
  off: { releasePerSecond: number; messagesPerSecond: number; seconds: number; coreSeconds: number };
  on: { releasePerSecond: number; messagesPerSecond: number; seconds: number; coreSeconds: number };
  /** on.messagesPerSecond / off.messagesPerSecond: the bar is ≥ 0.9. */
  ratio: number;
  calls: {
    /** Calls the on phase wrote for the webhook (email.queued, email.sent, email.delivered of each email). */
    total: number;
    delivered: number;
    /** Distinct webhook-id values the receiver saw. */
    received: number;
    requests: number;
    /** Requests beyond the first for a call id (at least once: a repeat is allowed, a loss is not). */
    duplicates: number;
    /** From the start of campaign B's release until the receiver saw the last new call id. */
    secondsToLastCall: number;
    callsPerSecond: number;
    /** Calls the receiver still lacked when the dispatcher had delivered every email. */
    behindAtDeliveryEnd: number;
    /** From the last email's outcome being written until the receiver saw the last new call id. */
    secondsAfterLastEmail: number;
    /** The receiver's CPU per call (a real receiver's cost, on the same cores as everything else). */
    receiverCpuMsPerCall: number;
    /**
     * Whether both goals can hold on this machine at all: what a call costs the whole machine
     * (sender, its database writes and the receiver), measured while the calls held back during
     * the delivery were caught up; the CPU that making 90 % of the calls during the delivery needs;
     * and the CPU a delivery at 0.9 × the rate without them leaves spare. Null when no call was
     * left to catch up (nothing to measure). The floor beside it: what a call costs with no
     * database work at all (barePosts), and what 90 % of the calls during the delivery need at it,
     * which no sender could go below with node's HTTP client.
     */
    bound: {
      callCpuMs: number; coreSecondsNeeded: number; coreSecondsSpare: number; cores: number;
      floor: { calls: number; callCpuMs: number; senderCpuMs: number; receiverCpuMs: number; coreSecondsNeeded: number };
    } | null;
  };
  /** Of the on phase: server, releaser, dispatcher and webhook sender (on PGlite, the database too). */
  peakRssMb: number;
  /** Why the benchmark failed (calls lost), with the figures it had measured. */
  failure?: string;
};

/** A failed benchmark, with what it measured before it failed. */
export class WebhooksBenchFailure extends Error {
  constructor(message: string, readonly partial: WebhooksBenchResult) {
    super(message);
  }
}

/** How long the calls may take to arrive after the last email went out before the benchmark gives up. */
const CALLS_DEADLINE_MS = 5 * 60_000;
const EMAIL_EVENTS = EVENT_TYPES.filter((type) => type.startsWith('email.'));

/** Whether `promise` settles within `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Stops the sender. One that does not stop within 10 s has a statement stuck in the database
 * (a benchmark that failed): on PostgreSQL its statements are cancelled, so the benchmark can end
 * and drop its database. Answers whether it stopped.
 */
async function stopSender(sender: WebhookSender, bench: BenchHarness): Promise<boolean> {
  const stopped = sender.stop();
  if (await within(stopped, 10_000)) return true;
  if (bench.server.deps.dbKind === 'postgres') {
    await sql`SELECT pg_cancel_backend(pid) FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`.execute(bench.server.deps.db);
  }
  return within(stopped, 30_000);
}

type ReceiverCounts = { requests: number; distinct: number; lastNewAtMs: number };

async function startReceiver() {
  const receiver = await startLineProcess('bench/webhooks/receiver.ts');
  return {
    ...receiver,
    async counts(): Promise<ReceiverCounts> {
      const line = await receiver.ask('?');
      return JSON.parse(line.slice(line.indexOf(' ') + 1)) as ReceiverCounts;
    },
  };
}

/** The benchmark's own parts of a CPU split (this process, the database, the sink, the receiver), not the rest of the machine. */
const OWN_PARTS = /^(this process|postgres backends|process bench\/)/;

/** The sum of `amount` over the parts of a CPU split named by `parts`. */
const cpuOf = <T extends { part: string }>(entries: T[], parts: RegExp, amount: (entry: T) => number) =>
  entries.filter((entry) => parts.test(entry.part)).reduce((sum, entry) => sum + amount(entry), 0);

/** The receiver's process in a CPU split. */
const RECEIVER_PART = /^process bench\/webhooks\/receiver/;
const cpuSeconds = (entry: { seconds: number }) => entry.seconds;

/** The sum of `amount` over the benchmark's own parts of a CPU split. */
const ownCpu = <T extends { part: string }>(entries: T[], amount: (entry: T) => number) => cpuOf(entries, OWN_PARTS, amount);

/** Creates a campaign to the whole book, releases every recipient and delivers them all. */
async function sendCampaign(bench: BenchHarness, bookId: string, name: string, total: number) {
  const campaign = await createCampaign(bench, bookId, name, 5_000);
  const releaseSeconds = await releaseAll(bench, campaign.id, total);
  const delivery = await bench.deliver();
  if (delivery.receivedBySink !== total) throw new Error(`${name}: the sink received ${delivery.receivedBySink} of ${total}`);
  const cpuMsPerMessage = ownCpu(delivery.cpu, (entry) => entry.msPerMessage);
  return {
    releasePerSecond: Math.round(total / releaseSeconds), messagesPerSecond: delivery.messagesPerSecond, seconds: delivery.seconds,
    coreSeconds: Number(((cpuMsPerMessage * total) / 1000).toFixed(2)),
  };
}

/**
 * The least CPU both goals ask for together, against what the machine has: 90 % of the calls made
 * during the delivery, at what a call cost while catching up, and a delivery no slower than 0.9 ×
 * the rate without calls, which leaves the cores' time over that longer delivery minus the
 * delivery's own work.
 */
function callsBound(run: {
  calls: number; behindAtDeliveryEnd: number; catchUpSeconds: number; off: { seconds: number; coreSeconds: number };
  floor: { calls: number; senderSeconds: number; receiverSeconds: number };
}) {
  const cores = os.availableParallelism();
  const needed = (msPerCall: number) => Number(((0.9 * run.calls * msPerCall) / 1000).toFixed(1));
  const callCpuMs = (run.catchUpSeconds * 1000) / run.behindAtDeliveryEnd;
  const perFloorCall = (seconds: number) => (seconds * 1000) / run.floor.calls;
  const floorCpuMs = perFloorCall(run.floor.senderSeconds + run.floor.receiverSeconds);
  return {
    callCpuMs: Number(callCpuMs.toFixed(3)),
    coreSecondsNeeded: needed(callCpuMs),
    coreSecondsSpare: Number(Math.max(0, (cores * run.off.seconds) / 0.9 - run.off.coreSeconds).toFixed(1)),
    cores,
    floor: {
      calls: run.floor.calls,
      callCpuMs: Number(floorCpuMs.toFixed(3)),
      senderCpuMs: Number(perFloorCall(run.floor.senderSeconds).toFixed(3)),
      receiverCpuMs: Number(perFloorCall(run.floor.receiverSeconds).toFixed(3)),
      coreSecondsNeeded: needed(floorCpuMs),
    },
  };
}

/**
 * The least a webhook call can cost this machine: `count` calls posted as the sender posts them
 * (signed, through its poster, as many at once as it gives one webhook) to the receiver, with
 * bodies of calls the run made, but no database work before or after. Answers the CPU of this
 * process and of the receiver.
 */
async function barePosts(bench: BenchHarness, receiverUrl: string, secret: string, count: number) {
  const { db, config } = bench.server.deps;
  const samples = await db.selectFrom('webhook_calls').select(['id', 'type', 'team_id', 'data', 'created_at']).limit(64).execute();
  const poster = new WebhookPoster({
    allow: new AllowList(['127.0.0.1']), lookup: async (host) => [host], timeoutMs: config.webhookTimeoutMs, maxSocketsPerHost: config.webhookConcurrency,
  });
  const cpu = startCpuSplit();
  let next = 0;
  await Promise.all(
    Array.from({ length: slotsPerWebhook(config.webhookConcurrency) }, async () => {
      for (let i = next++; i < count; i = next++) {
        const sample = samples[i % samples.length]!;
        const call = { ...sample, id: `bare_${i}` };
        const body = JSON.stringify(callBody(call, 1));
        const result = await poster.post(receiverUrl, signedHeaders({ secret, callId: call.id, type: call.type, body, retry: false, now: new Date() }), body);
        if (!result.ok) throw new Error(`a bare webhook post failed: ${result.error}`);
      }
    }),
  );
  const split = cpu();
  return { calls: count, senderSeconds: cpuOf(split, /^this process/, cpuSeconds), receiverSeconds: cpuOf(split, RECEIVER_PART, cpuSeconds) };
}

export async function benchWebhooks(options: { databaseUrl?: string; contacts?: number } = {}): Promise<WebhooksBenchResult> {
  const total = options.contacts ?? 20_000;
  // Off: no webhook at all, on a database of its own, so that neither phase runs on the rows the
  // other left (a second campaign on the same tables would be slower for that alone).
  const offBench = await startBenchHarness(options.databaseUrl);
  let off: Awaited<ReturnType<typeof sendCampaign>>;
  try {
    off = await sendCampaign(offBench, (await importBook(offBench, total)).id, 'Bench', total);
  } finally {
    await offBench.close();
  }

  const receiver = await startReceiver();
  const bench = await startBenchHarness(options.databaseUrl);
  let sender: WebhookSender | undefined;
  try {
    const { api } = bench;
    const { db } = bench.server.deps;
    const book = await importBook(bench, total);

    // On: one webhook hearing every email event, the sender running from before the release.
    const webhook = await api('POST', '/webhooks', { url: `http://127.0.0.1:${receiver.port}/hook`, events: EMAIL_EVENTS });
    if (typeof webhook.secret !== 'string' || !webhook.secret.startsWith('whsec_')) throw new Error('the new webhook came without its secret');
    bench.resetPeakRss();
    const startedAtMs = Date.now();
    sender = startWebhookSender(bench.server.deps);
    const receiverCpu = startCpuSplit();
    const on = await sendCampaign(bench, book.id, 'Bench', total);
    const lastEmailAtMs = Date.now();

    const callCounts = async () => {
      const rows = await db
        .selectFrom('webhook_calls')
        .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
        .where('webhook_id', '=', webhook.id)
        .groupBy('status')
        .execute();
      const by = Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
      return { total: rows.reduce((sum, row) => sum + Number(row.n), 0), delivered: by.DELIVERED ?? 0, by };
    };
    // Every email is out, so every call is written: the total no longer moves.
    const { total: calls } = await callCounts();
    const behindAtDeliveryEnd = calls - (await receiver.counts()).distinct;
    const catchUpCpu = startCpuSplit();
    const deadline = Date.now() + CALLS_DEADLINE_MS;
    let nextProgress = Date.now() + 15_000;
    const progress = (what: string) => {
      if (Date.now() < nextProgress) return;
      nextProgress = Date.now() + 15_000;
      console.error(`webhooks: ${what} after ${((Date.now() - startedAtMs) / 1000).toFixed(0)} s`);
    };
    // The receiver first (its own process: asking costs the sender nothing), then the database.
    let seen = await receiver.counts();
    while (seen.distinct < calls && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      seen = await receiver.counts();
      progress(`${seen.distinct} of ${calls} calls received`);
    }
    const catchUpSeconds = ownCpu(catchUpCpu(), cpuSeconds);
    let state = await callCounts();
    while (state.delivered < calls && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      state = await callCounts();
      progress(`${state.delivered} of ${calls} calls recorded DELIVERED`);
    }
    const senderStopped = await stopSender(sender, bench);
    sender = undefined;
    seen = await receiver.counts();

    const secondsToLastCall = seen.lastNewAtMs > 0 ? (seen.lastNewAtMs - startedAtMs) / 1000 : 0;
    const receiverSeconds = cpuOf(receiverCpu(), RECEIVER_PART, cpuSeconds);
    // After the receiver's own figures are taken: these posts are not the run's.
    const floor = behindAtDeliveryEnd > 0 ? await barePosts(bench, `http://127.0.0.1:${receiver.port}/bare`, webhook.secret, Math.min(calls, 30_000)) : null;
    const result: WebhooksBenchResult = {
      database: bench.server.deps.dbKind,
      contacts: total,
      off,
      on,
      ratio: Number((on.messagesPerSecond / off.messagesPerSecond).toFixed(2)),
      calls: {
        total: calls,
        delivered: state.delivered,
        received: seen.distinct,
        requests: seen.requests,
        duplicates: seen.requests - seen.distinct,
        secondsToLastCall: Number(secondsToLastCall.toFixed(2)),
        callsPerSecond: secondsToLastCall > 0 ? Math.round(seen.distinct / secondsToLastCall) : 0,
        behindAtDeliveryEnd,
        secondsAfterLastEmail: seen.lastNewAtMs > 0 ? Number(Math.max(0, (seen.lastNewAtMs - lastEmailAtMs) / 1000).toFixed(2)) : 0,
        receiverCpuMsPerCall: seen.requests > 0 ? Number(((receiverSeconds * 1000) / seen.requests).toFixed(3)) : 0,
        bound: floor ? callsBound({ calls, behindAtDeliveryEnd, catchUpSeconds, off, floor }) : null,
      },
      peakRssMb: bench.peakRssMb(),
    };
    if (seen.distinct !== calls || state.delivered !== calls) {
      const message =
        `webhook calls lost: ${calls} written (${JSON.stringify(state.by)}), ${seen.distinct} distinct call ids received ` +
        `(${seen.requests} requests) within ${CALLS_DEADLINE_MS / 1000} s of the last email` +
        `${senderStopped ? '' : ' (the sender did not stop: a statement of its was still running)'}`;
      throw new WebhooksBenchFailure(message, { ...result, failure: message });
    }

    // The call log as the API shows it agrees with the database.
    const log = await api('GET', `/webhooks/${webhook.id}/calls?status=DELIVERED&limit=100`);
    if (log.count !== calls || log.data.some((call: { status: string }) => call.status !== 'DELIVERED')) {
      throw new Error(`GET /v1/webhooks/{id}/calls answers ${log.count} DELIVERED calls of ${calls}`);
    }

    return result;
  } finally {
    if (sender) await stopSender(sender, bench);
    // A sender that would not stop may hold a connection that closing waits for.
    await within(bench.close(), 30_000);
    await receiver.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const contacts = process.argv[3] ? Number(process.argv[3]) : undefined;
  try {
    console.log(JSON.stringify(await benchWebhooks({ databaseUrl: process.argv[2] || undefined, contacts }), null, 2));
  } catch (error) {
    // The figures so far, for bench/run.ts to write down with the failure.
    if (error instanceof WebhooksBenchFailure) console.log(JSON.stringify(error.partial, null, 2));
    console.error(error);
    // Whatever a stuck sender still holds must not keep the process alive.
    process.exit(1);
  }
}
