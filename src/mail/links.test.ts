import { describe, expect, it } from 'vitest';
import {
  addTracking,
  clickUrl,
  CONFIRMATION_LINK_MS,
  confirmationUrl,
  DOUBLE_OPT_IN_PLACEHOLDER,
  isWebUrl,
  openPixelUrl,
  PAGE_PATHS,
  unsubscribeUrl,
  type TrackingOptions,
} from './links.js';
import { RecipientTokens } from './tokens.js';

const PUBLIC_URL = 'https://mr.example';
const tokens = new RecipientTokens('test-secret');
const options = (overrides: Partial<TrackingOptions> = {}): TrackingOptions => ({
  open: false,
  click: true,
  publicUrl: PUBLIC_URL,
  tokens,
  emailId: 'em1',
  ...overrides,
});

const CLICK_PREFIX = `${PUBLIC_URL}/track/click/`;

/** The URLs the click tokens of a tracked html lead to, in order. */
function clickTargets(html: string): string[] {
  return [...html.matchAll(/href\s*=\s*"https:\/\/mr\.example\/track\/click\/([^"]+)"/gi)].map((match) => {
    const fields = tokens.verify(match[1]!, 'click');
    expect(fields, match[1]).not.toBeNull();
    expect(fields!.emailId).toBe('em1');
    return fields!.url;
  });
}

describe('recipient page URLs', () => {
  it('the pages live outside /v1 at fixed paths', () => {
    expect(PAGE_PATHS).toStrictEqual({ unsubscribe: '/unsubscribe', confirm: '/confirm', open: '/track/open', click: '/track/click' });
  });

  it('an unsubscribe URL carries a token that verifies as that recipient\'s unsubscribe', () => {
    const fields = { teamId: 3, campaignId: 'cmp', emailId: 'em1', bookId: 'bk', contactId: 'ct' };
    const url = unsubscribeUrl(PUBLIC_URL, tokens, fields);
    expect(url).toBe(`${PUBLIC_URL}/unsubscribe/${tokens.sign('unsubscribe', fields)}`);
    expect(tokens.verify(url.slice(`${PUBLIC_URL}/unsubscribe/`.length), 'unsubscribe')).toStrictEqual(fields);
  });

  it('a confirmation link holds for 7 days from when its email was created', () => {
    expect(CONFIRMATION_LINK_MS).toBe(604_800_000);
    const createdAt = new Date('2024-03-01T12:00:00.000Z');
    const url = confirmationUrl(PUBLIC_URL, tokens, { teamId: 3, bookId: 'bk', contactId: 'ct' }, createdAt);
    expect(url.startsWith(`${PUBLIC_URL}/confirm/`)).toBe(true);
    expect(tokens.verify(url.slice(`${PUBLIC_URL}/confirm/`.length), 'confirm')).toStrictEqual({
      teamId: 3,
      bookId: 'bk',
      contactId: 'ct',
      expiresAt: Date.parse('2024-03-08T12:00:00.000Z'),
    });
  });

  it('open and click URLs carry tokens of their kind', () => {
    const open = openPixelUrl(PUBLIC_URL, tokens, 'em1');
    expect(tokens.verify(open.slice(`${PUBLIC_URL}/track/open/`.length), 'open')).toStrictEqual({ emailId: 'em1' });
    const click = clickUrl(PUBLIC_URL, tokens, 'em1', 'https://x.example/?a=1');
    expect(tokens.verify(click.slice(CLICK_PREFIX.length), 'click')).toStrictEqual({ emailId: 'em1', url: 'https://x.example/?a=1' });
  });

  it('the double opt-in placeholder is found with or without spaces, every time it appears', () => {
    expect('a {{doubleOptInUrl}} b {{ doubleOptInUrl }} c {{doubleOptInURL}}'.replace(DOUBLE_OPT_IN_PLACEHOLDER, 'X')).toBe('a X b X c {{doubleOptInURL}}');
  });
});

describe('isWebUrl', () => {
  it.each([['https://x.example'], ['http://x.example/a?b=c#d'], ['HTTPS://X.EXAMPLE/'], ['https://x.example/ü']])('%j is a web URL', (url) => {
    expect(isWebUrl(url)).toBe(true);
  });

  it.each([
    ['mailto:a@x.example'],
    ['javascript:alert(1)'],
    ['data:text/html,hi'],
    ['ftp://x.example'],
    ['//x.example/path'],
    ['/relative'],
    ['#anchor'],
    ['https://'],
    ['https://x.example/a b'],
    ['https://x.example/\r\nSet-Cookie: a=b'],
    ['https://x.example/\u0000'],
    ['https://x.example/\u007f'],
    [' https://x.example'],
  ])('%j is not one', (url) => {
    expect(isWebUrl(url)).toBe(false);
  });
});

describe('addTracking', () => {
  it('a web link is led through the click redirect, its token signing the URL it leads to', () => {
    const html = '<p><a href="https://shop.example/item?id=5">Buy</a></p>';
    const tracked = addTracking(html, options());
    const token = tokens.sign('click', { emailId: 'em1', url: 'https://shop.example/item?id=5' });
    expect(tracked).toBe(`<p><a href="${CLICK_PREFIX}${token}">Buy</a></p>`);
  });

  it('&amp; in an href is decoded: the redirect leads where the browser would have gone', () => {
    const tracked = addTracking('<a href="https://x.example/?a=1&amp;b=2&#38;c=3">x</a>', options());
    expect(clickTargets(tracked)).toStrictEqual(['https://x.example/?a=1&b=2&c=3']);
  });

  it('links in double, single or no quotes, upper-case markup, spaces around = and in the value are all tracked', () => {
    const html = `<a href='https://s.example/'>s</a><a href=https://b.example/x>b</a><A HREF="  https://w.example  ">w</A><a class="c" href = "https://e.example">e</a>`;
    const tracked = addTracking(html, options());
    expect(clickTargets(tracked)).toStrictEqual(['https://s.example/', 'https://b.example/x', 'https://w.example', 'https://e.example']);
    expect(tracked).toMatch(/^<a href="[^"]+">s<\/a><a href="[^"]+">b<\/a><A HREF="[^"]+">w<\/A><a class="c" href = "[^"]+">e<\/a>$/);
  });

  it('addTracking never tracks mailto:, tel:, anchors, relative or script links', () => {
    const html = [
      '<a href="mailto:a@x.example">m</a>',
      '<a href="tel:+123">t</a>',
      '<a href="#section">s</a>',
      '<a href="/relative">r</a>',
      '<a href="javascript:alert(1)">j</a>',
      '<a href="">e</a>',
      '<a name="top">n</a>',
      '<a href="{{unsubscribeUrl}}">p</a>',
    ].join('');
    expect(addTracking(html, options())).toBe(html);
  });

  it('the service\'s own pages (unsubscribe, confirm) are never tracked', () => {
    const html = `<a href="${PUBLIC_URL}/unsubscribe/tok">u</a><a href="${PUBLIC_URL}/confirm/tok">c</a>`;
    expect(addTracking(html, options())).toBe(html);
  });

  it('a host that only starts like the service\'s is tracked', () => {
    const tracked = addTracking('<a href="https://mr.example.evil.example/unsubscribe/x">x</a>', options());
    expect(clickTargets(tracked)).toStrictEqual(['https://mr.example.evil.example/unsubscribe/x']);
  });

  it('a link whose decoded target holds a line break is left alone', () => {
    const html = '<a href="https://x.example/&#10;Location: https://evil.example">x</a>';
    expect(addTracking(html, options())).toBe(html);
  });

  it('tracking an already tracked html changes nothing (a click link is the service\'s own page)', () => {
    const once = addTracking('<a href="https://x.example">x</a>', options());
    expect(addTracking(once, options())).toBe(once);
  });

  it('only <a> links are tracked: not stylesheets, images, or tags whose name starts with a', () => {
    const html = '<link href="https://fonts.example/css" rel="stylesheet"><abbr href="https://x.example">x</abbr><img src="https://img.example/a.png"><area href="https://x.example">';
    expect(addTracking(html, options())).toBe(html);
  });

  it('the href attribute is the one rewritten, not a data-href before it nor an href= inside another value', () => {
    const html = '<a data-href="https://a.example/" href="https://b.example/">x</a>';
    const tracked = addTracking(html, options());
    expect(tracked.startsWith('<a data-href="https://a.example/" href="https://mr.example/track/click/')).toBe(true);
    expect(clickTargets(tracked)).toStrictEqual(['https://b.example/']);
    const inValue = `<a title="href='https://a.example/'" href="https://b.example/">x</a><a title=x/href=https://a.example/>y</a>`;
    expect(clickTargets(addTracking(inValue, options()))).toStrictEqual(['https://b.example/']);
  });

  describe('the open pixel', () => {
    const pixel = `<img src="${openPixelUrl(PUBLIC_URL, tokens, 'em1')}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">`;

    it('goes just before the end of the body, and links stay untracked without click tracking', () => {
      const html = '<html><body><a href="https://x.example">x</a></BODY ></html>';
      expect(addTracking(html, options({ open: true, click: false }))).toBe(`<html><body><a href="https://x.example">x</a>${pixel}</BODY ></html>`);
    });

    it('goes before the last </body> when there are several', () => {
      expect(addTracking('a</body>b</body>c', options({ open: true, click: false }))).toBe(`a</body>b${pixel}</body>c`);
    });

    it('is appended to html without a body', () => {
      expect(addTracking('<p>Hi</p>', options({ open: true, click: false }))).toBe(`<p>Hi</p>${pixel}`);
    });

    it('carries an open token for this email, never tracked as a link', () => {
      const tracked = addTracking('<p><a href="https://x.example">x</a></p>', options({ open: true, click: true }));
      expect(tracked.endsWith(pixel)).toBe(true);
      expect(clickTargets(tracked)).toStrictEqual(['https://x.example']);
    });
  });

  it('neither kind asked for: the html is unchanged', () => {
    const html = '<body><a href="https://x.example">x</a></body>';
    expect(addTracking(html, options({ open: false, click: false }))).toBe(html);
  });
});
