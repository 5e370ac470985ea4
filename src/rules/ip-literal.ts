/**
 * Strict IP literal parsing shared by origin and IP rules, hand-written for the hot path. Stricter than
 * ipaddr.js on purpose: to it `010.0.0.1` is octal 8.0.0.1 and `127.1` is valid, which an allowlist
 * must not accept. IPv4 is exactly four decimal parts without leading zeros.
 */

/** `a.b.c.d` as an unsigned 32-bit number, or -1. Allocation-free: it runs per request. */
export function parseIPv4(text: string, start = 0, end = text.length): number {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits === 1 && part === 0) return -1; // leading zero
      part = part * 10 + (c - 48);
      if (++digits > 3 || part > 255) return -1;
    } else if (c === 46) {
      if (digits === 0 || ++dots > 3) return -1;
      value = value * 256 + part;
      part = 0;
      digits = 0;
    } else {
      return -1;
    }
  }
  if (digits === 0 || dots !== 3) return -1;
  return value * 256 + part;
}

export function formatIPv4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

/**
 * Eight 16-bit parts, or undefined. Hand-written because ipaddr.js takes microseconds per IPv6 parse,
 * and a dual-stack socket reports every IPv4 client as IPv6. Zone ids (`%eth0`) are refused: callers
 * strip them where they are meaningful. An embedded IPv4 tail must be strict decimal like any IPv4.
 */
export function parseIPv6(text: string): number[] | undefined {
  const len = text.length;
  if (len < 2 || len > 45) return undefined;
  const parts: number[] = [];
  let gap = -1;
  let i = 0;
  if (text.charCodeAt(0) === 58) {
    if (text.charCodeAt(1) !== 58) return undefined;
    gap = 0;
    i = 2;
  }
  while (i < len) {
    if (parts.length === 8) return undefined;
    let value = 0;
    let j = i;
    for (; j < len && j - i <= 4; j++) {
      const digit = hexValue(text.charCodeAt(j));
      if (digit < 0) break;
      value = value * 16 + digit;
    }
    if (j < len && text.charCodeAt(j) === 46) {
      const v4 = parseIPv4(text, i, len);
      if (v4 < 0 || parts.length > 6) return undefined;
      parts.push(v4 >>> 16, v4 & 0xffff);
      break;
    }
    if (j === i || j - i > 4) return undefined;
    parts.push(value);
    if (j === len) break;
    if (text.charCodeAt(j) !== 58) return undefined;
    if (text.charCodeAt(j + 1) === 58) {
      if (gap !== -1) return undefined;
      gap = parts.length;
      i = j + 2;
    } else {
      i = j + 1;
      if (i === len) return undefined;
    }
  }
  if (gap === -1) return parts.length === 8 ? parts : undefined;
  if (parts.length > 7) return undefined;
  parts.splice(gap, 0, ...ZEROS.slice(0, 8 - parts.length));
  return parts;
}

const ZEROS: readonly number[] = [0, 0, 0, 0, 0, 0, 0, 0];

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const lower = c | 0x20;
  return lower >= 97 && lower <= 102 ? lower - 87 : -1;
}

/** RFC 5952 text (lower case, longest zero run of 2+ groups compressed): how browsers serialise IPv6. */
export function formatIPv6(parts: readonly number[]): string {
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (parts[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && parts[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number): string =>
    parts
      .slice(from, to)
      .map((part) => part.toString(16))
      .join(':');
  if (bestStart === -1) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLen, 8)}`;
}

/** For `::ffff:a.b.c.d`, the IPv4 address as a number, else -1. */
export function mappedIPv4(parts: readonly number[]): number {
  for (let i = 0; i < 5; i++) if (parts[i] !== 0) return -1;
  if (parts[5] !== 0xffff) return -1;
  return (parts[6] ?? 0) * 65536 + (parts[7] ?? 0);
}

/** `::ffff:a.b.c.d` as spelled by Node for IPv4 peers of a dual-stack socket, as a number, else -1. */
export function mappedIPv4Text(text: string): number {
  if (text.length < 14 || text.charCodeAt(0) !== 58 || text.charCodeAt(1) !== 58) return -1;
  for (let i = 2; i < 6; i++) if ((text.charCodeAt(i) | 0x20) !== 102) return -1;
  return text.charCodeAt(6) === 58 ? parseIPv4(text, 7) : -1;
}
