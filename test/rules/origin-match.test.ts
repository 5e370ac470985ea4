import { describe, expect, it } from 'vitest';
import { compileOriginMatcher, requestOrigin } from '../../src/rules/origin-match.js';

const matcher = compileOriginMatcher([
  'example.com',
  'localhost',
  '127.0.0.1',
  '[::1]',
  'xn--bcher-kva.example',
  '*.wild.example.org',
  'https://app.site.net:8443',
  'https://secure.site.net',
  'http://plain.site.net',
  'http://[2001:db8::1]:3000',
  'host_under.internal',
]);

describe('compileOriginMatcher: matching origins', () => {
  it.each([
    // host entries: any http(s) scheme and port, case-insensitive
    'https://example.com',
    'http://example.com',
    'https://example.com:8443',
    'http://example.com:3000',
    'HTTPS://EXAMPLE.COM',
    'https://Example.Com:443',
    'https://example.com.',
    'https://example.com.:8443',
    'http://localhost:3000',
    'http://localhost',
    'http://127.0.0.1:5173',
    'http://[::1]:3000',
    'http://[::1]',
    'http://[0:0:0:0:0:0:0:1]:3000',
    'https://xn--bcher-kva.example',
    'https://XN--BCHER-KVA.example',
    'https://bücher.example',
    'http://host_under.internal:8080',
    // wildcard: strict subdomains, any depth
    'https://a.wild.example.org',
    'https://a.b.wild.example.org',
    'http://A.WILD.EXAMPLE.ORG:8080',
    'https://a.wild.example.org.',
    // full origins: exact scheme, host, effective port
    'https://app.site.net:8443',
    'https://APP.site.net:8443',
    'https://secure.site.net',
    'https://secure.site.net:443',
    'http://plain.site.net',
    'http://plain.site.net:80',
    'http://[2001:db8::1]:3000',
    'http://[2001:DB8:0::1]:3000',
  ])('%j matches', (origin) => {
    expect(matcher.matches(origin)).toBe(true);
  });
});

describe('compileOriginMatcher: refused origins', () => {
  it.each([
    [undefined],
    [''],
    ['null'],
    ['example.com'],
    ['//example.com'],
    ['https://'],
    ['https://:443'],
    // suffix, prefix and substring tricks
    ['https://evilexample.com'],
    ['https://xexample.com'],
    ['https://example.com.evil.net'],
    ['https://example.com@evil.net'],
    ['https://evil.net@example.com'],
    ['https://user:pw@example.com'],
    ['https://example.com%2eevil.net'],
    ['https://example.com\\.evil.net'],
    ['https://evil.net/example.com'],
    ['https://evil.net?example.com'],
    ['https://evil.net#example.com'],
    ['https://example.co'],
    ['https://example.comm'],
    ['https://sub.example.com'],
    ['https://localhost.evil.net'],
    ['https://127.0.0.1.evil.net'],
    ['https://notlocalhost'],
    // paths, whitespace, odd punctuation
    ['https://example.com/'],
    ['https://example.com/path'],
    ['https://example.com?x=1'],
    ['https://example.com#x'],
    [' https://example.com'],
    ['https://example.com '],
    ['https://exa mple.com'],
    ['https://example.com\t'],
    ['https://example..com'],
    ['https://.example.com'],
    ['https://example.com..'],
    ['http\u001a//example.com'],
    ['http:/\u000fexample.com'],
    // ports
    ['https://example.com:'],
    ['https://example.com:0'],
    ['https://example.com:65536'],
    ['https://example.com:123456'],
    ['https://example.com:80a'],
    ['https://example.com:-1'],
    ['https://example.com:8080:9090'],
    // schemes
    ['file://example.com'],
    ['file:///home/me/index.html'],
    ['chrome-extension://abcdefghijklmnop'],
    ['moz-extension://0f2e5c3a'],
    ['ws://example.com'],
    ['ftp://example.com'],
    ['httpx://example.com'],
    ['https:example.com'],
    ['https:/example.com'],
    // wildcards never match the apex or siblings
    ['https://wild.example.org'],
    ['https://example.org'],
    ['https://xwild.example.org'],
    ['https://a.xwild.example.org'],
    ['https://wild.example.org.evil.net'],
    ['https://a.wild.example.org.evil.net'],
    ['https://.wild.example.org'],
    ['https://a..wild.example.org'],
    ['https://\u3002wild.example.org'],
    // full origins need the exact scheme and port
    ['http://app.site.net:8443'],
    ['https://app.site.net'],
    ['https://app.site.net:8444'],
    ['http://secure.site.net'],
    ['https://secure.site.net:8443'],
    ['https://plain.site.net'],
    ['http://plain.site.net:8080'],
    ['http://[2001:db8::1]'],
    ['https://[2001:db8::1]:3000'],
    ['http://[2001:db8::2]:3000'],
    // IP forms
    ['http://127.1'],
    ['http://0x7f.0.0.1'],
    ['http://2130706433'],
    ['http://[::1'],
    ['http://[::1]x'],
    ['http://[::1]:'],
    ['http://[fe80::1%25eth0]'],
    ['http://::1'],
  ])('%j does not match', (origin) => {
    expect(matcher.matches(origin)).toBe(false);
  });
});

describe('compileOriginMatcher: entry handling', () => {
  it('compiles non-canonical spellings the same way as parseAllowedHosts', () => {
    const m = compileOriginMatcher(['Example.COM.', 'HTTPS://Foo.com:443', '*.Bücher.example']);
    expect(m.matches('http://example.com:1234')).toBe(true);
    expect(m.matches('https://foo.com')).toBe(true);
    expect(m.matches('https://a.xn--bcher-kva.example')).toBe(true);
  });

  it('skips invalid stored entries instead of matching loosely', () => {
    const m = compileOriginMatcher(['', '*', '*.com', 'https://a.com/path', 'example.com:8080', 'ok.com']);
    expect(m.matches('https://a.com')).toBe(false);
    expect(m.matches('https://x.com')).toBe(false);
    expect(m.matches('https://example.com:8080')).toBe(false);
    expect(m.matches('https://ok.com')).toBe(true);
  });

  it('an empty list matches nothing', () => {
    expect(compileOriginMatcher([]).matches('https://example.com')).toBe(false);
  });

  it('a wildcard and an exact host together cover apex and subdomains', () => {
    const m = compileOriginMatcher(['example.com', '*.example.com']);
    expect(m.matches('https://example.com')).toBe(true);
    expect(m.matches('https://a.example.com')).toBe(true);
    expect(m.matches('https://evilexample.com')).toBe(false);
  });

  it('stays correct with 1,000 entries of each kind', () => {
    const entries: string[] = [];
    for (let i = 0; i < 1000; i++) {
      entries.push(`h${i}.example.com`, `*.w${i}.example.net`, `https://o${i}.example.org:${1000 + i}`);
    }
    const m = compileOriginMatcher(entries);
    expect(m.matches('https://h999.example.com')).toBe(true);
    expect(m.matches('https://x.y.w999.example.net')).toBe(true);
    expect(m.matches('https://w999.example.net')).toBe(false);
    expect(m.matches('https://o999.example.org:1999')).toBe(true);
    expect(m.matches('https://o999.example.org:1998')).toBe(false);
    expect(m.matches('https://h1000.example.com')).toBe(false);
  });
});

describe('requestOrigin', () => {
  it.each<[string | undefined, string | undefined, string | undefined]>([
    // Origin wins, returned verbatim
    ['https://app.example.com', undefined, 'https://app.example.com'],
    ['https://app.example.com', 'https://other.example.com/page', 'https://app.example.com'],
    ['HTTPS://App.Example.com:8443', undefined, 'HTTPS://App.Example.com:8443'],
    ['http://[::1]:3000', undefined, 'http://[::1]:3000'],
    // a present but unusable Origin never falls back to Referer
    ['null', 'https://app.example.com/page', undefined],
    ['https://app.example.com/path', 'https://app.example.com/', undefined],
    ['https://user@app.example.com', undefined, undefined],
    ['file://', 'https://app.example.com/', undefined],
    ['chrome-extension://abcdef', undefined, undefined],
    ['garbage', 'https://app.example.com/', undefined],
    // no Origin: the origin part of Referer
    [undefined, 'https://app.example.com/some/page?q=1#frag', 'https://app.example.com'],
    ['', 'https://app.example.com/some/page', 'https://app.example.com'],
    [undefined, 'https://App.Example.COM:443/x', 'https://app.example.com'],
    [undefined, 'http://localhost:3000/', 'http://localhost:3000'],
    [undefined, 'http://[::1]:3000/app', 'http://[::1]:3000'],
    [undefined, 'https://bücher.example/seite', 'https://xn--bcher-kva.example'],
    [undefined, 'https://app.example.com/path/https://evil.net', 'https://app.example.com'],
    [undefined, 'https://evil.net/?https://app.example.com', 'https://evil.net'],
    // Referer garbage
    [undefined, undefined, undefined],
    [undefined, '', undefined],
    [undefined, 'null', undefined],
    [undefined, 'not a url', undefined],
    [undefined, '/relative/path', undefined],
    [undefined, 'app.example.com', undefined],
    [undefined, 'file:///etc/passwd', undefined],
    [undefined, 'chrome-extension://abcdef/page.html', undefined],
    [undefined, 'data:text/html,hello', undefined],
    [undefined, 'javascript:alert(1)', undefined],
    [undefined, 'https://user:pw@app.example.com/', undefined],
    [undefined, 'https://app.example.com@evil.net/', undefined],
    [undefined, 'https://', undefined],
  ])('Origin %j, Referer %j → %j', (origin, referer, expected) => {
    expect(requestOrigin(origin, referer)).toBe(expected);
  });

  it('feeds the matcher: a Referer-derived origin matches like an Origin header', () => {
    const m = compileOriginMatcher(['https://app.example.com', '*.example.net']);
    expect(m.matches(requestOrigin(undefined, 'https://app.example.com/page?x=1'))).toBe(true);
    expect(m.matches(requestOrigin(undefined, 'https://a.example.net:8443/'))).toBe(true);
    expect(m.matches(requestOrigin(undefined, 'https://example.net/'))).toBe(false);
    expect(m.matches(requestOrigin(undefined, 'https://app.example.com.evil.net/'))).toBe(false);
    expect(m.matches(requestOrigin('null', 'https://app.example.com/'))).toBe(false);
  });
});
