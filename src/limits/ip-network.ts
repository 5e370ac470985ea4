import { formatIPv4, formatIPv6, mappedIPv4, parseIPv4, parseIPv6 } from '../rules/ip-literal.js';

/**
 * The network an address is judged by for IP backoff and alert coalescing (DESIGN §6/§10). An IPv6
 * client usually holds a whole /64 (SLAAC, privacy addresses, one prefix per subscriber), so keying on
 * the full address would let it start every attempt fresh; IPv4 stays per address, and an IPv4-mapped
 * IPv6 address is that IPv4 address. The result is canonical, so two spellings share one key:
 * `a.b.c.d` for IPv4, the RFC 5952 text of the /64's first address plus `/64` for
 * IPv6 (`2001:db8:1:2::/64`). Anything else (not an address) is returned
 * unchanged, so it still keys on something stable.
 */
export function ipNetworkKey(ip: string): string {
  if (parseIPv4(ip) >= 0) return ip;
  const zone = ip.indexOf('%');
  const parts = parseIPv6(zone === -1 ? ip : ip.slice(0, zone));
  if (parts === undefined) return ip;
  const mapped = mappedIPv4(parts);
  if (mapped >= 0) return formatIPv4(mapped);
  return `${formatIPv6([parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0, parts[3] ?? 0, 0, 0, 0, 0])}/64`;
}
