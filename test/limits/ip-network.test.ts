import { describe, expect, it } from 'vitest';
import { ipNetworkKey } from '../../src/limits/ip-network.js';

describe('ipNetworkKey: the network backoff and coalescing judge an address by', () => {
  it.each([
    // IPv4 stays per address.
    ['198.51.100.7', '198.51.100.7'],
    ['198.51.100.8', '198.51.100.8'],
    // IPv4-mapped IPv6 is that IPv4 address, however it is spelled.
    ['::ffff:198.51.100.7', '198.51.100.7'],
    ['::FFFF:c633:6407', '198.51.100.7'],
    ['0:0:0:0:0:ffff:198.51.100.7', '198.51.100.7'],
    // IPv6 is keyed on the /64: addresses of one /64 share a key, whatever the spelling.
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:abcd::9', '2001:db8:1:2::/64'],
    ['fe80::1%eth0', 'fe80::/64'],
    ['::1', '::/64'],
    // The next /64 is another network.
    ['2001:db8:1:3::1', '2001:db8:1:3::/64'],
    ['2001:db8::', '2001:db8::/64'],
    // Not an address: kept as it is.
    ['unknown', 'unknown'],
    ['', ''],
  ])('%s → %s', (ip, key) => {
    expect(ipNetworkKey(ip)).toBe(key);
  });
});
