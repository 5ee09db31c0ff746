import type { Context } from 'hono';
import { html } from 'hono/html';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Step, StepInput, StepType } from '../../audience/automation-steps.js';
import type { ErrorDetail } from '../../errors.js';
import type { AppDeps } from '../../http/deps.js';
import type { getAutomation as fetchAutomation } from '../../services/automations.js';
import { callApi } from '../api-call.js';
import { csrfField, field, heading, page } from '../layout.js';
import type { DashboardEnv } from '../session.js';
import { given, senderField } from '../forms.js';
import { detailList, filterBuilder, filterText, parsedFilter } from './segment-form.js';

type Ctx = Context<DashboardEnv>;

export type Automation = Awaited<ReturnType<typeof fetchAutomation>>;
export type Template = { id: string; name: string };

export const automationPath = (automationId: string) => `/automations/${encodeURIComponent(automationId)}`;

/** The automation pages' own styles, linked from each of them. */
export const STYLES = html`<link rel="stylesheet" href="/assets/automations.css">`;

export const AUTOMATION_ROUTE = '/automations/{automationId}';
export const getAutomation = (c: Ctx, deps: AppDeps, automationId: string) => callApi<Automation>(c, deps, 'get', AUTOMATION_ROUTE, { params: { automationId } });

export const STEP_LABELS: Record<StepType, string> = {
  wait: 'Wait',
  send: 'Send an email',
  condition: 'Condition',
  update_contact: 'Update the contact',
  exit: 'Exit',
};

// A step's properties are edited as numbered rows; this many empty ones follow those it has.
const SPARE_ROWS = 2;
const MIN_ROWS = 3;

/** A step as its form shows it. */
export function stepValues(step: Step): Record<string, string> {
  switch (step.type) {
    case 'wait':
      return { duration: step.duration };
    case 'send':
      return { templateId: step.templateId, from: step.from, subject: step.subject ?? '', replyTo: step.replyTo ?? '' };
    case 'condition':
      return { filter: filterText(step.filter) };
    case 'update_contact':
      return Object.fromEntries(Object.entries(step.properties).flatMap(([name, value], i) => [[`propertyName${i}`, name], [`propertyValue${i}`, value]]));
    case 'exit':
      return {};
  }
}

const rowsOf = (values: Record<string, string>) => Object.keys(values).filter((key) => /^propertyName\d+$/.test(key)).length;

/** The step a form describes; the service checks the rest. A filter that is not JSON is a 400 at `filter`. */
export function stepFromValues(type: StepType, values: Record<string, string>): StepInput {
  switch (type) {
    case 'wait':
      return { type, duration: values.duration ?? '' };
    case 'send':
      return { type, templateId: values.templateId ?? '', from: values.from ?? '', subject: given(values.subject), replyTo: given(values.replyTo) };
    case 'condition':
      return { type, filter: parsedFilter(values.filter ?? ''), then: [], else: [] } as StepInput;
    case 'update_contact': {
      const rows = Array.from({ length: rowsOf(values) }, (_, i) => [values[`propertyName${i}`]?.trim() ?? '', values[`propertyValue${i}`] ?? ''] as const);
      return { type, properties: Object.fromEntries(rows.filter(([name]) => name !== '')) };
    }
    case 'exit':
      return { type };
  }
}

/** A refused step's errors: by its fields, its filter's (paths from `filter`), and the rest at their whole paths. */
export type StepErrors = { fields: Record<string, string>; filter: ErrorDetail[]; others: ErrorDetail[] };
export const NO_ERRORS: StepErrors = { fields: {}, filter: [], others: [] };

/** Sorts the service's errors by whether they are about the step at `stepPath` (`steps[2]`), and which part of it. */
export function stepErrors(details: readonly ErrorDetail[], stepPath: string | null): StepErrors {
  const errors: StepErrors = { fields: {}, filter: [], others: [] };
  for (const detail of details) {
    const own = stepPath === null ? detail.path : detail.path.startsWith(`${stepPath}.`) ? detail.path.slice(stepPath.length + 1) : null;
    if (own === null || own === '') errors.others.push(detail);
    else if (own === 'filter' || own.startsWith('filter.') || own.startsWith('filter[')) errors.filter.push({ path: own, message: detail.message });
    else errors.fields[own.split('.')[0]!] ??= detail.message;
  }
  return errors;
}

export type StepFormState = {
  automation: Automation;
  type: StepType;
  values: Record<string, string>;
  errors?: StepErrors;
  status?: ContentfulStatusCode;
  /** The step edited; none for a new step. */
  step?: Step;
  /** Where a new step goes, and that place in words. */
  place?: { value: string; words: string };
  templates: Template[];
  verifiedDomains: string[];
  /** The send steps before this one that a condition may read the mail of. */
  sendSteps: { id: string; label: string }[];
};

function sendFields(state: StepFormState, errors: StepErrors) {
  const { values, templates, verifiedDomains } = state;
  const e = errors.fields;
  const chosen = values.templateId ?? '';
  return html`<div class="field${e.templateId ? ' has-error' : ''}">
<label for="f-templateId">Template</label>
<select id="f-templateId" name="templateId" required><option value="">Choose a template</option>${templates.map(
    (template) => html`<option value="${template.id}"${template.id === chosen ? html` selected` : ''}>${template.name}</option>`,
  )}</select>
<small class="hint">${templates.length ? 'Its subject and HTML; the contact’s email, names and properties, the event’s properties and {{unsubscribeUrl}} fill its variables.' : html`No templates yet: <a href="/templates/new">make one</a> first.`}</small>
${e.templateId ? html`<small class="error">${e.templateId}</small>` : ''}
</div>
${senderField({ value: values.from, error: e.from, verified: verifiedDomains, name: 'Hello', local: 'hello' })}
${field('subject', 'Subject', { value: values.subject, error: e.subject, hint: 'Empty: the template’s own subject.' })}
${field('replyTo', 'Reply-To', { value: values.replyTo, error: e.replyTo, hint: 'Optional.' })}`;
}

function propertyRows(values: Record<string, string>, errors: StepErrors) {
  const rows = Math.max(rowsOf(values) + SPARE_ROWS, MIN_ROWS);
  return html`<fieldset class="property-rows${errors.fields.properties ? ' has-error' : ''}"><legend>Properties to set</legend>
${Array.from({ length: rows }, (_, i) => html`<div class="property-row">${field(`propertyName${i}`, `Name ${i + 1}`, { value: values[`propertyName${i}`] })}${field(`propertyValue${i}`, `Value ${i + 1}`, { value: values[`propertyValue${i}`] })}</div>`)}
<small class="hint">Set on the contact; its other properties stay. Rows without a name are left out; save to get more rows.</small>
${errors.fields.properties ? html`<small class="error">${errors.fields.properties}</small>` : ''}
</fieldset>`;
}

function typeFields(c: Ctx, state: StepFormState, errors: StepErrors) {
  const base = automationPath(state.automation.id);
  switch (state.type) {
    case 'wait':
      return field('duration', 'Duration', { value: state.values.duration, error: errors.fields.duration, required: true, placeholder: '2 days', hint: 'Seconds, minutes, hours, days or weeks, like “2 days” or “90 minutes”: 1 second to 365 days.' });
    case 'send':
      return sendFields(state, errors);
    case 'condition':
      return html`${filterBuilder(c, {
        value: state.values.filter ?? '',
        errors: errors.filter,
        countUrl: `${base}/count`,
        vocabulary: { steps: state.sendSteps.map((step) => ({ value: step.id, label: step.label })) },
        hint: 'An engagement condition may name "step": an earlier send step, whose mail of this run it reads.',
      })}
<p class="hint">Contacts it matches go on with the steps under “then”, the others with those under “else”; both then go on after the condition.</p>`;
    case 'update_contact':
      return propertyRows(state.values, errors);
    case 'exit':
      return html`<p>The run ends here: the contact leaves the automation.</p>`;
  }
}

/** The form of a new step of `type` (at `place`) or of the step edited, with the service's verdict on it. */
export function stepForm(c: Ctx, state: StepFormState) {
  const { automation, step, type } = state;
  const base = automationPath(automation.id);
  const errors = state.errors ?? NO_ERRORS;
  const title = step ? `Edit step ${step.id}` : `New step: ${STEP_LABELS[type]}`;
  return page(c, {
    title,
    section: 'Automations',
    status: state.status,
    body: html`${STYLES}<p><a href="${base}">← ${automation.name}</a></p>
${heading(title)}
<form method="post" action="${step ? `${base}/steps/${encodeURIComponent(step.id)}` : `${base}/steps/new`}" class="stack panel step-form">${csrfField(c)}
<input type="hidden" name="type" value="${type}"><input type="hidden" name="version" value="${automation.updatedAt}">
${state.place ? html`<input type="hidden" name="place" value="${state.place.value}"><p class="muted">${STEP_LABELS[type]}, added ${state.place.words}.</p>` : html`<p class="muted">${STEP_LABELS[type]} · id <code>${step?.id}</code>, kept when the step changes: runs at it stay at it.</p>`}
${errors.others.length > 0 ? html`<div class="form-error" role="alert">The steps were not saved:${detailList(errors.others)}</div>` : ''}
${typeFields(c, state, errors)}
<div class="row-actions"><button type="submit">${step ? 'Save step' : 'Add step'}</button><a class="button secondary" href="${base}">Cancel</a></div>
</form>`,
  });
}
