import { durationSeconds, planOf, type SendStep, type Step, type StepPlan } from '../audience/automation-steps.js';
import { compileTemplate, renderTemplate, UNSUBSCRIBE_PLACEHOLDERS } from '../campaigns/template.js';
import { addStepCounts, claimDueRuns, endBatchIfStalled, lockAutomations, moveRuns, runsMatching, setContactProperties, type DueRun } from '../data/automation-runs.js';
import { findRecipientValues, type RecipientValues } from '../data/campaign-mail.js';
import { findDomainSummary } from '../data/domains.js';
import type { NewEmail } from '../data/emails.js';
import { findTemplate } from '../data/templates.js';
import type { Db } from '../db/connection.js';
import type { RunHistoryEntry } from '../db/schema.js';
import type { Deps } from '../deps.js';
import { reportRuns, runsEnded } from '../events/automations.js';
import { reportWrittenContacts } from '../events/contacts.js';
import { storeNewEmails } from '../events/email-changes.js';
import { newSortableId } from '../ids.js';
import { domainOf, addressOf, formatMailbox, parseMailbox } from '../mail/address.js';
import { htmlToText } from '../mail/html.js';
import { listUnsubscribeHeaders, unsubscribeUrl } from '../mail/links.js';
import { unsubscribeAddress } from '../mail/verp.js';
import { startWorkerLoop } from '../workers/loop.js';

export type RunnerDeps = Pick<Deps, 'db' | 'dbKind' | 'config' | 'log' | 'signals' | 'metrics' | 'tokens' | 'clock'>;
export type AutomationRunner = {
  /** Runs every batch due now; what the timer runs. */
  tick(): Promise<void>;
  stop(): Promise<void>;
};

/** A send step whose sender domain is gone waits this long before it looks again. */
const SENDER_RETRY_MS = 15 * 60_000;
/** A batch idle this long in its transaction is taken for a dead runner's (see endBatchIfStalled). */
const STALLED_BATCH_SECONDS = 60;

/** One run as a batch carries it along its steps. */
type Walk = {
  run: DueRun;
  plan: StepPlan;
  reentry: boolean;
  contact: RecipientValues | undefined;
  stepId: string | null;
  /** Still moving in this batch (not at a wait, at its end, or held). */
  moving: boolean;
  waiting: boolean;
  nextAt: Date | null;
  status: 'ACTIVE' | 'COMPLETED' | 'EXITED';
  exitReason: string | null;
  history: RunHistoryEntry[];
};

type Counts = Map<string, { teamId: number; automationId: string; stepId: string; completed: number; exited: number }>;

/**
 * Walks due automation runs. Each batch is one transaction: claim due runs (SKIP LOCKED, so any
 * number of runners share the work), lock their automations against edits, then take every run as
 * far as it goes now (to a wait, the end, or an exit) one step type at a time across the whole
 * batch: a condition is one query for all the runs at it, an update one statement, the emails of
 * every send step one insert. The emails, the runs' new steps, the counters and the webhook calls
 * commit together: a crash before the commit leaves the runs due at the step they were at and no
 * email, after it, each email made once (and the emails' unique (run, step) key refuses a second).
 */
export function startAutomationRunner(deps: RunnerDeps, options: { autostart?: boolean } = {}): AutomationRunner {
  const { db, config, log } = deps;

  /** One batch of at most `size` due runs; answers how many it claimed. */
  const runBatch = async (size: number): Promise<number> => {
    const now = deps.clock();
    const done = await db.transaction().execute(async (tx) => {
      if (deps.dbKind === 'postgres') await endBatchIfStalled(tx, STALLED_BATCH_SECONDS);
      const runs = await claimDueRuns(tx, now, size);
      if (runs.length === 0) return null;
      const counts: Counts = new Map();
      const walks = await startWalks(tx, runs, now, counts);
      const emails: NewEmail[] = [];
      const stepsRun = new Map<string, number>();
      // Each round moves every run one step; a run comes to each step at most once (steps only lead forward).
      while (walks.some((walk) => walk.moving)) {
        const groups = groupBy(walks.filter((walk) => walk.moving), (walk) => `${walk.run.team_id} ${walk.run.automation_id} ${walk.stepId}`);
        for (const group of groups.values()) {
          const step = group[0]!.plan.get(group[0]!.stepId!)?.step;
          if (!step) {
            for (const walk of group) exitRun(walk, 'its step no longer exists', now, counts);
            continue;
          }
          stepsRun.set(step.type, (stepsRun.get(step.type) ?? 0) + group.length);
          await runStep(tx, step, group, { now, emails, counts });
        }
      }
      await storeNewEmails(tx, emails);
      const ended = await moveRuns(
        tx,
        walks.map((walk) => ({
          teamId: walk.run.team_id, id: walk.run.id, stepId: walk.stepId, nextAt: walk.nextAt, waiting: walk.waiting, status: walk.status,
          exitReason: walk.exitReason, reentry: walk.reentry, history: walk.history,
        })),
        now,
      );
      await addStepCounts(tx, [...counts.values()]);
      await reportRuns(tx, 'automation.run_completed', ended, now);
      return { runs: runs.length, emails: emails.length, stepsRun };
    });
    if (!done) return 0;
    for (const [type, count] of done.stepsRun) deps.metrics.automationStepsRun(type, count);
    if (done.emails > 0) {
      deps.metrics.emailsReached('QUEUED', done.emails);
      deps.signals.emit('emailsDue');
    }
    return done.runs;
  };

  /**
   * After a batch failed: its runs one at a time, so that a run whose step fails every time (a
   * definition an earlier version stored, say) leaves its automation, EXITED with the error as its
   * reason, once it failed twice alone, instead of holding up every run due after it.
   */
  const runOneByOne = async (failure: unknown) => {
    log.error('an automation batch failed; its runs go one at a time', { error: failure });
    for (let taken = 0; taken < config.automationBatchSize; taken++) {
      try {
        if ((await runBatch(1)) === 0) return;
      } catch {
        try {
          if ((await runBatch(1)) === 0) return;
        } catch (error) {
          await giveUpFirstDue(error);
        }
      }
    }
  };

  const giveUpFirstDue = async (error: unknown) => {
    const now = deps.clock();
    const reason = `failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 500);
    const run = await db.transaction().execute(async (tx) => {
      const [due] = await claimDueRuns(tx, now, 1);
      if (due) await runsEnded(tx, { teamId: due.team_id, runIds: [due.id] }, reason, now);
      return due;
    });
    if (run) log.error('an automation run failed at its step twice and left its automation', { automationId: run.automation_id, runId: run.id, stepId: run.step_id, error });
  };

  /** The batch's runs with their automations' steps and their contacts; runs of an automation an edit holds now stay for the next pass. */
  async function startWalks(tx: Db, runs: DueRun[], now: Date, counts: Counts): Promise<Walk[]> {
    const keys = [...new Map(runs.map((run) => [`${run.team_id} ${run.automation_id}`, { teamId: run.team_id, id: run.automation_id }])).values()];
    const automations = new Map(
      (await lockAutomations(tx, keys)).filter((a) => a.status === 'ACTIVE').map((a) => [`${a.team_id} ${a.id}`, { plan: planOf(a.steps as Step[]), reentry: a.allow_reentry }]),
    );
    const taken = runs.filter((run) => automations.has(`${run.team_id} ${run.automation_id}`));
    const contacts = new Map<string, RecipientValues>();
    for (const ofBook of groupBy(taken, (run) => `${run.team_id} ${run.contact_book_id}`).values()) {
      const { team_id: teamId, contact_book_id: bookId } = ofBook[0]!;
      for (const row of await findRecipientValues(tx, { teamId, bookId }, ofBook.map((run) => run.contact_id))) contacts.set(`${teamId} ${bookId} ${row.id}`, row);
    }
    const walks: Walk[] = [];
    for (const run of taken) {
      const automation = automations.get(`${run.team_id} ${run.automation_id}`)!;
      const walk: Walk = {
        run, plan: automation.plan, reentry: automation.reentry, contact: contacts.get(`${run.team_id} ${run.contact_book_id} ${run.contact_id}`),
        stepId: run.step_id, moving: true, waiting: false, nextAt: null, status: 'ACTIVE', exitReason: null, history: [],
      };
      walks.push(walk);
      // A run whose contact unsubscribed by a way that does not end runs itself leaves here.
      if (!walk.contact?.subscribed) exitRun(walk, 'unsubscribed', now, counts);
      else if (run.waiting) {
        // Its wait is over.
        walk.history.push({ stepId: run.step_id!, type: 'wait', at: now.toISOString(), outcome: 'waited' });
        advance(walk, walk.plan.get(run.step_id!)?.next ?? null, now, counts);
      }
    }
    return walks;
  }

  /** One step for every run of the group (all at the same step of one automation). */
  async function runStep(tx: Db, step: Step, group: Walk[], batch: { now: Date; emails: NewEmail[]; counts: Counts }) {
    const { now, counts } = batch;
    const at = now.toISOString();
    const passed = (walk: Walk, next: string | null, entry: Partial<RunHistoryEntry> = {}) => {
      walk.history.push({ stepId: step.id, type: step.type, at, ...entry });
      advance(walk, next, now, counts);
    };
    const next = group[0]!.plan.get(step.id)!.next;
    switch (step.type) {
      case 'wait': {
        const until = new Date(now.getTime() + durationSeconds(step.duration)! * 1000);
        for (const walk of group) Object.assign(walk, { moving: false, waiting: true, nextAt: until });
        return;
      }
      case 'exit':
        for (const walk of group) exitRun(walk, 'exit step', now, counts);
        return;
      case 'condition': {
        const { team_id: teamId } = group[0]!.run;
        const matched = await runsMatching(tx, teamId, group.map((walk) => walk.run.id), step.filter, now);
        for (const walk of group) {
          const branch = matched.has(walk.run.id) ? step.then : step.else;
          passed(walk, branch[0]?.id ?? next, { outcome: matched.has(walk.run.id) ? 'then' : 'else' });
        }
        return;
      }
      case 'update_contact': {
        const { team_id: teamId, contact_book_id: bookId } = group[0]!.run;
        const changed = await setContactProperties(tx, { teamId, bookId }, group.map((walk) => walk.run.contact_id), step.properties, now);
        await reportWrittenContacts(tx, { teamId, bookId, ids: changed }, 'contact.updated', now);
        for (const walk of group) {
          // A send step later in this batch reads the properties as they are now.
          walk.contact = { ...walk.contact!, properties: { ...walk.contact!.properties, ...step.properties } };
          passed(walk, next);
        }
        return;
      }
      case 'send': {
        const made = await sendMail(tx, step, group, now);
        if (!made) {
          log.warn('an automation send step waits: its sender domain or template is gone', { automationId: group[0]!.run.automation_id, stepId: step.id, from: step.from });
          for (const walk of group) Object.assign(walk, { moving: false, nextAt: new Date(now.getTime() + SENDER_RETRY_MS) });
          return;
        }
        for (const [index, walk] of group.entries()) {
          batch.emails.push(made[index]!);
          passed(walk, next, { emailId: made[index]!.id });
        }
        return;
      }
    }
  }

  /** The emails of a send step, one per run, rendered for each contact; null while its domain or template is missing. */
  async function sendMail(tx: Db, step: SendStep, group: Walk[], now: Date): Promise<NewEmail[] | null> {
    const teamId = group[0]!.run.team_id;
    const mailbox = parseMailbox(step.from);
    const domain = mailbox && (await findDomainSummary(tx, teamId, { name: domainOf(mailbox.address) }));
    const template = await findTemplate(tx, teamId, step.templateId);
    if (!mailbox || !domain || !template) return null;
    const subject = compileTemplate(step.subject ?? template.subject);
    const html = template.html === null ? null : compileTemplate(template.html);
    const text = compileTemplate(template.text ?? htmlToText(template.html ?? ''));
    const replyTo = step.replyTo ? [formatMailbox(parseMailbox(step.replyTo) ?? { name: null, address: step.replyTo })] : [];
    const from = formatMailbox(mailbox);
    const domainName = domainOf(addressOf(from));
    return group.map((walk) => {
      const contact = walk.contact!;
      const id = newSortableId();
      const unsubscribe = unsubscribeUrl(config.publicUrl, deps.tokens, { teamId, campaignId: '', emailId: id, bookId: walk.run.contact_book_id, contactId: contact.id });
      const values = new Map<string, string>();
      for (const [name, value] of Object.entries(contact.properties)) values.set(name.toLowerCase(), value);
      for (const [name, value] of Object.entries(walk.run.properties)) values.set(name.toLowerCase(), value);
      values.set('email', contact.email);
      values.set('firstname', contact.first_name ?? '');
      values.set('lastname', contact.last_name ?? '');
      for (const name of UNSUBSCRIBE_PLACEHOLDERS) values.set(name.toLowerCase(), unsubscribe);
      return {
        id, teamId, domainId: domain.id, from, to: [contact.email], cc: [], bcc: [], replyTo,
        subject: renderTemplate(subject, values, false),
        html: html && renderTemplate(html, values, true),
        text: renderTemplate(text, values, false),
        headers: listUnsubscribeHeaders(unsubscribe, unsubscribeAddress({ emailId: id, tag: deps.tokens.addressTag(id) }, domainName, config.returnPathSubdomain)),
        attachments: [],
        messageId: `<${id}@${domain.name}>`,
        templateId: template.id,
        scheduledAt: null, sendAt: now, createdAt: now,
        automation: { runId: walk.run.id, stepId: step.id, contactId: contact.id },
      };
    });
  }

  const loop = startWorkerLoop({
    pass: async (stopping) => {
      try {
        while (!stopping.aborted && (await runBatch(config.automationBatchSize)) === config.automationBatchSize);
      } catch (error) {
        await runOneByOne(error);
      }
    },
    pollMs: config.automationPollMs,
    onError: (error) => log.error('running automation steps failed', { error }),
    wakeOn: { signals: deps.signals, names: ['automationsDue'] },
    start: options.autostart !== false,
  });

  return { tick: () => loop.runNow(), stop: () => loop.stop() };
}

/** The run goes on to `next` (null: it reached the end), the step it leaves counted as completed. */
function advance(walk: Walk, next: string | null, now: Date, counts: Counts) {
  if (walk.stepId !== null) count(walk, counts, 'completed');
  walk.waiting = false;
  if (next === null) {
    walk.history.push({ stepId: walk.stepId!, type: 'end', at: now.toISOString() });
    walk.stepId = null;
    walk.status = 'COMPLETED';
    walk.moving = false;
    walk.nextAt = null;
    return;
  }
  walk.stepId = next;
}

/** The run leaves at the step it is at, counted there as exited. */
function exitRun(walk: Walk, reason: string, now: Date, counts: Counts) {
  count(walk, counts, 'exited');
  walk.history.push({ stepId: walk.stepId ?? '', type: 'exit', at: now.toISOString(), outcome: reason });
  Object.assign(walk, { status: 'EXITED', exitReason: reason, moving: false, waiting: false, nextAt: null });
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

function count(walk: Walk, counts: Counts, kind: 'completed' | 'exited') {
  if (walk.stepId === null) return;
  const key = `${walk.run.team_id} ${walk.run.automation_id} ${walk.stepId}`;
  const entry = counts.get(key) ?? { teamId: walk.run.team_id, automationId: walk.run.automation_id, stepId: walk.stepId, completed: 0, exited: 0 };
  entry[kind]++;
  counts.set(key, entry);
}
