import { walkSteps, type Step, type StepInput } from '../../audience/automation-steps.js';
import { fieldPath } from '../../validation.js';

// Changes to an automation's step list, made on a copy of it and sent whole as the PATCH's steps:
// each step keeps its id, so the service keeps the runs at it.

/** Where a list of steps is: the top list, or one branch of a condition (`<conditionId>:then`). */
export type Place = string;
export const TOP: Place = 'top';
export const branchPlace = (conditionId: string, branch: 'then' | 'else'): Place => `${conditionId}:${branch}`;

type Tree = StepInput[];

const copy = (steps: readonly Step[]): Tree => structuredClone(steps) as Tree;

/** The list at `place` in `steps` (the same array, to change in place), or null when there is none. */
function listAt(steps: Tree, place: Place): Tree | null {
  if (place === TOP) return steps;
  const [id, branch] = place.split(':');
  if (branch !== 'then' && branch !== 'else') return null;
  const found = locate(steps, id!);
  if (!found || found.list[found.index]!.type !== 'condition') return null;
  const condition = found.list[found.index]!;
  return (condition[branch] ??= []);
}

/** The list holding the step with this id and where in it, or null. */
function locate(steps: Tree, stepId: string): { list: Tree; index: number } | null {
  for (const [index, step] of steps.entries()) {
    if (step.id === stepId) return { list: steps, index };
    if (step.type === 'condition') {
      const inside = locate(step.then ?? [], stepId) ?? locate(step.else ?? [], stepId);
      if (inside) return inside;
    }
  }
  return null;
}

/** The new steps, and where the step changed or added is in them (for the errors of that step). */
export type Edit = { steps: Tree; step: StepInput };

export function addStep(steps: readonly Step[], place: Place, step: StepInput): Edit | null {
  const tree = copy(steps);
  const list = listAt(tree, place);
  if (!list) return null;
  list.push(step);
  return { steps: tree, step };
}

/** The step with this id replaced by `step` (given its id); a condition keeps its branches. */
export function replaceStep(steps: readonly Step[], stepId: string, step: StepInput): Edit | null {
  const tree = copy(steps);
  const found = locate(tree, stepId);
  if (!found) return null;
  const old = found.list[found.index]!;
  const kept = step.type === 'condition' && old.type === 'condition' ? { then: old.then, else: old.else } : {};
  const next = { ...step, ...kept, id: stepId };
  found.list[found.index] = next;
  return { steps: tree, step: next };
}

export function removeStep(steps: readonly Step[], stepId: string): Tree | null {
  const tree = copy(steps);
  const found = locate(tree, stepId);
  if (!found) return null;
  found.list.splice(found.index, 1);
  return tree;
}

/** The step swapped with the one before (-1) or after (1) it in its list; at an end, unchanged. */
export function moveStep(steps: readonly Step[], stepId: string, by: -1 | 1): Tree | null {
  const tree = copy(steps);
  const found = locate(tree, stepId);
  if (!found) return null;
  const { list, index } = found;
  const other = index + by;
  if (other < 0 || other >= list.length) return tree;
  [list[index], list[other]] = [list[other]!, list[index]!];
  return tree;
}

export function findStep(steps: readonly Step[], stepId: string): Step | null {
  return [...walkSteps(steps as Step[])].find((entry) => entry.step.id === stepId)?.step ?? null;
}

/** Where a step object is in the list, as the service's errors name it (`steps[2].then[0]`). */
export function pathOf(steps: Tree, step: StepInput): string | null {
  const entry = [...walkSteps(steps as Step[])].find((item) => (item.step as StepInput) === step);
  return entry ? fieldPath(entry.path) : null;
}

/** The send steps a condition at `step` may name: those before it in the order runs walk. */
export function sendStepsBefore(steps: Tree, step: StepInput): Extract<Step, { type: 'send' }>[] {
  const sends: Extract<Step, { type: 'send' }>[] = [];
  for (const { step: each } of walkSteps(steps as Step[])) {
    if ((each as StepInput) === step) break;
    if (each.type === 'send' && each.id) sends.push(each);
  }
  return sends;
}

/** The places a new step can go: the end of the top list, and the end of each branch of each condition. */
export function placesOf(steps: readonly Step[]): { value: Place; conditionId?: string; branch?: 'then' | 'else' }[] {
  const conditions = [...walkSteps(steps as Step[])].flatMap(({ step }) => (step.type === 'condition' ? [step.id] : []));
  return [{ value: TOP }, ...conditions.flatMap((id) => (['then', 'else'] as const).map((branch) => ({ value: branchPlace(id, branch), conditionId: id, branch })))];
}

export const placeExists = (steps: readonly Step[], place: Place) => listAt(copy(steps), place) !== null;
