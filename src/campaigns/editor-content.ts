import { invalid } from '../errors.js';
import { escapeHtml } from '../mail/html.js';
import { UNSUBSCRIBE_PLACEHOLDERS } from './template.js';

/** A node of the email editor's JSON document (ProseMirror-shaped, as upstream's editor writes it). */
type EditorNode = {
  type?: unknown;
  text?: unknown;
  attrs?: Record<string, unknown>;
  marks?: { type?: unknown; attrs?: Record<string, unknown> }[];
  content?: EditorNode[];
};

// Real documents nest a few levels (doc, list, item, paragraph, text); a bound keeps rendering off the stack's limit.
const MAX_DEPTH = 64;
const FONT = 'font-family:-apple-system,BlinkMacSystemFont,Segoe UI,Helvetica,Arial,sans-serif';
const attr = (value: unknown) => escapeHtml(typeof value === 'string' || typeof value === 'number' ? String(value) : '');
/** Only web and mail links, and placeholders that become one: a `javascript:` href renders as none. */
const safeUrl = (value: unknown) => {
  const url = typeof value === 'string' ? value.trim() : '';
  return /^(https?:|mailto:|\{\{)/i.test(url) ? attr(url) : '';
};

const MARKS: Record<string, (inner: string, attrs: Record<string, unknown>) => string> = {
  bold: (inner) => `<strong>${inner}</strong>`,
  italic: (inner) => `<em>${inner}</em>`,
  underline: (inner) => `<u>${inner}</u>`,
  strike: (inner) => `<s>${inner}</s>`,
  code: (inner) => `<code>${inner}</code>`,
  textStyle: (inner, attrs) => (typeof attrs.color === 'string' ? `<span style="color:${attr(attrs.color)}">${inner}</span>` : inner),
  link: (inner, attrs) => `<a href="${safeUrl(attrs.href)}" target="_blank" style="color:#2563eb">${inner}</a>`,
};

const align = (node: EditorNode) =>
  typeof node.attrs?.textAlign === 'string' && /^(left|center|right)$/.test(node.attrs.textAlign) ? `text-align:${node.attrs.textAlign};` : '';

const NODES: Record<string, (node: EditorNode, inner: () => string) => string> = {
  doc: (_node, inner) => inner(),
  paragraph: (node, inner) => `<p style="${align(node)}margin:0 0 16px;line-height:1.5">${inner()}</p>`,
  heading: (node, inner) => {
    const level = Math.min(Math.max(Number(node.attrs?.level) || 1, 1), 6);
    return `<h${level} style="${align(node)}margin:0 0 16px">${inner()}</h${level}>`;
  },
  text: (node) => {
    let html = escapeHtml(typeof node.text === 'string' ? node.text : '');
    for (const mark of node.marks ?? []) html = MARKS[String(mark.type)]?.(html, mark.attrs ?? {}) ?? html;
    return html;
  },
  hardBreak: () => '<br>',
  button: (node) =>
    `<p style="${align(node)}margin:0 0 16px"><a href="${safeUrl(node.attrs?.url ?? node.attrs?.href)}" target="_blank" ` +
    `style="display:inline-block;padding:12px 20px;border-radius:6px;background:${attr(node.attrs?.buttonColor ?? '#000000')};` +
    `color:${attr(node.attrs?.textColor ?? '#ffffff')};text-decoration:none">${attr(node.attrs?.text ?? node.attrs?.label ?? '')}</a></p>`,
  image: (node) =>
    `<p style="${align(node)}margin:0 0 16px"><img src="${safeUrl(node.attrs?.src)}" alt="${attr(node.attrs?.alt)}"` +
    `${node.attrs?.width ? ` width="${attr(node.attrs.width)}"` : ''} style="max-width:100%;height:auto;border:0"></p>`,
  bulletList: (_node, inner) => `<ul style="margin:0 0 16px;padding-left:24px">${inner()}</ul>`,
  orderedList: (_node, inner) => `<ol style="margin:0 0 16px;padding-left:24px">${inner()}</ol>`,
  listItem: (_node, inner) => `<li>${inner().replace(/<p style="[^"]*">([\s\S]*?)<\/p>/g, '$1')}</li>`,
  horizontalRule: () => '<hr style="border:0;border-top:1px solid #e5e7eb;margin:24px 0">',
  variable: (node) => {
    const name = String(node.attrs?.id ?? node.attrs?.name ?? '');
    const fallback = node.attrs?.fallback;
    return `{{${name}${typeof fallback === 'string' && fallback !== '' ? `,fallback=${attr(fallback)}` : ''}}}`;
  },
  unsubscribeFooter: (node, inner) =>
    `<p style="margin:24px 0 0;font-size:12px;color:#6b7280">${node.content?.length ? inner() : ''} ` +
    `<a href="{{${UNSUBSCRIBE_PLACEHOLDERS[0]}}}" style="color:#6b7280">Unsubscribe</a></p>`,
};
// Names upstream's editor also writes for the same nodes.
NODES.divider = NODES.horizontalRule!;
NODES.footer = NODES.unsubscribeFooter!;

/**
 * Email-safe HTML (inline styles, a single-column table wrapper) for an editor JSON document.
 * A document with node types this renderer does not know is a 400 naming them.
 */
export function renderEditorContent(content: string, field = 'content'): string {
  let doc: EditorNode;
  try {
    doc = JSON.parse(content) as EditorNode;
  } catch {
    throw invalid(field, 'must be the email editor JSON document (a {"type":"doc","content":[…]} object)');
  }
  if (typeof doc !== 'object' || doc === null || doc.type !== 'doc') {
    throw invalid(field, 'must be the email editor JSON document (a {"type":"doc","content":[…]} object)');
  }
  const unknown = new Set<string>();
  let tooDeep = false;
  const render = (node: EditorNode, depth: number): string => {
    if (depth > MAX_DEPTH) {
      tooDeep = true;
      return '';
    }
    const type = String(node?.type);
    const renderer = NODES[type];
    if (!renderer) {
      unknown.add(type);
      return '';
    }
    return renderer(node, () => (Array.isArray(node.content) ? node.content.map((child) => render(child, depth + 1)).join('') : ''));
  };
  const body = render(doc, 0);
  if (tooDeep) throw invalid(field, `nests nodes deeper than ${MAX_DEPTH} levels`);
  if (unknown.size > 0) throw invalid(field, `has node types this editor cannot render: ${[...unknown].join(', ')}`);
  return (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"></head>' +
    `<body style="margin:0;padding:0;background:#ffffff"><table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0">` +
    `<tr><td align="center"><table role="presentation" width="600" cellpadding="0" cellspacing="0" border="0" style="max-width:600px">` +
    `<tr><td style="padding:24px;${FONT};font-size:16px;color:#111827">${body}</td></tr></table></td></tr></table></body></html>`
  );
}
