/**
 * Automations: 100,000 contacts entering an automation at once, the runner walking their runs'
 * due steps, and a send step's mail delivered next to a campaign of the same size.
 *
 *   npx tsx bench/automations.ts [postgres://…/db] [contacts] [emails]   (no URL: embedded PGlite; sizes for a trial)
 *
 * Entering: a book with an ACTIVE contact.added automation, and 100,000 new contacts imported
 * into it through POST /v1/contactBooks/{id}/contacts/bulk in requests of 10,000, one after
 * another (the service writes each request in chunks of 2,500, and each chunk's runs start in the
 * chunk's transaction): when the last request is answered every run exists. The same import into a
 * book no automation watches, just before, tells what entering adds; the INSERTs into
 * automation_runs are counted as the service sends them, to show one per chunk.
 *
 * Steps: those 100,000 runs, all due at the automation's first step, a condition on a property
 * (`plan` is "pro", half of them), followed by an update_contact and the end: an automation runner
 * of its own (no polling; its pass claims batches of AUTOMATION_BATCH_SIZE until one is not full)
 * walks them all. Steps: runs × 2.
 *
 * Sending: a book of SEND_CONTACTS[database] imported into the book of an automation whose first
 * step sends (a template as the campaign benchmark's message: personalised, a link, the
 * unsubscribe link), then a campaign to that book. Each is timed from when its mail is due (the
 * service's runner, or its releaser, starts together with a dispatcher, each polling as it does in
 * the service) until the sink has every message and every outcome is written: the campaign first, so the automation's mail meets the
 * larger emails table. Same sink, same process, same run.
 *
 * Peak RSS: of this process (server, runner or releaser, dispatcher; on PGlite the database too),
 * each phase from a full garbage collection. On PostgreSQL each timed phase starts just after a
 * checkpoint, so no phase pays alone for the first change of each page since the last.
 */
import os from 'node:os';
import { setTimeout } from 'node:timers/promises';
import { sql, type CompiledQuery } from 'kysely';
import { startAutomationRunner } from '../src/automations/runner.js';
import { startReleaser } from '../src/campaigns/releaser.js';
import { createCampaign, importBook, SENDER, startBenchHarness, type BenchHarness } from './harness.js';

export type AutomationsBenchResult = {
  database: 'postgres' | 'pglite';
  entering: {
    contacts: number;
    requests: number;
    seconds: number;
    contactsPerSecond: number;
    runsStarted: number;
    /** INSERT statements into automation_runs the import sent. */
    runStatements: number;
    /** The same import into a book no automation watches. */
    withoutAutomation: { seconds: number; contactsPerSecond: number } & Rss;
  } & Rss;
  steps: {
    runs: number;
    steps: number;
    batchSize: number;
    seconds: number;
    stepsPerSecond: number;
    /** This process's CPU (not PostgreSQL's) per 1,000 steps. */
    cpuMsPer1000Steps: number;
  } & Rss;
  sending: {
    emails: number;
    automation: Delivery;
    campaign: Delivery;
    /** Automation over campaign, emails delivered per second: the goal is ≥ 0.8. */
    ratio: number;
  };
  loadAverage: number;
};

/** RSS when the phase started, after a full collection, and its peak during the phase. */
type Rss = { startRssMb: number; peakRssMb: number };
type Delivery = { seconds: number; messagesPerSecond: number } & Rss;

const CONTACTS = 100_000;
const IMPORT_REQUEST = 10_000;
/** Sent by the automation, and by the campaign. */
const SEND_CONTACTS = { postgres: 50_000, pglite: 30_000 };
const CAMPAIGN_BATCH = 5_000;

const SUBJECT = 'Hello {{firstName,fallback=there}}';
const HTML = '<h1>Hello {{firstName}}</h1><p>Your plan: <b>{{plan}}</b>. A <a href="https://example.com">link</a>.</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>';

/**
 * Counts the statements matching `pattern` that the service sends while `work` runs: every query
 * goes through its Kysely executor's executeQuery (a transaction's executor is of the same class),
 * which is wrapped meanwhile.
 */
async function countingStatements<T>(bench: BenchHarness, pattern: RegExp, work: () => Promise<T>): Promise<{ result: T; statements: number }> {
  const executor = Object.getPrototypeOf(bench.server.deps.db.getExecutor()) as { executeQuery(query: CompiledQuery, ...rest: unknown[]): unknown };
  const original = executor.executeQuery;
  let statements = 0;
  executor.executeQuery = function (this: unknown, query, ...rest) {
    if (pattern.test(query.sql)) statements++;
    return original.call(this, query, ...rest);
  };
  try {
    return { result: await work(), statements };
  } finally {
    executor.executeQuery = original;
  }
}

/**
 * Starts a timed phase: on PostgreSQL a checkpoint (so that the phase logs whole pages only for
 * what it changes first), then a full collection. Answers RSS then, in MB.
 */
async function startPhase(bench: BenchHarness): Promise<number> {
  if (bench.databaseUrl) await sql`CHECKPOINT`.execute(bench.server.deps.db);
  bench.resetPeakRss();
  return Math.round(process.memoryUsage().rss / 2 ** 20);
}

const countOf = async (query: Promise<{ n: number | string | bigint }>) => Number((await query).n);

/** Times the import of `contacts` contacts into the book. */
async function timedImport(bench: BenchHarness, book: { id: string }, contacts: number, prefix: string) {
  const started = performance.now();
  await importBook(bench, contacts, (i) => `${prefix}${i}@example.org`, book);
  const seconds = (performance.now() - started) / 1000;
  return { seconds: Number(seconds.toFixed(2)), contactsPerSecond: Math.round(contacts / seconds) };
}

async function entering(bench: BenchHarness, teamId: number, contacts: number): Promise<{ result: AutomationsBenchResult['entering']; automationId: string }> {
  const { db } = bench.server.deps;
  const newBook = (name: string) => bench.api('POST', '/contactBooks', { name, variables: ['plan', 'stage'] }) as Promise<{ id: string }>;

  const unwatched = await newBook('No automation');
  const plainStart = await startPhase(bench);
  const withoutAutomation = { ...await timedImport(bench, unwatched, contacts, 'plain'), startRssMb: plainStart, peakRssMb: bench.peakRssMb() };

  const book = await newBook('Welcomed');
  const automation = await bench.api('POST', '/automations', {
    name: 'Welcome', status: 'ACTIVE', trigger: { type: 'contact.added', contactBookId: book.id },
    steps: [
      { id: 'plan', type: 'condition', filter: { all: [{ field: 'properties.plan', op: 'eq', value: 'pro' }] } },
      { id: 'welcomed', type: 'update_contact', properties: { stage: 'welcomed' } },
    ],
  });
  const startRssMb = await startPhase(bench);
  const { result: timed, statements } = await countingStatements(bench, /INSERT INTO automation_runs\b/, () => timedImport(bench, book, contacts, 'reader'));
  const peakRssMb = bench.peakRssMb();
  const runsStarted = await countOf(
    db.selectFrom('automation_runs').select((eb) => eb.fn.countAll().as('n'))
      .where('team_id', '=', teamId).where('automation_id', '=', automation.id).where('status', '=', 'ACTIVE').where('step_id', '=', 'plan')
      .executeTakeFirstOrThrow(),
  );
  if (runsStarted !== contacts) throw new Error(`${runsStarted} runs started for ${contacts} contacts`);
  return {
    automationId: automation.id,
    result: { contacts, requests: Math.ceil(contacts / IMPORT_REQUEST), ...timed, runsStarted, runStatements: statements, withoutAutomation, startRssMb, peakRssMb },
  };
}

async function steps(bench: BenchHarness, teamId: number, automationId: string, runs: number): Promise<AutomationsBenchResult['steps']> {
  const { deps } = bench.server;
  const startRssMb = await startPhase(bench);
  const runner = startAutomationRunner(deps, { autostart: false });
  const cpu = process.cpuUsage();
  const started = performance.now();
  await runner.tick();
  const seconds = (performance.now() - started) / 1000;
  const { user, system } = process.cpuUsage(cpu);
  await runner.stop();
  const peakRssMb = bench.peakRssMb();

  const completed = await countOf(
    deps.db.selectFrom('automation_runs').select((eb) => eb.fn.countAll().as('n'))
      .where('team_id', '=', teamId).where('automation_id', '=', automationId).where('status', '=', 'COMPLETED')
      .executeTakeFirstOrThrow(),
  );
  const updated = await countOf(
    sql<{ n: number }>`SELECT count(*) AS n FROM contacts WHERE team_id = ${teamId} AND properties @> '{"stage":"welcomed"}'`.execute(deps.db).then((r) => r.rows[0]!),
  );
  if (completed !== runs || updated !== runs) throw new Error(`of ${runs} runs ${completed} completed, ${updated} contacts updated`);
  const walked = runs * 2;
  return {
    runs,
    steps: walked,
    batchSize: deps.config.automationBatchSize,
    seconds: Number(seconds.toFixed(2)),
    stepsPerSecond: Math.round(walked / seconds),
    cpuMsPer1000Steps: Number(((user + system) / 1000 / (walked / 1000)).toFixed(1)),
    startRssMb,
    peakRssMb,
  };
}

/**
 * Delivers `expected` emails that a worker of the service's own makes (started with the clock, and
 * polling as in the service: a pass of the releaser may end early when the dispatcher holds its
 * campaign's row, and the next poll goes on), from a checkpoint and a collection; answers the rate
 * and the phase's peak RSS.
 */
async function timedDelivery(bench: BenchHarness, expected: number, startWorker: () => { stop(): Promise<void> }): Promise<Delivery> {
  const startRssMb = await startPhase(bench);
  let worker: { stop(): Promise<void> } | undefined;
  const { seconds, messagesPerSecond } = await bench.deliver(undefined, { making: async () => (worker = startWorker()), expected });
  await worker?.stop();
  return { seconds, messagesPerSecond, startRssMb, peakRssMb: bench.peakRssMb() };
}

async function sending(bench: BenchHarness, emails: number): Promise<AutomationsBenchResult['sending']> {
  const { deps } = bench.server;
  const book = await bench.api('POST', '/contactBooks', { name: 'Sent to', variables: ['plan'] });
  const template = await bench.api('POST', '/templates', { name: 'Hello', subject: SUBJECT, html: HTML });
  const automation = await bench.api('POST', '/automations', {
    name: 'Hello', status: 'ACTIVE', trigger: { type: 'contact.added', contactBookId: book.id },
    steps: [{ id: 'hello', type: 'send', templateId: template.id, from: SENDER }],
  });
  await importBook(bench, emails, (i) => `sent${i}@example.org`, book);

  const campaign = await createCampaign(bench, book.id, 'Hello', CAMPAIGN_BATCH);
  console.error(`automations on ${deps.dbKind}: a campaign to ${emails.toLocaleString('en')}…`);
  const campaignDelivery = await timedDelivery(bench, emails, () => startReleaser(deps));
  console.error(`automations on ${deps.dbKind}: the automation's send step to ${emails.toLocaleString('en')}…`);
  const automationDelivery = await timedDelivery(bench, emails, () => startAutomationRunner(deps));

  const sentBy = (column: 'campaign_id' | 'automation_run_id', value?: string) => {
    const query = deps.db.selectFrom('emails').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'DELIVERED');
    return countOf((value ? query.where(column, '=', value) : query.where(column, 'is not', null)).executeTakeFirstOrThrow());
  };
  const [byCampaign, byAutomation] = [await sentBy('campaign_id', campaign.id), await sentBy('automation_run_id')];
  if (byCampaign !== emails || byAutomation !== emails) throw new Error(`delivered ${byCampaign} by the campaign and ${byAutomation} by the automation ${automation.id}, not ${emails} each`);
  return {
    emails,
    automation: automationDelivery,
    campaign: campaignDelivery,
    ratio: Number((automationDelivery.messagesPerSecond / campaignDelivery.messagesPerSecond).toFixed(2)),
  };
}

export async function benchAutomations(databaseUrl?: string, sizes: { contacts?: number; emails?: number } = {}): Promise<AutomationsBenchResult> {
  const bench = await startBenchHarness(databaseUrl);
  try {
    const { db, dbKind } = bench.server.deps;
    const { contacts = CONTACTS, emails = SEND_CONTACTS[dbKind] } = sizes;
    const { id: teamId } = await db.selectFrom('teams').select('id').executeTakeFirstOrThrow();
    console.error(`automations on ${dbKind}: ${contacts.toLocaleString('en')} contacts entering…`);
    const entered = await entering(bench, teamId, contacts);
    // On PGlite a long statement holds this process's event loop: a pause lets the server close the
    // connections left idle meanwhile before the next call.
    await setTimeout(100);
    console.error(`automations on ${dbKind}: walking their steps…`);
    const walked = await steps(bench, teamId, entered.automationId, contacts);
    await setTimeout(100);
    const sent = await sending(bench, emails);
    return { database: dbKind, entering: entered.result, steps: walked, sending: sent, loadAverage: Number(os.loadavg()[0]!.toFixed(1)) };
  } finally {
    await bench.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [contacts, emails] = [process.argv[3], process.argv[4]].map((n) => (n ? Number(n) : undefined));
  console.log(JSON.stringify(await benchAutomations(process.argv[2] || undefined, { contacts, emails }), null, 2));
}
