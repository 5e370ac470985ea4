import { describe, expect, it } from 'vitest';
import { parseAllowedHosts } from '../../src/rules/allowed-hosts.js';

describe('parseAllowedHosts: accepted entries and their canonical form', () => {
  it.each([
    ['app.example.com', 'app.example.com'],
    ['localhost', 'localhost'],
    ['APP.Example.COM', 'app.example.com'],
    ['example.com.', 'example.com'],
    ['bücher.example', 'xn--bcher-kva.example'],
    ['BÜCHER.example', 'xn--bcher-kva.example'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['ａｐｐ.example.com', 'app.example.com'],
    ['my_service.internal', 'my_service.internal'],
    ['a-b.example.com', 'a-b.example.com'],
    ['127.0.0.1', '127.0.0.1'],
    ['[::1]', '[::1]'],
    ['[0:0:0:0:0:0:0:1]', '[::1]'],
    ['[2001:DB8::1]', '[2001:db8::1]'],
    ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]'],
    ['*.example.com', '*.example.com'],
    ['*.Example.COM.', '*.example.com'],
    ['*.bücher.example', '*.xn--bcher-kva.example'],
    // One registrant's names under a public suffix are fine, wildcard or not.
    ['*.myapp.vercel.app', '*.myapp.vercel.app'],
    ['*.example.co.uk', '*.example.co.uk'],
    ['vercel.app', 'vercel.app'],
    ['*.corp.internal', '*.corp.internal'],
    ['https://app.example.com:8443', 'https://app.example.com:8443'],
    ['http://localhost:3000', 'http://localhost:3000'],
    ['https://x.com:443', 'https://x.com'],
    ['http://x.com:80', 'http://x.com'],
    ['http://x.com:443', 'http://x.com:443'],
    ['https://x.com:80', 'https://x.com:80'],
    ['https://x.com/', 'https://x.com'],
    ['HTTPS://X.COM', 'https://x.com'],
    ['https://bücher.example', 'https://xn--bcher-kva.example'],
    ['https://example.com.:8443', 'https://example.com:8443'],
    ['http://[::1]:3000', 'http://[::1]:3000'],
    ['http://[::1]:80/', 'http://[::1]'],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['https://x.com:08443', 'https://x.com:8443'],
    [`${'a'.repeat(63)}.com`, `${'a'.repeat(63)}.com`],
    [`${'abcdefghi.'.repeat(25)}com`, `${'abcdefghi.'.repeat(25)}com`],
  ])('%j → %j', (entry, canonical) => {
    expect(parseAllowedHosts([entry])).toEqual({ ok: true, value: [canonical] });
  });

  it('dedupes after normalisation, keeping the first occurrence and order', () => {
    expect(
      parseAllowedHosts([
        'b.com',
        'Example.com',
        'example.com.',
        'https://x.com:443',
        'https://x.com',
        'a.com',
      ]),
    ).toEqual({ ok: true, value: ['b.com', 'example.com', 'https://x.com', 'a.com'] });
  });

  it('keeps overlapping but different entries', () => {
    expect(parseAllowedHosts(['example.com', 'https://example.com', '*.example.com'])).toEqual({
      ok: true,
      value: ['example.com', 'https://example.com', '*.example.com'],
    });
  });

  it('accepts 100 entries', () => {
    const entries = Array.from({ length: 100 }, (_, i) => `h${i}.example.com`);
    expect(parseAllowedHosts(entries)).toEqual({ ok: true, value: entries });
  });
});

describe('parseAllowedHosts: refused entries', () => {
  it.each([
    ['', 'must not be empty'],
    [' example.com', 'spaces'],
    ['example.com ', 'spaces'],
    ['exa mple.com', 'spaces'],
    ['example.com\t', 'spaces'],
    ['example.com\n', 'spaces'],
    ['exa\u00a0mple.com', 'spaces'],
    ['exa\u0000mple.com', 'control'],
    ['https://a.com/path', 'must not contain a path'],
    ['https://a.com//', 'must not contain a path'],
    ['https://a.com/?q=1', 'must not contain a query'],
    ['https://a.com?q=1', 'must not contain a query'],
    ['https://a.com#x', 'must not contain a fragment'],
    ['https://a.com/#x', 'must not contain a fragment'],
    ['example.com/', 'must not contain a path'],
    ['example.com/app', 'must not contain a path'],
    ['example.com?x', 'must not contain a query'],
    ['example.com#x', 'must not contain a fragment'],
    ['https://user@a.com', 'user info'],
    ['https://user:pw@a.com', 'user info'],
    ['example.com@evil.net', 'user info'],
    ['ftp://a.com', 'http or https'],
    ['file:///etc/passwd', 'http or https'],
    ['chrome-extension://abcdef', 'http or https'],
    ['ws://a.com', 'http or https'],
    ['1http://a.com', 'invalid scheme'],
    ['://a.com', 'invalid scheme'],
    ['https://', 'must contain a host name'],
    ['https://:443', 'must contain a host name'],
    ['example.com:8080', 'use a full origin such as "https://example.com:8080"'],
    ['localhost:3000', 'use a full origin such as "https://localhost:3000"'],
    ['[::1]:3000', 'has a port but no scheme'],
    ['https:example.com', 'not a valid host name'],
    ['https://a.com:0', 'out of range'],
    ['https://a.com:65536', 'out of range'],
    ['https://a.com:99999', 'out of range'],
    ['https://a.com:123456', 'non-numeric'],
    ['https://a.com:-1', 'non-numeric'],
    ['https://a.com:http', 'non-numeric'],
    ['https://a.com:', 'empty port'],
    ['https://a.com:8080:9090', 'IPv6'],
    ['::1', 'brackets'],
    ['2001:db8::1', 'brackets'],
    ['[::1', 'closing'],
    ['[::1]x', 'unexpected characters'],
    ['[fe80::1%25eth0]', 'zone'],
    ['[::g]', 'not a valid IPv6'],
    ['[1.2.3.4]', 'not a valid IPv6'],
    ['*.com', 'too broad'],
    ['*.localhost', 'too broad'],
    // Public suffixes, where anyone can have a site: every one of them would be allowed.
    ['*.co.uk', 'is a public suffix'],
    ['*.vercel.app', 'is a public suffix'],
    ['*.github.io', 'is a public suffix'],
    ['*.Netlify.App', 'is a public suffix'],
    ['*', 'only as the whole first label'],
    ['*.', 'must contain a host name'],
    ['a.*.com', 'only as the whole first label'],
    ['*example.com', 'only as the whole first label'],
    ['**.x.com', 'only as the whole first label'],
    ['*.*.x.com', 'only as the whole first label'],
    ['*a.example.com', 'only as the whole first label'],
    ['ex*ample.com', 'only as the whole first label'],
    ['*.example.com:443', 'must not have a port'],
    ['https://*.example.com', 'wildcard'],
    ['*.1.2.3', 'not a valid IPv4'],
    ['*.10.0.0.1', 'not an IP address'],
    ['*.[::1]', 'not an IP address'],
    ['exa%41mple.com', 'invalid character "%"'],
    ['exam!ple.com', 'invalid character "!"'],
    ['example.com\\evil.net', 'invalid character "\\\\"'],
    ['a,b.com', 'invalid character ","'],
    ['a\uff0fb.com', 'not a valid host name'],
    ['a..b.com', 'empty label'],
    ['.example.com', 'empty label'],
    ['example.com..', 'empty label'],
    ['.', 'must contain a host name'],
    ['-a.com', 'starts or ends with "-"'],
    ['a-.com', 'starts or ends with "-"'],
    [`${'a'.repeat(64)}.com`, 'label longer than 63'],
    [`${'abcdefghi.'.repeat(26)}com`, 'longer than 253'],
    [`${'abcdefghi.'.repeat(25)}comx`, 'longer than 253'],
    ['a'.repeat(301), 'longer than 300'],
    ['xn--zz.com', 'not a valid host name'],
    ['127.1', 'not a valid IPv4'],
    ['0x7f.0.0.1', 'not a valid IPv4'],
    ['127.000.0.1', 'not a valid IPv4'],
    ['010.0.0.1', 'not a valid IPv4'],
    ['256.0.0.1', 'not a valid IPv4'],
    ['1.2.3.4.5', 'not a valid IPv4'],
    ['foo.123', 'not a valid IPv4'],
    ['http://127.1', 'not a valid IPv4'],
  ])('%j is refused (%s)', (entry, fragment) => {
    const result = parseAllowedHosts(['ok.example.com', entry]);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.index).toBe(1);
    expect(result.message).toContain(fragment);
    expect(
      result.message.startsWith(
        `allowed_hosts[1] ${JSON.stringify(entry.length > 80 ? `${entry.slice(0, 80)}\u2026` : entry)} `,
      ),
    ).toBe(true);
  });

  it('names the entry in the message', () => {
    expect(parseAllowedHosts(['a.com', 'b.com', 'https://a.com/path'])).toEqual({
      ok: false,
      index: 2,
      message: 'allowed_hosts[2] "https://a.com/path" must not contain a path',
    });
  });

  it.each([
    [undefined, 'non-empty array'],
    [null, 'non-empty array'],
    ['example.com', 'non-empty array'],
    [{ 0: 'example.com' }, 'non-empty array'],
    [[], 'at least one'],
    [Array.from({ length: 101 }, (_, i) => `h${i}.com`), 'at most 100'],
  ])('list %j is refused', (entries, fragment) => {
    const result = parseAllowedHosts(entries);
    expect(result).toMatchObject({ ok: false, index: null });
    if (!result.ok) expect(result.message).toContain(fragment);
  });

  it.each([[1], [null], [{}], [['a.com']]])('non-string entry %j is refused', (entry) => {
    expect(parseAllowedHosts(['a.com', entry])).toEqual({
      ok: false,
      index: 1,
      message: 'allowed_hosts[1] must be a string',
    });
  });
});
