const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe to stand in HTML content and in quoted attribute values. */
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char]!);

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', copy: '©', reg: '®', hellip: '…', mdash: '—', ndash: '–' };

/**
 * Text or an attribute value as a browser reads it: numeric and the common named character
 * references decoded; an unknown name or a code point that is no character stays as written.
 */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

// A `<` that does not start another <a tag.
const NO_LINK_TAG = String.raw`<(?!a[\s/])`;
// The value of an attribute before href, in double, single or no quotes.
const ATTRIBUTE_VALUE =
  String.raw`"[^"<]*(?:${NO_LINK_TAG}[^"<]*)*"|'[^'<]*(?:${NO_LINK_TAG}[^'<]*)*'|` +
  String.raw`(?:[^\s"'<>]|${NO_LINK_TAG})[^\s<>]*(?:${NO_LINK_TAG}[^\s<>]*)*(?=[\s>])`;

/**
 * An <a> tag up to the value of its href attribute, then that value in double, single or no quotes
 * (groups 1 to 4). The attributes before it are passed over whole, so neither a `data-href` nor an
 * `href=` inside another attribute's value is taken for it. Neither their names nor their values
 * are taken to hold the start of another <a tag, so the search from a tag left open ends at the
 * next one: the text is read once however many are left open (`<a x=y<a x=y<a …`, 64 KB of it,
 * took seconds while a value could run on through the tags after it).
 */
export const LINK_HREF = new RegExp(
  String.raw`(<a(?:[\s/]+[^\s/<>=]+(?:\s*=\s*(?:${ATTRIBUTE_VALUE}))?)*?[\s/]+href\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'>][^\s>]*))`,
  'gi',
);
/**
 * The text with every span from `open` to the end of its closer taken out (`closer` gives the
 * lower-case text that ends a span opened by a match). An opener whose closer never comes runs to
 * the end, as a browser reads an unclosed comment or script. One pass: indexOf, never a lazy
 * pattern that rescans the rest of the text for each opener.
 */
function dropSpans(text: string, open: RegExp, closer: (match: RegExpExecArray) => string): string {
  // Lowered only when there is a span to drop: most bodies have none, and a body may be megabytes.
  let lower: string | undefined;
  let out = '';
  let from = 0;
  open.lastIndex = 0;
  for (let match = open.exec(text); match; match = open.exec(text)) {
    lower ??= text.toLowerCase();
    const end = lower.indexOf(closer(match), match.index + match[0].length);
    out += text.slice(from, match.index);
    if (end === -1) return out;
    // A closing tag ends at its `>` (`</style >`); a comment's closer is whole.
    const tail = closer(match).startsWith('</') ? text.indexOf('>', end) : end + closer(match).length - 1;
    if (tail === -1) return out;
    from = tail + 1;
    open.lastIndex = from;
  }
  return out + text.slice(from);
}

/** Each link as its label, with its target after it where that says more; one pass, like dropSpans. */
function linksAsText(text: string): string {
  const lower = text.toLowerCase();
  let out = '';
  let from = 0;
  LINK_HREF.lastIndex = 0;
  for (let match = LINK_HREF.exec(text); match; match = LINK_HREF.exec(text)) {
    const tagEnd = text.indexOf('>', match.index + match[0].length);
    const close = tagEnd === -1 ? -1 : lower.indexOf('</a', tagEnd);
    if (close === -1) break;
    const closeEnd = text.indexOf('>', close);
    const href = decodeEntities(match[2] ?? match[3] ?? match[4] ?? '');
    const visible = text.slice(tagEnd + 1, close).replace(TAG, '').trim();
    // The text is stripped of tags and decoded once more afterwards: escaped, the target comes out as it is.
    out += text.slice(from, match.index) + (!href || href.startsWith('#') || decodeEntities(visible) === href ? visible : `${visible} (${escapeHtml(href)})`);
    from = closeEnd === -1 ? text.length : closeEnd + 1;
    LINK_HREF.lastIndex = from;
  }
  return out + text.slice(from);
}

// A tag cannot hold a `<`: a search that meets one ends there, so a text full of unclosed `<` is
// read once, not once per `<`.
const TAG = /<[^<>]*>/g;

/**
 * How much HTML a text alternative is read from. Reading is linear, but a request runs it on the
 * event loop: a bound keeps one request to a few tens of milliseconds (5 MB of dense entities took
 * a second). A text part past half a megabyte of markup is read by nobody; the HTML part is whole.
 */
export const TEXT_FROM_HTML_MAX = 512 * 1024;

/**
 * A plain-text rendering of an HTML body for the text/plain alternative: blocks become lines, links
 * keep their target, everything invisible goes. Not a layout engine: readable is the goal. Linear
 * in the length of the html, whatever it holds, and reads at most TEXT_FROM_HTML_MAX of it (ending
 * the text with "[…]" where it stopped short), since it runs on every body a request brings.
 */
export function htmlToText(html: string): string {
  if (html.length > TEXT_FROM_HTML_MAX) {
    // Cut before the last tag that starts inside the bound, so no half tag is read as text.
    const cut = html.lastIndexOf('<', TEXT_FROM_HTML_MAX);
    return `${htmlToText(html.slice(0, cut > 0 ? cut : TEXT_FROM_HTML_MAX))}\n\n[…]`;
  }
  const visibleOnly = dropSpans(dropSpans(html, /<!--/g, () => '-->'), /<(head|style|script|title)\b/gi, (match) => `</${match[1]!.toLowerCase()}`);
  // Whitespace becomes single spaces; a lone space is matched not at all, as rewriting each with itself cost most of the pass.
  const text = linksAsText(visibleOnly.replace(/\s\s+|[^\S ]/g, ' '))
    .replace(/<li\b[^<>]*>/gi, '\n- ')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/?(p|div|h[1-6]|ul|ol|table|tr|blockquote|section|article|header|footer|hr)\b[^<>]*>/gi, '\n\n')
    .replace(/<\/t[dh]\s*>/gi, ' ')
    .replace(TAG, '');
  return decodeEntities(text)
    .replace(/[ \t]{2,}|\t/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
