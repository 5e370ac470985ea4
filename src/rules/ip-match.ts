import { formatIPv4, formatIPv6, mappedIPv4, mappedIPv4Text, parseIPv4, parseIPv6 } from './ip-literal.js';
import type { ParseListResult } from './allowed-hosts.js';
import { hasSpaceOrControl, quote } from './text.js';

/**
 * `authorized_ips` of a token, the `trust_proxy` setting, and the client address behind proxies.
 *
 * Canonical entries: a single address is written without a prefix (`10.0.0.1`, `2001:db8::1`), a range
 * as its network address and prefix (`10.0.0.0/8`, `2001:db8::/32`). IPv4-mapped IPv6 (`::ffff:a.b.c.d`,
 * what a dual-stack socket reports for an IPv4 client) is treated as the IPv4 address everywhere.
 */

export const MAX_ALLOWED_IPS = 100;

export interface IpMatcher {
  matches(ip: string): boolean;
}

type IpEntry =
  | { readonly v4: true; readonly net: number; readonly prefix: number }
  | { readonly v4: false; readonly parts: readonly number[]; readonly prefix: number };

type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const PREFIX = /^(?:0|[1-9][0-9]{0,2})$/;

/**
 * Named `trust_proxy` ranges. `private` is RFC 1918 plus IPv6 unique-local (fc00::/7): the addresses
 * a load balancer in the same network has. `linklocal` is offered for cloud metadata-style setups.
 */
const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
};

/**
 * Optional list: absent (`undefined`/`null`) or empty means "any IP". Duplicates after
 * canonicalisation are dropped, first occurrence kept, as for `allowed_hosts`.
 */
export function parseAllowedIps(entries: unknown): ParseListResult {
  if (entries === undefined || entries === null) return { ok: true, value: [] };
  if (!Array.isArray(entries)) {
    return { ok: false, index: null, message: 'allowed_ips must be an array of IP addresses or CIDR ranges' };
  }
  if (entries.length > MAX_ALLOWED_IPS) {
    return {
      ok: false,
      index: null,
      message: `allowed_ips has ${entries.length} entries; at most ${MAX_ALLOWED_IPS} are allowed`,
    };
  }
  const seen = new Set<string>();
  for (let index = 0; index < entries.length; index++) {
    const entry: unknown = entries[index];
    if (typeof entry !== 'string')
      return { ok: false, index, message: `allowed_ips[${index}] must be a string` };
    const parsed = parseIpEntry(entry);
    if (!parsed.ok)
      return { ok: false, index, message: `allowed_ips[${index}] ${quote(entry)} ${parsed.reason}` };
    seen.add(formatIpEntry(parsed.value));
  }
  return { ok: true, value: [...seen] };
}

/**
 * `trust_proxy`: comma-separated addresses, CIDR ranges and the names `loopback`, `private`,
 * `linklocal` (case-insensitive), spaces around commas allowed. Empty means no proxy is trusted.
 * There is deliberately no "trust everything" value: it would let any client forge its address.
 */
export function parseTrustProxy(
  value: string,
): { ok: true; value: string[] } | { ok: false; message: string } {
  const seen = new Set<string>();
  if (value.trim() === '') return { ok: true, value: [] };
  for (const raw of value.split(',')) {
    const item = raw.trim();
    if (item === '') return { ok: false, message: 'trust_proxy has an empty entry (check the commas)' };
    const name = item.toLowerCase();
    const named = Object.hasOwn(NAMED_RANGES, name) ? NAMED_RANGES[name] : undefined;
    if (named !== undefined) {
      for (const range of named) seen.add(range);
      continue;
    }
    const parsed = parseIpEntry(item);
    if (!parsed.ok) {
      return {
        ok: false,
        message: `trust_proxy entry ${quote(item)} ${parsed.reason}; use IP addresses, CIDR ranges, or the names loopback, private, linklocal`,
      };
    }
    seen.add(formatIpEntry(parsed.value));
  }
  return { ok: true, value: [...seen] };
}

/** One address or range; `reason` completes a sentence that starts with the entry. */
function parseIpEntry(text: string): Parsed<IpEntry> {
  if (text === '') return fail('must not be empty');
  if (hasSpaceOrControl(text)) return fail('must not contain spaces or control characters');
  if (text.length > 64) return fail('is not a valid IP address or CIDR range');
  const slash = text.indexOf('/');
  const addr = slash === -1 ? text : text.slice(0, slash);
  let prefix: number | undefined;
  if (slash !== -1) {
    const prefixText = text.slice(slash + 1);
    if (!PREFIX.test(prefixText)) return fail('has an invalid prefix length after "/"');
    prefix = Number(prefixText);
  }
  const v4 = parseIPv4(addr);
  if (v4 >= 0) {
    if (prefix !== undefined && prefix > 32) return fail('has a prefix length out of range (0-32 for IPv4)');
    return v4Entry(v4, prefix ?? 32);
  }
  if (addr.startsWith('[')) return fail('must be written without brackets');
  if (!addr.includes(':')) return fail('is not a valid IP address or CIDR range');
  if (addr.includes('.') && addr.indexOf(':') === addr.lastIndexOf(':')) return fail('must not have a port');
  if (addr.includes('%')) return fail('must not contain an IPv6 zone id');
  const parts = parseIPv6(addr);
  if (parts === undefined) return fail('is not a valid IPv6 address');
  if (prefix !== undefined && prefix > 128) return fail('has a prefix length out of range (0-128 for IPv6)');
  const mapped = mappedIPv4(parts);
  if (mapped >= 0 && (prefix === undefined || prefix >= 96)) return v4Entry(mapped, (prefix ?? 128) - 96);
  const full = prefix ?? 128;
  const net = parts.map((part, i) => part & groupMask(full, i));
  if (net.some((part, i) => part !== parts[i])) {
    return fail(`has host bits set; did you mean ${quote(`${formatIPv6(net)}/${full}`)}?`);
  }
  return { ok: true, value: { v4: false, parts: net, prefix: full } };
}

function v4Entry(ip: number, prefix: number): Parsed<IpEntry> {
  const net = (ip & v4Mask(prefix)) >>> 0;
  if (net !== ip) return fail(`has host bits set; did you mean ${quote(`${formatIPv4(net)}/${prefix}`)}?`);
  return { ok: true, value: { v4: true, net, prefix } };
}

function formatIpEntry(entry: IpEntry): string {
  const addr = entry.v4 ? formatIPv4(entry.net) : formatIPv6(entry.parts);
  return entry.prefix === (entry.v4 ? 32 : 128) ? addr : `${addr}/${entry.prefix}`;
}

function v4Mask(prefix: number): number {
  // `<< 32` is `<< 0` in JavaScript, so /0 needs its own case.
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** Mask of the 16-bit group `i` of an IPv6 prefix. */
function groupMask(prefix: number, i: number): number {
  const bits = Math.min(16, Math.max(0, prefix - i * 16));
  return bits === 0 ? 0 : (0xffff << (16 - bits)) & 0xffff;
}

/**
 * IPv4 ranges are grouped by prefix length (one masked lookup per distinct length, at most 33);
 * IPv6 ranges are few in practice and scanned. Invalid entries are skipped: fail closed.
 */
export function compileIpMatcher(entries: readonly string[]): IpMatcher {
  const v4Groups = new Map<number, Set<number>>();
  const v6Ranges: { parts: readonly number[]; prefix: number }[] = [];
  for (const text of entries) {
    const parsed = parseIpEntry(text);
    if (!parsed.ok) continue;
    const entry = parsed.value;
    if (entry.v4) {
      const mask = v4Mask(entry.prefix);
      let nets = v4Groups.get(mask);
      if (nets === undefined) v4Groups.set(mask, (nets = new Set()));
      nets.add(entry.net);
    } else {
      v6Ranges.push({ parts: entry.parts, prefix: entry.prefix });
    }
  }
  const groups = [...v4Groups];
  const matchV4 = (ip: number): boolean => {
    for (const [mask, nets] of groups) if (nets.has((ip & mask) >>> 0)) return true;
    return false;
  };
  return {
    matches(ip) {
      const v4 = parseIPv4(ip);
      if (v4 >= 0) return matchV4(v4);
      const mappedText = mappedIPv4Text(ip);
      if (mappedText >= 0) return matchV4(mappedText);
      const parts = parseSocketIPv6(ip);
      if (parts === undefined) return false;
      const mapped = mappedIPv4(parts);
      if (mapped >= 0) return matchV4(mapped);
      for (const range of v6Ranges) if (inV6Range(parts, range.parts, range.prefix)) return true;
      return false;
    },
  };
}

function inV6Range(parts: readonly number[], net: readonly number[], prefix: number): boolean {
  for (let i = 0; i * 16 < prefix; i++) {
    if (((parts[i] ?? 0) & groupMask(prefix, i)) !== net[i]) return false;
  }
  return true;
}

/** Socket addresses of link-local peers carry a zone (`fe80::1%eth0`); the zone plays no part in matching. */
function parseSocketIPv6(ip: string): number[] | undefined {
  const zone = ip.indexOf('%');
  return parseIPv6(zone === -1 ? ip : ip.slice(0, zone));
}

/**
 * The client's address (DESIGN §4). Only when the socket peer is a trusted proxy is
 * X-Forwarded-For read, from the right: each trusted hop appended the address it saw, so the first
 * untrusted address from the right is the client, and everything left of it is client-supplied and
 * may be forged. If every listed hop is trusted, the left-most is the best we know. An entry that is
 * not an address breaks the chain: the walk stops at the last address read (never the garbage).
 */
export function clientIp(
  socketAddress: string,
  xForwardedFor: string | undefined,
  trusted: IpMatcher | null,
): string {
  const socket = normaliseSocketAddress(socketAddress);
  if (trusted === null || xForwardedFor === undefined || xForwardedFor === '' || !trusted.matches(socket)) {
    return socket;
  }
  let last = socket;
  let end = xForwardedFor.length;
  while (end >= 0) {
    const comma = end === 0 ? -1 : xForwardedFor.lastIndexOf(',', end - 1);
    const hop = forwardedAddress(xForwardedFor.slice(comma + 1, end).trim());
    if (hop === undefined) return last;
    if (!trusted.matches(hop)) return hop;
    last = hop;
    if (comma === -1) break;
    end = comma;
  }
  return last;
}

/** Whether the connection's own peer (not a forwarded address) is one of `trusted`. */
export function isTrustedPeer(socketAddress: string, trusted: IpMatcher): boolean {
  return trusted.matches(normaliseSocketAddress(socketAddress));
}

/** Node reports IPv4 clients of a dual-stack socket as `::ffff:a.b.c.d`; log and match them as IPv4. */
function normaliseSocketAddress(address: string): string {
  return mappedIPv4Text(address) >= 0 ? address.slice(7) : address;
}

/** An X-Forwarded-For element in canonical form (ports, as some proxies add, are dropped), or undefined. */
function forwardedAddress(text: string): string | undefined {
  if (parseIPv4(text) >= 0) return text;
  let addr = text;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close === -1 || (close + 1 !== text.length && text.charCodeAt(close + 1) !== 58)) return undefined;
    addr = text.slice(1, close);
  } else {
    const colon = text.indexOf(':');
    if (colon !== -1 && text.indexOf(':', colon + 1) === -1) addr = text.slice(0, colon); // a.b.c.d:port
    if (addr !== text) return parseIPv4(addr) >= 0 ? addr : undefined;
  }
  const parts = parseSocketIPv6(addr);
  if (parts === undefined) return undefined;
  const mapped = mappedIPv4(parts);
  return mapped >= 0 ? formatIPv4(mapped) : formatIPv6(parts);
}

function fail(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}
