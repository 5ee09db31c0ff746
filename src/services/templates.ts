import { renderEditorContent } from '../campaigns/editor-content.js';
import { compileTemplate, missingValues, placeholderNames, renderTemplate } from '../campaigns/template.js';
import { automationUsingTemplate } from '../data/automations.js';
import * as templates from '../data/templates.js';
import type { TemplateFields, TemplateRow } from '../data/templates.js';
import type { Deps } from '../deps.js';
import { audit } from '../events/audit.js';
import { ApiError, conflict, notFound, type ErrorDetail } from '../errors.js';
import { newId } from '../ids.js';
import { validationError } from '../validation.js';
import { assertTeamWide, type Caller } from './caller.js';

export type TemplateDeps = Pick<Deps, 'db'>;
export type TemplateInput = { name: string; subject: string; html?: string | null; text?: string | null; content?: string | null };

// Templates serve every domain of the team: a key scoped to one domain may use them, not change them.
const TEAM_WIDE = 'templates serve the whole team, so only a key for the whole team may change them';

export function toTemplate(row: TemplateRow) {
  return {
    id: row.id,
    name: row.name,
    subject: row.subject,
    html: row.html,
    text: row.text,
    content: row.content,
    variables: placeholderNames(compileTemplate(row.subject), compileTemplate(row.html ?? ''), compileTemplate(row.text ?? '')),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The template as it will be stored: its html rendered from editor content when only that is given, and some body. */
function completed(fields: TemplateFields): TemplateFields {
  const html = fields.html || (fields.content ? renderEditorContent(fields.content) : null);
  if (!html && !fields.text) {
    throw validationError([{ path: 'html', message: 'is required unless text or content is given' }]);
  }
  return { ...fields, html };
}

export async function createTemplate(deps: TemplateDeps, caller: Caller, input: TemplateInput) {
  assertTeamWide(caller, TEAM_WIDE);
  const fields = completed({ name: input.name, subject: input.subject, html: input.html ?? null, text: input.text ?? null, content: input.content ?? null });
  return deps.db.transaction().execute(async (tx) => {
    const row = await templates.insertTemplate(tx, caller.teamId, newId(), fields, new Date());
    await audit(tx, caller, { action: 'template.created', targetType: 'template', targetId: row.id });
    return toTemplate(row);
  });
}

export async function listTemplates(deps: TemplateDeps, caller: Caller, query: { page: number; limit: number }) {
  const { rows, count } = await templates.listTemplates(deps.db, caller.teamId, { offset: (query.page - 1) * query.limit, limit: query.limit });
  return { data: rows.map(toTemplate), count };
}

export async function getTemplate(deps: TemplateDeps, caller: Caller, { templateId }: { templateId: string }) {
  const row = await templates.findTemplate(deps.db, caller.teamId, templateId);
  if (!row) throw notFound('Template');
  return toTemplate(row);
}

export async function updateTemplate(deps: TemplateDeps, caller: Caller, { templateId, ...changes }: { templateId: string } & Partial<TemplateInput>) {
  assertTeamWide(caller, TEAM_WIDE);
  return deps.db.transaction().execute(async (tx) => {
    const current = await templates.findTemplate(tx, caller.teamId, templateId);
    if (!current) throw notFound('Template');
    // New editor content without new html replaces the html rendered from the old content.
    const html = changes.html !== undefined ? changes.html : changes.content !== undefined ? null : current.html;
    const fields = completed({
      name: changes.name ?? current.name,
      subject: changes.subject ?? current.subject,
      html,
      text: changes.text !== undefined ? changes.text : current.text,
      content: changes.content !== undefined ? changes.content : current.content,
    });
    const updated = (await templates.updateTemplate(tx, caller.teamId, templateId, fields, new Date()))!;
    await audit(tx, caller, { action: 'template.updated', targetType: 'template', targetId: templateId });
    return toTemplate(updated);
  });
}

export async function deleteTemplate(deps: TemplateDeps, caller: Caller, { templateId }: { templateId: string }) {
  assertTeamWide(caller, TEAM_WIDE);
  return deps.db.transaction().execute(async (tx) => {
    const user = await automationUsingTemplate(tx, caller.teamId, templateId);
    if (user) throw conflict(`Template ${templateId} is sent by automation ${user.id} (${user.name}); change its steps or delete it first`);
    if (!(await templates.deleteTemplate(tx, caller.teamId, templateId))) throw notFound('Template');
    await audit(tx, caller, { action: 'template.deleted', targetType: 'template', targetId: templateId });
    return { id: templateId, success: true };
  });
}

/** The team's templates these ids name; any id the team has no template of is a 404. */
export async function templatesByIds(deps: TemplateDeps, caller: Caller, ids: string[]): Promise<Map<string, TemplateRow>> {
  const rows = await templates.findTemplates(deps.db, caller.teamId, [...new Set(ids)]);
  const found = new Map(rows.map((row) => [row.id, row]));
  const missing = ids.find((id) => !found.has(id));
  if (missing !== undefined) throw new ApiError('NOT_FOUND', `Template ${missing} not found`);
  return found;
}

/**
 * An email's subject and bodies rendered from a template with the request's variables, HTML-escaped
 * in the html; `subject`, when given, replaces the template's. A placeholder without a fallback whose
 * variable is missing lands in `problems`, named under `variables`.
 */
export function renderFromTemplate(
  row: TemplateRow,
  input: { subject?: string; variables?: Record<string, string> },
  at: (field: string) => string,
  problems: ErrorDetail[],
): { subject: string; html: string | null; text: string | null } {
  const values = new Map(Object.entries(input.variables ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
  const subject = compileTemplate(input.subject ?? row.subject);
  const html = compileTemplate(row.html ?? '');
  const text = compileTemplate(row.text ?? '');
  for (const name of missingValues(values, subject, html, text)) {
    problems.push({ path: at(`variables.${name}`), message: `is required: template ${row.id} uses {{${name}}} without a fallback` });
  }
  return {
    subject: renderTemplate(subject, values, false),
    html: row.html === null ? null : renderTemplate(html, values, true),
    text: row.text === null ? null : renderTemplate(text, values, false),
  };
}
