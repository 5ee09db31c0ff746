import { clickUrl, isWebUrl, openPixelUrl } from '../feedback/links.js';
import type { RecipientTokens } from '../feedback/tokens.js';

export type TrackingOptions = { open: boolean; click: boolean; publicUrl: string; tokens: RecipientTokens; emailId: string };

// The href of an <a> tag, in double, single or no quotes.
const LINK = /(<a\b[^>]*?\bhref\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi;
const BODY_END = /<\/body\s*>/gi;

const NAMED_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** An attribute value as the browser reads it: character references decoded. */
function decodeAttribute(value: string): string {
  return value.replace(/&(?:#(\d+)|#x([0-9a-f]+)|(amp|lt|gt|quot|apos));/gi, (whole, dec: string, hex: string, name: string) => {
    if (name) return NAMED_ENTITIES[name.toLowerCase()]!;
    const code = dec ? Number(dec) : Number.parseInt(hex, 16);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** Only web links to elsewhere are tracked: not mailto:, anchors, nor Mailroom's own pages (unsubscribe, confirm). */
const trackable = (url: string, publicUrl: string) => isWebUrl(url) && !url.startsWith(`${publicUrl}/`);

/**
 * The html with its links led through the click redirect and an open pixel at the end of the
 * body, as the sending domain asks. Each rewritten link's token signs the URL it leads to, so the
 * redirect can only ever go where the mail pointed.
 */
export function addTracking(html: string, options: TrackingOptions): string {
  let out = html;
  if (options.click) {
    out = out.replace(LINK, (whole, start: string, double?: string, single?: string, bare?: string) => {
      const url = decodeAttribute((double ?? single ?? bare ?? '').trim());
      if (!trackable(url, options.publicUrl)) return whole;
      return `${start}"${clickUrl(options.publicUrl, options.tokens, options.emailId, url)}"`;
    });
  }
  if (options.open) {
    const pixel = `<img src="${openPixelUrl(options.publicUrl, options.tokens, options.emailId)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">`;
    const ends = [...out.matchAll(BODY_END)];
    const last = ends.at(-1);
    out = last ? out.slice(0, last.index) + pixel + out.slice(last.index) : out + pixel;
  }
  return out;
}
