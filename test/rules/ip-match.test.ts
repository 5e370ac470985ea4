import { describe, expect, it } from 'vitest';
import { clientIp, compileIpMatcher, parseAllowedIps, parseTrustProxy } from '../../src/rules/ip-match.js';

describe('parseAllowedIps: accepted entries and their canonical form', () => {
  it.each([
    ['10.0.0.1', '10.0.0.1'],
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['10.0.0.1/32', '10.0.0.1'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['192.168.1.0/24', '192.168.1.0/24'],
    ['172.16.0.0/12', '172.16.0.0/12'],
    ['255.255.255.255', '255.255.255.255'],
    ['::1', '::1'],
    ['::1/128', '::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['2001:DB8::1', '2001:db8::1'],
    ['2001:db8::/32', '2001:db8::/32'],
    ['2001:0db8:0000::/48', '2001:db8::/48'],
    ['fe80::/10', 'fe80::/10'],
    ['::/0', '::/0'],
    ['::ffff:10.0.0.1', '10.0.0.1'],
    ['::ffff:a00:1', '10.0.0.1'],
    ['::ffff:10.0.0.0/104', '10.0.0.0/8'],
    ['::ffff:0:0/96', '0.0.0.0/0'],
  ])('%j → %j', (entry, canonical) => {
    expect(parseAllowedIps([entry])).toEqual({ ok: true, value: [canonical] });
  });

  it.each([[undefined], [null], [[]]])('%j means no restriction', (entries) => {
    expect(parseAllowedIps(entries)).toEqual({ ok: true, value: [] });
  });

  it('dedupes after canonicalisation', () => {
    expect(parseAllowedIps(['10.0.0.1', '10.0.0.1/32', '::ffff:10.0.0.1', '::1', '0::1'])).toEqual({
      ok: true,
      value: ['10.0.0.1', '::1'],
    });
  });
});

describe('parseAllowedIps: refused entries', () => {
  it.each([
    ['', 'must not be empty'],
    [' 10.0.0.1', 'spaces'],
    ['10.0.0.1 ', 'spaces'],
    ['10.0.0.0 /8', 'spaces'],
    ['10.0.0.0/ 8', 'spaces'],
    ['10.0.0.0/33', 'out of range (0-32'],
    ['::/129', 'out of range (0-128'],
    ['10.0.0.0/-1', 'invalid prefix'],
    ['10.0.0.0/', 'invalid prefix'],
    ['10.0.0.0/08', 'invalid prefix'],
    ['10.0.0.0/8/8', 'invalid prefix'],
    ['10.0.0.0/x', 'invalid prefix'],
    ['10.0.0.0/1000', 'invalid prefix'],
    ['10.1.2.3/8', 'host bits set; did you mean "10.0.0.0/8"'],
    ['192.168.1.1/24', 'did you mean "192.168.1.0/24"'],
    ['2001:db8::1/32', 'did you mean "2001:db8::/32"'],
    ['garbage', 'not a valid IP'],
    ['example.com', 'not a valid IP'],
    ['10.0.0', 'not a valid IP'],
    ['10.0.0.256', 'not a valid IP'],
    ['010.0.0.1', 'not a valid IP'],
    ['10.0.0.01', 'not a valid IP'],
    ['127.1', 'not a valid IP'],
    ['0x7f.0.0.1', 'not a valid IP'],
    ['1.2.3.4.5', 'not a valid IP'],
    ['10.0.0.1:80', 'must not have a port'],
    ['[::1]', 'without brackets'],
    ['[::1]/128', 'without brackets'],
    ['1::2::3', 'not a valid IPv6'],
    ['::ffff:010.0.0.1', 'not a valid IPv6'],
    ['::g', 'not a valid IPv6'],
    ['fe80::1%eth0', 'zone'],
    ['*', 'not a valid IP'],
  ])('%j is refused (%s)', (entry, fragment) => {
    const result = parseAllowedIps(['10.0.0.1', entry]);
    expect(result).toMatchObject({ ok: false, index: 1 });
    if (!result.ok) {
      expect(result.message).toContain(fragment);
      expect(result.message.startsWith(`allowed_ips[1] ${JSON.stringify(entry)} `)).toBe(true);
    }
  });

  it.each([
    ['10.0.0.1', 'must be an array'],
    [{}, 'must be an array'],
    [Array.from({ length: 101 }, (_, i) => `10.0.0.${i}`), 'at most 100'],
  ])('list %j is refused', (entries, fragment) => {
    const result = parseAllowedIps(entries);
    expect(result).toMatchObject({ ok: false, index: null });
    if (!result.ok) expect(result.message).toContain(fragment);
  });

  it('refuses non-string entries', () => {
    expect(parseAllowedIps(['10.0.0.1', 42])).toEqual({
      ok: false,
      index: 1,
      message: 'allowed_ips[1] must be a string',
    });
  });
});

describe('compileIpMatcher', () => {
  const m = compileIpMatcher(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32', '::1', '0.0.0.0/32']);

  it.each([
    '10.0.0.1',
    '10.255.255.255',
    '192.168.1.7',
    '::ffff:10.0.0.1',
    '::FFFF:10.1.2.3',
    '::ffff:a00:1',
    '::ffff:192.168.1.7',
    '2001:db8::1',
    '2001:DB8:ffff::1',
    '2001:0db8:0000:0000:0000:0000:0000:0001',
    '::1',
    '0:0:0:0:0:0:0:1',
    '0.0.0.0',
  ])('%j matches', (ip) => {
    expect(m.matches(ip)).toBe(true);
  });

  it.each([
    '11.0.0.1',
    '9.255.255.255',
    '192.168.1.8',
    '192.168.1.70',
    '::ffff:11.0.0.1',
    '2001:db9::1',
    '::2',
    '0.0.0.1',
    '',
    'garbage',
    '010.0.0.1',
    '10.0.0',
    '10.0.0.1.',
    ' 10.0.0.1',
    '10.0.0.1/8',
    '::ffff:0a00:0001:1',
    '1.2.3.4:80',
  ])('%j does not match', (ip) => {
    expect(m.matches(ip)).toBe(false);
  });

  it('an IPv4-mapped address matches only as IPv4, not IPv6 ranges', () => {
    expect(compileIpMatcher(['::/0']).matches('::ffff:10.0.0.1')).toBe(false);
    expect(compileIpMatcher(['0.0.0.0/0']).matches('::ffff:10.0.0.1')).toBe(true);
  });

  it('ignores the zone of a link-local socket address', () => {
    expect(compileIpMatcher(['fe80::/10']).matches('fe80::1%eth0')).toBe(true);
  });

  it.each([
    ['0.0.0.0/0', '203.0.113.9', true],
    ['128.0.0.0/1', '127.255.255.255', false],
    ['128.0.0.0/1', '128.0.0.0', true],
    ['203.0.113.0/31', '203.0.113.1', true],
    ['203.0.113.0/31', '203.0.113.2', false],
    ['2001:db8:8000::/33', '2001:db8:7fff::1', false],
    ['2001:db8:8000::/33', '2001:db8:8000::1', true],
    ['2001:db8::1:0/112', '2001:db8::1:ffff', true],
    ['2001:db8::1:0/112', '2001:db8::2:0', false],
    ['::/0', '2001:db8::1', true],
  ])('%j contains %j: %s', (range, ip, expected) => {
    expect(compileIpMatcher([range]).matches(ip)).toBe(expected);
  });

  it('skips invalid entries and matches nothing when empty', () => {
    expect(compileIpMatcher(['garbage', '10.1.2.3/8']).matches('10.1.2.3')).toBe(false);
    expect(compileIpMatcher([]).matches('10.0.0.1')).toBe(false);
  });
});

describe('parseTrustProxy', () => {
  it.each([
    ['', []],
    ['   ', []],
    ['10.0.0.1', ['10.0.0.1']],
    ['10.0.0.0/8, 192.168.0.0/16', ['10.0.0.0/8', '192.168.0.0/16']],
    ['10.0.0.0/8,::1', ['10.0.0.0/8', '::1']],
    ['loopback', ['127.0.0.0/8', '::1']],
    ['LOOPBACK', ['127.0.0.0/8', '::1']],
    ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']],
    ['linklocal', ['169.254.0.0/16', 'fe80::/10']],
    ['loopback, 127.0.0.1, ::1', ['127.0.0.0/8', '::1', '127.0.0.1']],
    ['loopback,private', ['127.0.0.0/8', '::1', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7']],
  ])('%j → %j', (value, expected) => {
    expect(parseTrustProxy(value)).toEqual({ ok: true, value: expected });
  });

  it.each([
    ['10.0.0.0/33', 'out of range'],
    ['10.0.0.0/8,', 'empty entry'],
    [',10.0.0.0/8', 'empty entry'],
    ['10.0.0.0/8,,::1', 'empty entry'],
    ['10.0.0.0 /8', 'spaces'],
    ['true', 'not a valid IP'],
    ['*', 'not a valid IP'],
    ['all', 'not a valid IP'],
    ['constructor', 'not a valid IP'],
    ['toString', 'not a valid IP'],
    ['garbage', 'loopback, private, linklocal'],
  ])('%j is refused (%s)', (value, fragment) => {
    const result = parseTrustProxy(value);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message).toContain(fragment);
      expect(result.message.startsWith('trust_proxy')).toBe(true);
    }
  });
});

describe('clientIp', () => {
  const trusted = compileIpMatcher(['10.0.0.0/8', '::1', '127.0.0.1']);

  it.each<[string, string | undefined, boolean, string]>([
    // no trusted proxies configured: the socket, XFF ignored
    ['203.0.113.9', '198.51.100.1', false, '203.0.113.9'],
    ['::ffff:203.0.113.9', undefined, false, '203.0.113.9'],
    ['::ffff:203.0.113.9', '1.1.1.1', false, '203.0.113.9'],
    ['2001:db8::9', '1.1.1.1', false, '2001:db8::9'],
    // socket not trusted: XFF is the client's own claim, ignored
    ['203.0.113.9', '10.0.0.1', true, '203.0.113.9'],
    ['::ffff:203.0.113.9', '198.51.100.1', true, '203.0.113.9'],
    // trusted socket, no or empty XFF
    ['10.0.0.2', undefined, true, '10.0.0.2'],
    ['10.0.0.2', '', true, '10.0.0.2'],
    // trusted socket: right-most untrusted address
    ['10.0.0.2', '198.51.100.1', true, '198.51.100.1'],
    ['::ffff:10.0.0.2', '198.51.100.1', true, '198.51.100.1'],
    ['10.0.0.2', '198.51.100.1, 10.0.0.3', true, '198.51.100.1'],
    ['10.0.0.2', '198.51.100.1,10.0.0.3,10.0.0.4', true, '198.51.100.1'],
    ['::1', '198.51.100.1', true, '198.51.100.1'],
    // spoofing: forged left-most entries are ignored
    ['10.0.0.2', '1.2.3.4, 198.51.100.1', true, '198.51.100.1'],
    ['10.0.0.2', '10.0.0.5, 198.51.100.1', true, '198.51.100.1'],
    ['10.0.0.2', '127.0.0.1, 198.51.100.1, 10.0.0.3', true, '198.51.100.1'],
    ['10.0.0.2', 'garbage, 198.51.100.1', true, '198.51.100.1'],
    ['10.0.0.2', '::1, 198.51.100.1', true, '198.51.100.1'],
    // all trusted: the left-most
    ['10.0.0.2', '10.0.0.9, 10.0.0.8', true, '10.0.0.9'],
    ['127.0.0.1', '127.0.0.1', true, '127.0.0.1'],
    // a broken chain stops at the last address read, never returns garbage
    ['10.0.0.2', 'garbage', true, '10.0.0.2'],
    ['10.0.0.2', '198.51.100.1, garbage', true, '10.0.0.2'],
    ['10.0.0.2', '198.51.100.1, 10.0.0.3, unknown', true, '10.0.0.2'],
    ['10.0.0.2', '198.51.100.1, garbage, 10.0.0.3', true, '10.0.0.3'],
    ['10.0.0.2', '198.51.100.1,', true, '10.0.0.2'],
    ['10.0.0.2', ',', true, '10.0.0.2'],
    ['10.0.0.2', ', 10.0.0.3', true, '10.0.0.3'],
    ['10.0.0.2', '010.0.0.1', true, '10.0.0.2'],
    // forms proxies write: ports, brackets, mapped, non-canonical IPv6
    ['10.0.0.2', '198.51.100.1:5678', true, '198.51.100.1'],
    ['10.0.0.2', '[2001:db8::7]:443', true, '2001:db8::7'],
    ['10.0.0.2', '[2001:db8::7]', true, '2001:db8::7'],
    ['10.0.0.2', '2001:DB8:0::7', true, '2001:db8::7'],
    ['10.0.0.2', '::ffff:198.51.100.1', true, '198.51.100.1'],
    ['10.0.0.2', '::ffff:10.0.0.7', true, '10.0.0.7'],
    ['10.0.0.2', '  198.51.100.1  ,  10.0.0.3  ', true, '198.51.100.1'],
    ['10.0.0.2', '[2001:db8::7', true, '10.0.0.2'],
    ['10.0.0.2', '198.51.100.1:80:90', true, '10.0.0.2'],
  ])('socket %j, XFF %j, trusted %s → %j', (socket, xff, useTrust, expected) => {
    expect(clientIp(socket, xff, useTrust ? trusted : null)).toBe(expected);
  });
});
