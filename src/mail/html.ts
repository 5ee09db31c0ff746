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

/**
 * An <a> tag up to the value of its href attribute, then that value in double, single or no quotes
 * (groups 1 to 4). The attributes before it are passed over whole, so neither a `data-href` nor an
 * `href=` inside another attribute's value is taken for it. No name is taken to hold a `<`, so the
 * search of a tag left open ends at the next tag instead of running through the rest of the html.
 */
export const LINK_HREF =
  /(<a(?:[\s/]+[^\s/<>=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>][^\s>]*(?=[\s>])))?)*?[\s/]+href\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'>][^\s>]*))/gi;
const LINK = new RegExp(`${LINK_HREF.source}[^>]*>([\\s\\S]*?)<\\/a\\s*>`, 'gi');

/**
 * A plain-text rendering of an HTML body for the text/plain alternative: blocks become lines, links
 * keep their target, everything invisible goes. Not a layout engine: readable is the goal.
 */
export function htmlToText(html: string): string {
  const text = html
    .replace(/<(head|style|script|title)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    // Line breaks in HTML source are spaces; only the markup below makes lines.
    .replace(/\s+/g, ' ')
    .replace(LINK, (_m, _start, dq, sq, bare, label: string) => {
      const href = decodeEntities(dq ?? sq ?? bare ?? '');
      const visible = label.replace(/<[^>]*>/g, '').trim();
      // The text is stripped of tags and decoded once more below: escaped, the target comes out as it is.
      return !href || href.startsWith('#') || decodeEntities(visible) === href ? visible : `${visible} (${escapeHtml(href)})`;
    })
    .replace(/<li\b[^>]*>/gi, '\n- ')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/?(p|div|h[1-6]|ul|ol|table|tr|blockquote|section|article|header|footer|hr)\b[^>]*>/gi, '\n\n')
    .replace(/<\/t[dh]\s*>/gi, ' ')
    .replace(/<[^>]*>/g, '');
  return decodeEntities(text)
    .replace(/[ \t]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
