import { escapeHtml } from '../mail/html.js';

/**
 * Personalisation, for campaigns and templates alike: a body or subject is split once into literal
 * text and placeholders (`{{name}}`, `{{name,fallback=text}}`), so rendering it for each recipient
 * is a join, not a search.
 */

export const UNSUBSCRIBE_PLACEHOLDERS = ['unsubscribeUrl', 'usesend_unsubscribe_url', 'unsend_unsubscribe_url'];

const PLACEHOLDER = /\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*(?:,\s*fallback\s*=\s*([^}]*?)\s*)?\}\}/g;

/** A placeholder's fallback is null when it names none: then the value is required (see missingValues). */
type Part = string | { name: string; fallback: string | null };
export type Template = { parts: Part[] };

export function compileTemplate(source: string): Template {
  const parts: Part[] = [];
  let last = 0;
  for (const match of source.matchAll(PLACEHOLDER)) {
    parts.push(source.slice(last, match.index));
    parts.push({ name: match[1]!, fallback: match[2] ?? null });
    last = match.index + match[0].length;
  }
  parts.push(source.slice(last));
  return { parts: parts.filter((part) => part !== '') };
}

/** The names the templates' placeholders use, each once (as first written), in order of appearance. */
export function placeholderNames(...templates: Template[]): string[] {
  const names = new Map<string, string>();
  for (const template of templates) {
    for (const part of template.parts) if (typeof part !== 'string' && !names.has(part.name.toLowerCase())) names.set(part.name.toLowerCase(), part.name);
  }
  return [...names.values()];
}

/** The names a placeholder without a fallback uses and `values` (keyed lower-case) lacks. */
export function missingValues(values: Map<string, string>, ...templates: Template[]): string[] {
  const missing = new Map<string, string>();
  for (const template of templates) {
    for (const part of template.parts) {
      if (typeof part !== 'string' && part.fallback === null && !values.has(part.name.toLowerCase())) missing.set(part.name.toLowerCase(), part.name);
    }
  }
  return [...missing.values()];
}

export const hasUnsubscribePlaceholder = (source: string) =>
  compileTemplate(source).parts.some((part) => typeof part !== 'string' && UNSUBSCRIBE_PLACEHOLDERS.includes(part.name));

/**
 * The template with each placeholder replaced by the recipient's value (escaped for HTML when
 * `html`), or its fallback when the value is missing or empty. Fallbacks are the author's text and
 * go in as written.
 */
export function renderTemplate(template: Template, values: Map<string, string>, html: boolean): string {
  let out = '';
  for (const part of template.parts) {
    if (typeof part === 'string') {
      out += part;
      continue;
    }
    const value = values.get(part.name.toLowerCase());
    out += value ? (html ? escapeHtml(value) : value) : (part.fallback ?? '');
  }
  return out;
}
