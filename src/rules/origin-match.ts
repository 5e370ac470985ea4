import { domainToASCII } from 'node:url';
import { parseHostEntry } from './allowed-hosts.js';
import { formatIPv6, parseIPv6 } from './ip-literal.js';

/**
 * Origin checks of the proxy (DESIGN §4 steps 3-5). A token's `authorized_origins` are compiled once
 * into sets; a request then costs one hand-parse of its `Origin` and a few set lookups, whatever the
 * number of entries. Matching is by whole host or whole label suffix, never by substring.
 */

export interface OriginMatcher {
  matches(origin: string | undefined): boolean;
}

/** Reused by the synchronous parser so a request allocates no result object. */
interface ParsedOrigin {
  https: boolean;
  host: string;
  /** 0 for the scheme's default port. */
  port: number;
}
const scratch: ParsedOrigin = { https: false, host: '', port: 0 };

const ASCII_NAME = /^(?:[a-z0-9_-]+\.)*[a-z0-9_-]+$/;

/**
 * Entries that do not parse are skipped, so a bad stored value can only ever fail closed. Entries go
 * through the same parser as `allowed_hosts`, so a non-canonical spelling still compiles correctly.
 */
export function compileOriginMatcher(authorizedOrigins: readonly string[]): OriginMatcher {
  const hosts = new Set<string>();
  const suffixes = new Set<string>();
  // Full origins by host, each with its set of schemeAndPort() numbers: no string is built per request.
  const origins = new Map<string, Set<number>>();
  for (const text of authorizedOrigins) {
    const parsed = parseHostEntry(text);
    if (!parsed.ok) continue;
    const entry = parsed.value;
    if (entry.kind === 'host') hosts.add(entry.host);
    else if (entry.kind === 'wildcard') suffixes.add(entry.suffix);
    else {
      let ports = origins.get(entry.host);
      if (ports === undefined) origins.set(entry.host, (ports = new Set()));
      ports.add(schemeAndPort(entry.scheme === 'https', entry.port));
    }
  }
  return {
    matches(origin) {
      if (origin === undefined || !parseOrigin(origin, scratch)) return false;
      const { host } = scratch;
      if (hosts.has(host)) return true;
      if (origins.get(host)?.has(schemeAndPort(scratch.https, scratch.port))) return true;
      if (suffixes.size !== 0) {
        // Each strict label suffix of the host, one lookup each: `a.b.example.com` tries
        // `b.example.com`, `example.com`, `com`. The host itself is never tried (no apex).
        for (let dot = host.indexOf('.'); dot !== -1; dot = host.indexOf('.', dot + 1)) {
          if (suffixes.has(host.slice(dot + 1))) return true;
        }
      }
      return false;
    },
  };
}

function schemeAndPort(https: boolean, port: number): number {
  return https ? 65536 + port : port;
}

/**
 * The request's origin: the `Origin` header when present, else the origin of `Referer`. A present
 * but opaque or malformed `Origin` (`null` from sandboxed frames, `file:` pages, redirects) gives
 * undefined WITHOUT falling back to `Referer`: the browser has said the origin is not to be trusted.
 * A valid `Origin` is returned verbatim, since CORS must echo it byte for byte.
 */
export function requestOrigin(
  originHeader: string | undefined,
  refererHeader: string | undefined,
): string | undefined {
  if (originHeader !== undefined && originHeader !== '') {
    return parseOrigin(originHeader, scratch) ? originHeader : undefined;
  }
  if (refererHeader === undefined || refererHeader === '') return undefined;
  let url: URL;
  try {
    url = new URL(refererHeader);
  } catch {
    return undefined;
  }
  // Browsers strip credentials from Referer; a Referer carrying them is forged or broken.
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '') {
    return undefined;
  }
  return url.origin;
}

/**
 * Hand parse of `scheme://host[:port]`, the whole grammar of a non-opaque `Origin` header. Anything
 * else (a path, `user@`, a query, spaces, empty labels, other schemes) fails, and failing means "no
 * match". Host characters are limited to what a valid host can contain, which is what makes the
 * label-suffix walk in `matches` sound: a `/` or `@` can never sit in front of a matched suffix.
 */
function parseOrigin(value: string, out: ParsedOrigin): boolean {
  let i: number;
  if (startsWithCI(value, 'https://')) {
    out.https = true;
    i = 8;
  } else if (startsWithCI(value, 'http://')) {
    out.https = false;
    i = 7;
  } else {
    return false;
  }
  const len = value.length;
  const hostStart = i;
  let hostEnd: number;
  if (value.charCodeAt(i) === 91 /* [ */) {
    const close = value.indexOf(']', i);
    if (close === -1) return false;
    const parts = parseIPv6(value.slice(i + 1, close));
    if (parts === undefined) return false;
    out.host = `[${formatIPv6(parts)}]`;
    i = close + 1;
  } else {
    let upper = false;
    let nonAscii = false;
    let prev = 46; // a leading dot counts as an empty label
    for (; i < len; i++) {
      const c = value.charCodeAt(i);
      if (c === 58 /* : */) break;
      if (c === 46 /* . */) {
        if (prev === 46) return false;
      } else if (c >= 65 && c <= 90) {
        upper = true;
      } else if (c >= 128) {
        nonAscii = true;
      } else if (!((c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 45 || c === 95)) {
        return false;
      }
      prev = c;
    }
    hostEnd = prev === 46 ? i - 1 : i; // one trailing dot names the same host
    if (hostEnd <= hostStart) return false;
    let host = value.slice(hostStart, hostEnd);
    if (nonAscii) {
      // Browsers send punycode; only hand-made requests get here.
      host = domainToASCII(host);
      if (!ASCII_NAME.test(host)) return false;
    } else if (upper) {
      host = host.toLowerCase();
    }
    out.host = host;
  }
  out.port = 0;
  if (i === len) return true;
  if (value.charCodeAt(i) !== 58 || i + 1 === len || len - i - 1 > 5) return false;
  let port = 0;
  for (let j = i + 1; j < len; j++) {
    const c = value.charCodeAt(j);
    if (c < 48 || c > 57) return false;
    port = port * 10 + (c - 48);
  }
  if (port === 0 || port > 65535) return false;
  out.port = port === (out.https ? 443 : 80) ? 0 : port;
  return true;
}

function startsWithCI(value: string, lowerPrefix: string): boolean {
  if (value.length < lowerPrefix.length) return false;
  for (let i = 0; i < lowerPrefix.length; i++) {
    const want = lowerPrefix.charCodeAt(i);
    const c = value.charCodeAt(i);
    // Fold case for letters only: `| 0x20` would also turn control characters into `:` or `/`.
    if (c !== want && !(want >= 97 && want <= 122 && c === want - 32)) return false;
  }
  return true;
}
