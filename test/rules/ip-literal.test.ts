import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { formatIPv6, mappedIPv4Text, parseIPv4, parseIPv6 } from '../../src/rules/ip-literal.js';

// ipaddr.js is the oracle for well-formed input; the hand-written parser must agree with it.
describe('parseIPv6 / formatIPv6 agree with ipaddr.js', () => {
  it.each([
    '::',
    '::1',
    '1::',
    '1::1',
    '::ffff:1.2.3.4',
    '::ffff:102:304',
    '64:ff9b::192.0.2.33',
    '2001:db8::1',
    '2001:DB8::1',
    '2001:0db8:0000:0000:0000:0000:0000:0001',
    '2001:db8:0:0:1:0:0:1',
    '2001:db8::1:0:0:1',
    '2001:0:0:1:0:0:0:1',
    '1:2:3:4:5:6:7:8',
    '1:2:3:4:5:6:7::',
    '::2:3:4:5:6:7:8',
    '1:0:3:4:5:6:7:8',
    'fe80::1:2',
    'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
    '1:2:3:4:5:6:1.2.3.4',
    '0:0:0:0:0:0:0:0',
    '0:0:0:0:0:0:0:1',
  ])('%j', (text) => {
    const parts = parseIPv6(text);
    expect(parts).toEqual(ipaddr.IPv6.parse(text).parts);
    expect(formatIPv6(parts ?? [])).toBe(ipaddr.IPv6.parse(text).toRFC5952String());
  });

  it('reads ::a.b.c.d as RFC 4291 IPv4-compatible, not mapped (ipaddr.js differs here)', () => {
    expect(parseIPv6('::1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0, 0x102, 0x304]);
    expect(formatIPv6([0, 0, 0, 0, 0, 0, 0x102, 0x304])).toBe('::102:304');
  });

  it.each([
    '',
    ':',
    ':::',
    '1',
    ':1',
    '1:',
    '1:2',
    '1::2::3',
    '1:::2',
    '::1::',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '::1:2:3:4:5:6:7:8',
    '1:2:3:4:5:6:7:8::',
    '12345::1',
    '::g',
    '::1 ',
    ' ::1',
    '::1%eth0',
    '[::1]',
    '::ffff:1.2.3',
    '::ffff:1.2.3.4.5',
    '::ffff:010.0.0.1',
    '::ffff:256.0.0.1',
    '::1.2.3.4:5',
    '1.2.3.4',
    '1:2:3:4:5:6:7:1.2.3.4',
    '1:2:3:4:5:6:7:8:1.2.3.4',
    'a:b:c:d:e:f:1.2.3.4::',
  ])('%j is refused', (text) => {
    expect(parseIPv6(text)).toBeUndefined();
  });
});

describe('parseIPv4', () => {
  it.each([
    ['0.0.0.0', 0],
    ['10.0.0.1', 0x0a000001],
    ['255.255.255.255', 0xffffffff],
    ['192.168.1.7', 0xc0a80107],
  ])('%j → %d', (text, value) => {
    expect(parseIPv4(text)).toBe(value);
  });

  it.each([
    '',
    '1',
    '1.2.3',
    '1.2.3.4.',
    '.1.2.3',
    '1..2.3',
    '01.2.3.4',
    '1.2.3.256',
    '1.2.3.1000',
    '1.2.3.-4',
    '0x1.2.3.4',
    '1.2.3.4 ',
  ])('%j is refused', (text) => {
    expect(parseIPv4(text)).toBe(-1);
  });
});

describe('mappedIPv4Text', () => {
  it.each([
    ['::ffff:10.0.0.1', 0x0a000001],
    ['::FFFF:10.0.0.1', 0x0a000001],
    ['::ffff:010.0.0.1', -1],
    ['::fffe:10.0.0.1', -1],
    [':::ffff:10.0.0.1', -1],
    ['::ffff:a00:1', -1],
    ['0::ffff:10.0.0.1', -1],
  ])('%j → %d', (text, value) => {
    expect(mappedIPv4Text(text)).toBe(value);
  });
});
