import { z } from 'zod';
import { fieldPath } from '../validation.js';
import { filterSchema, namedSteps, type Filter } from './segment-filter.js';

/**
 * What an automation is: a trigger on one contact book and a list of steps, each with an id that
 * stays the same across edits (runs are kept at a step by its id). A condition holds two lists of
 * its own; when one ends, the run goes on after the condition. Nothing jumps back, so a run comes
 * to each step at most once, and a send step sends at most once per run.
 */

export const MAX_STEPS = 100;
/** Conditions nested in conditions, the top list at depth 1. */
export const MAX_DEPTH = 5;
const MIN_WAIT_SECONDS = 1;
const MAX_WAIT_SECONDS = 365 * 86_400;

const UNITS: Record<string, number> = { second: 1, minute: 60, hour: 3_600, day: 86_400, week: 7 * 86_400 };
const DURATION = /^\s*(\d{1,9})\s*(second|minute|hour|day|week)s?\s*$/i;

/** A wait's duration ("2 days", "90 minutes") in seconds; null when it is not one. */
export function durationSeconds(text: string): number | null {
  const match = DURATION.exec(text);
  return match ? Number(match[1]) * UNITS[match[2]!.toLowerCase()]! : null;
}

const STEP_ID = /^[A-Za-z0-9_-]{1,64}$/;
const stepId = z.string().regex(STEP_ID, 'must be 1 to 64 letters, digits, _ or -').optional().describe('Stable across edits; made when left out');

export type WaitStep = { id: string; type: 'wait'; duration: string };
export type SendStep = { id: string; type: 'send'; templateId: string; from: string; replyTo?: string; subject?: string };
export type ConditionStep = { id: string; type: 'condition'; filter: Filter; then: Step[]; else: Step[] };
export type UpdateContactStep = { id: string; type: 'update_contact'; properties: Record<string, string> };
export type ExitStep = { id: string; type: 'exit' };
export type Step = WaitStep | SendStep | ConditionStep | UpdateContactStep | ExitStep;
export type StepType = Step['type'];
export const STEP_TYPES = ['wait', 'send', 'condition', 'update_contact', 'exit'] as const satisfies readonly StepType[];

/** A step as it is given: its id may be left out (one is made). */
export type StepInput = Omit<Step, 'id' | 'then' | 'else'> & { id?: string; then?: StepInput[]; else?: StepInput[] } & Record<string, unknown>;

const waitSchema = z.object({
  id: stepId,
  type: z.literal('wait'),
  duration: z
    .string()
    .max(40)
    .refine((text) => {
      const seconds = durationSeconds(text);
      return seconds !== null && seconds >= MIN_WAIT_SECONDS && seconds <= MAX_WAIT_SECONDS;
    }, 'must be a duration like "2 days" or "90 minutes" (seconds, minutes, hours, days or weeks), from 1 second to 365 days'),
});
const sendSchema = z.object({
  id: stepId,
  type: z.literal('send'),
  templateId: z.string().min(1).max(64),
  from: z.string().min(3).max(320).describe('A verified sender of the team, as for POST /v1/emails'),
  replyTo: z.string().max(320).optional(),
  subject: z.string().min(1).max(998).optional().describe("Replaces the template's subject"),
});
const updateContactSchema = z.object({
  id: stepId,
  type: z.literal('update_contact'),
  properties: z
    .record(z.string().min(1).max(256), z.string().max(10_000))
    .refine((properties) => Object.keys(properties).length >= 1 && Object.keys(properties).length <= 50, 'must set 1 to 50 properties')
    .describe('Set on the contact (other properties are kept)'),
});
const exitSchema = z.object({ id: stepId, type: z.literal('exit') });

const stepSchema: z.ZodType<StepInput> = z.lazy(() =>
  z.discriminatedUnion('type', [
    waitSchema,
    sendSchema,
    z.object({
      id: stepId,
      type: z.literal('condition'),
      filter: filterSchema.describe('A segment filter on the contact; engagement conditions may name `step`, a send step before this one'),
      then: z.array(stepSchema).max(MAX_STEPS).default([]),
      else: z.array(stepSchema).max(MAX_STEPS).default([]),
    }),
    updateContactSchema,
    exitSchema,
  ]),
) as unknown as z.ZodType<StepInput>;

export const stepsSchema = z.array(stepSchema).min(1).max(MAX_STEPS).describe('The steps, in order; a condition holds two lists of its own');

export const triggerSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('contact.added'), contactBookId: z.string().min(1).max(64) }).describe('A subscribed contact added to the book (in a double opt-in book, once it confirms)'),
  z
    .object({ type: z.literal('event'), name: z.string().trim().min(1).max(200), contactBookId: z.string().min(1).max(64) })
    .describe('POST /v1/events with this name for a contact of the book'),
]);
export type Trigger = z.infer<typeof triggerSchema>;

/** Each step in document order: where it is given, how deeply it is nested, and the list holding it. */
export function* walkSteps(steps: Step[], path: (string | number)[] = ['steps'], depth = 1): Generator<{ step: Step; path: (string | number)[]; depth: number }> {
  for (const [index, step] of steps.entries()) {
    yield { step, path: [...path, index], depth };
    if (step.type === 'condition') {
      yield* walkSteps(step.then, [...path, index, 'then'], depth + 1);
      yield* walkSteps(step.else, [...path, index, 'else'], depth + 1);
    }
  }
}

/** Where each step leads: the next in its list, or, at a list's end, what follows the condition holding it (null: the end). */
export type StepPlan = Map<string, { step: Step; next: string | null; order: number }>;

export function planOf(steps: Step[]): StepPlan {
  const plan: StepPlan = new Map();
  let order = 0;
  const visit = (list: Step[], after: string | null) => {
    for (const [index, step] of list.entries()) {
      const next = list[index + 1]?.id ?? after;
      plan.set(step.id, { step, next, order: order++ });
      if (step.type === 'condition') {
        visit(step.then, next);
        visit(step.else, next);
      }
    }
  };
  visit(steps, null);
  return plan;
}

/** Where a run at a step the new steps no longer have goes: the first step after it (in the old steps) that the new ones keep; null: the end. */
export function movedSteps(before: Step[], after: Step[]): Map<string, string | null> {
  const old = planOf(before);
  const kept = planOf(after);
  const moved = new Map<string, string | null>();
  for (const id of old.keys()) {
    if (kept.has(id)) continue;
    let next = old.get(id)!.next;
    while (next !== null && !kept.has(next)) next = old.get(next)!.next;
    moved.set(id, next);
  }
  return moved;
}

export type Problem = { path: (string | number)[]; message: string };

/**
 * Gives every step an id (a new step one of its own, `newId`) and checks what the shape cannot:
 * ids used once (a second use would bring a run back to a step: a cycle), nesting, the number of
 * steps, and each `step` an engagement condition names being a send step before that condition.
 */
export function completeSteps(input: StepInput[], newId: () => string): { steps: Step[]; problems: Problem[] } {
  const withIds = (list: StepInput[]): Step[] =>
    list.map((step) => {
      const id = step.id ?? `s_${newId()}`;
      return (step.type === 'condition' ? { ...step, id, then: withIds(step.then ?? []), else: withIds(step.else ?? []) } : { ...step, id }) as Step;
    });
  const steps = withIds(input);
  const problems: Problem[] = [];
  const seen = new Map<string, { path: (string | number)[]; order: number; type: StepType }>();
  let order = 0;
  for (const { step, path, depth } of walkSteps(steps)) {
    const first = seen.get(step.id);
    if (first) problems.push({ path: [...path, 'id'], message: `repeats the id of ${fieldPath(first.path)}: a run would come back to it (a cycle)` });
    else seen.set(step.id, { path, order, type: step.type });
    order++;
    if (step.type === 'condition' && depth >= MAX_DEPTH) problems.push({ path, message: `nests conditions more than ${MAX_DEPTH} deep` });
  }
  if (order > MAX_STEPS) problems.push({ path: ['steps'], message: `holds ${order} steps in all: at most ${MAX_STEPS}` });
  for (const { step, path } of walkSteps(steps)) {
    if (step.type !== 'condition') continue;
    const at = seen.get(step.id)!.order;
    for (const named of namedSteps(step.filter)) {
      const target = seen.get(named.step);
      if (!target || target.type !== 'send' || target.order >= at) {
        problems.push({ path: [...path, 'filter', ...named.path], message: `must name a send step before this condition, not "${named.step}"` });
      }
    }
  }
  return { steps, problems };
}

/** The ids of the templates the send steps use. */
export const templateIdsOf = (steps: Step[]) => [...new Set([...walkSteps(steps)].flatMap(({ step }) => (step.type === 'send' ? [step.templateId] : [])))];
