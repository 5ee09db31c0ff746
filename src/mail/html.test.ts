import { describe, expect, it } from 'vitest';
import { onAThread } from '../../test/helpers/on-a-thread.js';
import { decodeEntities, escapeHtml, htmlToText, TEXT_FROM_HTML_MAX } from './html.js';

describe('escapeHtml', () => {
  it('escapes the five characters that can break out of content or a quoted attribute', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  });

  it('leaves everything else, non-ASCII included, as it is', () => {
    expect(escapeHtml('Grüße, 日本 😀 = ok; {{ name }}')).toBe('Grüße, 日本 😀 = ok; {{ name }}');
  });

  it('escaped text reads back as the same text, even text that looks like an entity', () => {
    for (const text of ['&amp;', '&lt;b&gt;', '"\'<>&', '&#39;', 'a & b < c', '&#x1F600;']) {
      expect(decodeEntities(escapeHtml(text))).toBe(text);
    }
  });

  it('an escaped value cannot close its attribute', () => {
    const value = escapeHtml(`" onmouseover="alert(1)`);
    expect(value).not.toMatch(/["']/);
    expect(`<a title="${value}">`).toBe('<a title="&quot; onmouseover=&quot;alert(1)">');
  });
});

describe('decodeEntities', () => {
  it('decodes the common named references, in any case', () => {
    expect(decodeEntities('&amp;&lt;&gt;&quot;&apos;&nbsp;&copy;&reg;&hellip;&mdash;&ndash;')).toBe('&<>"\' ©®…—–');
    expect(decodeEntities('&AMP;&Lt;')).toBe('&<');
  });

  it('decodes decimal and hexadecimal references, astral ones included', () => {
    expect(decodeEntities('&#65;&#x42;&#X43;&#x1F600;&#128512;')).toBe('ABC😀😀');
  });

  it('decodes in one pass: an escaped entity stays an entity', () => {
    expect(decodeEntities('&amp;lt;')).toBe('&lt;');
    expect(decodeEntities('&amp;amp;')).toBe('&amp;');
  });

  it('leaves unknown names and references without a semicolon as written', () => {
    expect(decodeEntities('&bogus; &amp &copy &#65 AT&T')).toBe('&bogus; &amp &copy &#65 AT&T');
  });

  it('leaves a code point that is no character as written: zero, a surrogate, beyond U+10FFFF', () => {
    expect(decodeEntities('&#0;&#xD800;&#xDFFF;&#x110000;&#99999999999999999999;')).toBe('&#0;&#xD800;&#xDFFF;&#x110000;&#99999999999999999999;');
  });
});

describe('htmlToText', () => {
  it('renders a whole email: blocks become lines, invisible parts go, entities are decoded', () => {
    const html = `<!DOCTYPE html><html><head><title>T</title><style>p{color:red}</style></head><body>
<!--[if mso]><p>Outlook only</p><![endif]-->
<h1>Welcome,
   Ada</h1><p>First   line<br>second line<br/>third</p>
<ul><li>one</li><li>two</li></ul>
<table><tr><td>a</td><td>b</td></tr><tr><th>c</th><td>d</td></tr></table>
<p>Read <a href="https://example.com/a?b=1&amp;c=2">the post</a>.</p>
<script>alert(1)</script><SCRIPT type="x">var a = "<p>";</SCRIPT >
<p>Fish &amp; chips&nbsp;&mdash; 1 &lt; 2 &#169; &#x1F600;</p></body></html>`;
    expect(htmlToText(html)).toBe(
      'Welcome, Ada\n\nFirst line\nsecond line\nthird\n\n- one\n- two\n\na b\n\nc d\n\nRead the post (https://example.com/a?b=1&c=2).\n\nFish & chips — 1 < 2 © 😀',
    );
  });

  describe('html-to-text keeps a link\'s target', () => {
    it('a link shows its label then its target, with &amp; in the href decoded', () => {
      expect(htmlToText('<a href="https://example.com/a?b=1&amp;c=2">the post</a>')).toBe('the post (https://example.com/a?b=1&c=2)');
    });

    it('in double, single or no quotes, and in upper-case markup', () => {
      expect(htmlToText("<a href='https://s.example'>single</a> <a href=https://b.example/x>bare</a>")).toBe('single (https://s.example) bare (https://b.example/x)');
      expect(htmlToText('<A HREF="https://x.example">X</A>')).toBe('X (https://x.example)');
    });

    it('with other attributes around the href and markup inside the label', () => {
      expect(htmlToText('<a class="btn" href="https://x.example" target="_blank"><b>Go</b> <i>now</i></a>')).toBe('Go now (https://x.example)');
    });

    it('a link whose label is its target shows it once, also when the label has entities', () => {
      expect(htmlToText('<a href="https://example.com">https://example.com</a>')).toBe('https://example.com');
      expect(htmlToText('<a href="https://example.com/?a=1&amp;b=2">https://example.com/?a=1&amp;b=2</a>')).toBe('https://example.com/?a=1&b=2');
    });

    it('an image link keeps its target even without a text label', () => {
      expect(htmlToText('<a href="https://x.example"><img src="logo.png" alt="Logo"></a>')).toBe('(https://x.example)');
    });

    it('a mailto: link keeps its address', () => {
      expect(htmlToText('<a href="mailto:a@b.example">Write</a>')).toBe('Write (mailto:a@b.example)');
    });

    it('an anchor within the page or an empty href shows only the label', () => {
      expect(htmlToText('<a href="#top">Back to top</a>')).toBe('Back to top');
      expect(htmlToText('<a href="">x</a>')).toBe('x');
      expect(htmlToText('<a name="x">named</a>')).toBe('named');
    });

    it('the href attribute is the one read, not a data-href before it nor an href= inside another value', () => {
      expect(htmlToText('<a data-href="https://other.example" href="https://real.example">go</a>')).toBe('go (https://real.example)');
      expect(htmlToText(`<a title="see href='https://other.example'" href="https://real.example">go</a>`)).toBe('go (https://real.example)');
      expect(htmlToText('<a title=x/href=https://other.example>go</a>')).toBe('go');
    });

    it('a link target with encoded markup characters is shown exactly as the browser reads it', () => {
      expect(htmlToText('<a href="https://x.example/?q=&lt;b&gt;">go</a>')).toBe('go (https://x.example/?q=<b>)');
      expect(htmlToText('<a href="https://x.example/?q=&amp;lt;">go</a>')).toBe('go (https://x.example/?q=&lt;)');
    });
  });

  it('markup written as text stays text', () => {
    expect(htmlToText('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>')).toBe('<script>alert(1)</script>');
  });

  it('head, style, script and title go with their content, in any case', () => {
    expect(htmlToText('<HEAD><Title>t</TITLE></head><StYlE>p{}</sTyLe><script>x()</script>Body')).toBe('Body');
  });

  it('a <header> element is content, not taken for <head>, even with a stray </head> after it', () => {
    expect(htmlToText('<header>Top</header><p>x</p>')).toBe('Top\n\nx');
    expect(htmlToText('<header>Top</header><p>x</p></head><p>y</p>')).toBe('Top\n\nx\n\ny');
    expect(htmlToText('<titlebar>Bar</titlebar><p>x</p></title>')).toBe('Bar\n\nx');
  });

  it('comments go, links inside them too', () => {
    expect(htmlToText('a<!-- <a href="https://hidden.example">h</a> -->b')).toBe('ab');
  });

  it('source line breaks are spaces and blank lines never pile up', () => {
    expect(htmlToText('one\ntwo\r\n\tthree')).toBe('one two three');
    expect(htmlToText('<p>a</p>\n\n\n<p>b</p><div></div><div></div><p>c</p>')).toBe('a\n\nb\n\nc');
    expect(htmlToText('<hr>x<blockquote>q</blockquote>')).toBe('x\n\nq');
  });

  it('plain text without markup is given back trimmed', () => {
    expect(htmlToText('  Hello, world  ')).toBe('Hello, world');
    expect(htmlToText('')).toBe('');
  });
});

describe('htmlToText on hostile html', () => {
  // Each of these once cost a scan of the rest of the text per opener: quadratic (or worse), minutes
  // for a body of a megabyte, all of it on the event loop of the request that brought it.
  it.each([
    ['unclosed tags', '<a '],
    ['unclosed links', '<a href="https://example.com/">x '],
    ['unclosed comments', '<!-- '],
    ['unclosed scripts', '<script>x '],
    ['unclosed tags whose unquoted values run into the next tag', ' x=y<a'],
    ['unclosed tags whose quoted values hold the next tag', ` x="<a " y='<a '`],
  ])('reads a megabyte of %s in one pass', async (_what, unit) => {
    const html = `<p>Start</p>${unit.repeat(Math.ceil(1_000_000 / unit.length))}`;
    expect((await onAThread<string>(new URL('./html.ts', import.meta.url), 'htmlToText', html)).startsWith('Start')).toBe(true);
  });

  it(`reads at most ${TEXT_FROM_HTML_MAX} characters of markup, cut before a tag, and says where it stopped`, () => {
    const paragraph = '<p>Some &amp; more</p>';
    const html = `${paragraph.repeat(Math.ceil(TEXT_FROM_HTML_MAX / paragraph.length))}<p>PAST THE BOUND</p>`;
    const text = htmlToText(html);
    expect(text.startsWith('Some & more\n\nSome & more')).toBe(true);
    expect(text.endsWith('Some & more\n\n[…]')).toBe(true);
    expect(text).not.toContain('PAST THE BOUND');
    expect(htmlToText(html.slice(0, TEXT_FROM_HTML_MAX))).not.toContain('[…]');
  });

  it('a tag left open does not swallow the link after it, whatever its values hold', () => {
    expect(htmlToText('<a x=y<a href="https://x.example">go</a>')).toContain('go (https://x.example)');
    expect(htmlToText(`<a title="a < b" href="https://x.example">go</a>`)).toBe('go (https://x.example)');
  });
});
