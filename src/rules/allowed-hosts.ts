import { isPublicSuffix } from './public-suffix.js';
import { domainToASCII, domainToUnicode } from 'node:url';
import { formatIPv6, parseIPv4, parseIPv6 } from './ip-literal.js';
import { hasSpaceOrControl, quote } from './text.js';

/**
 * `allowed_hosts` of a token (they are stored as its `authorized_origins`, DESIGN §4). Three kinds of
 * entry, each with one canonical spelling that `compileOriginMatcher` reads back:
 *
 * - host      `app.example.com`, `localhost`, `127.0.0.1`, `[::1]`: that host, any http(s) scheme and port
 * - wildcard  `*.example.com`: strict subdomains only, never the apex
 * - origin    `https://app.example.com:8443`: exact scheme, host and port (default ports omitted)
 *
 * Host names are lower-case ASCII (IDN labels as punycode), without a trailing dot; IPv6 literals are
 * bracketed RFC 5952 text, which is how browsers serialise them in an `Origin` header.
 */

export const MAX_ALLOWED_HOSTS = 100;
const MAX_ENTRY_LENGTH = 300;
const MAX_NAME_LENGTH = 253;
const MAX_LABEL_LENGTH = 63;

export type HostEntry =
  | { readonly kind: 'host'; readonly host: string }
  | { readonly kind: 'wildcard'; readonly suffix: string }
  | {
      readonly kind: 'origin';
      readonly scheme: 'http' | 'https';
      readonly host: string;
      /** 0 for the scheme's default port. */
      readonly port: number;
    };

export type ParseListResult =
  { ok: true; value: string[] } | { ok: false; index: number | null; message: string };

type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

const SCHEME = /^[a-z][a-z0-9+.-]*$/;
const ASCII_HOST_CHARS = /^[a-z0-9._-]*$/i;
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/i;
const PORT = /^[0-9]{1,5}$/;

export function defaultPort(scheme: 'http' | 'https'): number {
  return scheme === 'https' ? 443 : 80;
}

export function formatHostEntry(entry: HostEntry): string {
  switch (entry.kind) {
    case 'host':
      return entry.host;
    case 'wildcard':
      return `*.${entry.suffix}`;
    case 'origin':
      return entry.port === 0
        ? `${entry.scheme}://${entry.host}`
        : `${entry.scheme}://${entry.host}:${entry.port}`;
  }
}

/**
 * Validate the whole `allowed_hosts` list. Duplicates after normalisation are dropped silently, first
 * occurrence kept: `Example.com` and `example.com` mean the same thing, so refusing would only annoy.
 * Entries that overlap without being equal (`example.com` and `https://example.com`) are all kept.
 */
export function parseAllowedHosts(entries: unknown): ParseListResult {
  if (!Array.isArray(entries)) {
    return {
      ok: false,
      index: null,
      message: 'allowed_hosts must be a non-empty array of host names or origins',
    };
  }
  if (entries.length === 0) {
    return { ok: false, index: null, message: 'allowed_hosts must contain at least one host name or origin' };
  }
  if (entries.length > MAX_ALLOWED_HOSTS) {
    return {
      ok: false,
      index: null,
      message: `allowed_hosts has ${entries.length} entries; at most ${MAX_ALLOWED_HOSTS} are allowed`,
    };
  }
  const seen = new Set<string>();
  for (let index = 0; index < entries.length; index++) {
    const entry: unknown = entries[index];
    if (typeof entry !== 'string') {
      return { ok: false, index, message: `allowed_hosts[${index}] must be a string` };
    }
    const parsed = parseHostEntry(entry);
    if (!parsed.ok) {
      return { ok: false, index, message: `allowed_hosts[${index}] ${quote(entry)} ${parsed.reason}` };
    }
    // Checked here, for what is stored from now on, not by the matcher: a token stored before keeps
    // its origins (taking them away would break it without a word).
    if (parsed.value.kind === 'wildcard' && isPublicSuffix(parsed.value.suffix)) {
      const suffix = parsed.value.suffix;
      return {
        ok: false,
        index,
        message:
          `allowed_hosts[${index}] ${quote(entry)} is too broad: ${quote(suffix)} is a public suffix, under which ` +
          `anyone can have a site, so every one of them could use the token; list your own host names ` +
          `instead, such as ${quote(`myapp.${suffix}`)} or ${quote(`*.myapp.${suffix}`)}`,
      };
    }
    seen.add(formatHostEntry(parsed.value));
  }
  return { ok: true, value: [...seen] };
}

/** One entry; `reason` completes a sentence that starts with the entry's name and value. */
export function parseHostEntry(text: string): Parsed<HostEntry> {
  if (text === '') return fail('must not be empty');
  if (hasSpaceOrControl(text)) return fail('must not contain spaces or control characters');
  if (text.length > MAX_ENTRY_LENGTH) return fail(`is longer than ${MAX_ENTRY_LENGTH} characters`);
  const sep = text.indexOf('://');
  return sep === -1
    ? parseBareEntry(text)
    : parseOriginEntry(text.slice(0, sep).toLowerCase(), text.slice(sep + 3));
}

function parseOriginEntry(scheme: string, rest: string): Parsed<HostEntry> {
  if (!SCHEME.test(scheme)) return fail('has an invalid scheme');
  if (scheme !== 'http' && scheme !== 'https')
    return fail(`must use the http or https scheme, not ${quote(scheme)}`);
  if (rest.includes('@')) return fail('must not contain user info (user@)');
  let end = rest.search(/[/?#]/);
  if (end !== -1) {
    const tail = rest.slice(end);
    if (tail.startsWith('/?') || tail.startsWith('?')) return fail('must not contain a query');
    if (tail.startsWith('/#') || tail.startsWith('#')) return fail('must not contain a fragment');
    if (tail !== '/') return fail('must not contain a path');
  } else {
    end = rest.length;
  }
  const authority = rest.slice(0, end);
  if (authority.includes('*')) {
    return fail(
      'must not combine a wildcard with a scheme or port; use a bare wildcard like "*.example.com"',
    );
  }
  const split = splitHostPort(authority);
  if (!split.ok) return split;
  const host = canonicalHost(split.value.host);
  if (!host.ok) return host;
  let port = 0;
  if (split.value.port !== undefined) {
    const parsedPort = parsePort(split.value.port);
    if (!parsedPort.ok) return parsedPort;
    port = parsedPort.value === defaultPort(scheme) ? 0 : parsedPort.value;
  }
  return { ok: true, value: { kind: 'origin', scheme, host: host.value, port } };
}

function parseBareEntry(text: string): Parsed<HostEntry> {
  if (text.includes('@')) return fail('must not contain user info (user@)');
  if (text.includes('/')) {
    return fail(
      'must not contain a path; give a host name like "example.com" or an origin like "https://example.com"',
    );
  }
  if (text.includes('?')) return fail('must not contain a query');
  if (text.includes('#')) return fail('must not contain a fragment');
  if (text.startsWith('*')) return parseWildcard(text);
  if (text.includes('*')) return fail('may use "*" only as the whole first label, as in "*.example.com"');
  const split = splitHostPort(text);
  if (!split.ok) return split;
  if (split.value.port !== undefined) {
    if (!PORT.test(split.value.port)) return fail('is not a valid host name');
    return fail(
      `has a port but no scheme; use a full origin such as ${quote(`https://${split.value.host}:${split.value.port}`)}`,
    );
  }
  const host = canonicalHost(split.value.host);
  return host.ok ? { ok: true, value: { kind: 'host', host: host.value } } : host;
}

function parseWildcard(text: string): Parsed<HostEntry> {
  if (!text.startsWith('*.') || text.indexOf('*', 1) !== -1) {
    return fail('may use "*" only as the whole first label, as in "*.example.com"');
  }
  const rest = text.slice(2);
  if (rest.startsWith('['))
    return fail('is not valid: a wildcard needs a domain name after "*.", not an IP address');
  if (rest.includes(':')) return fail('must not have a port; a wildcard matches any port');
  const host = canonicalHost(rest);
  if (!host.ok) return host;
  if (host.value.startsWith('[') || parseIPv4(host.value) >= 0) {
    return fail('is not valid: a wildcard needs a domain name after "*.", not an IP address');
  }
  if (!host.value.includes('.')) {
    return fail('is too broad: a wildcard needs at least two labels after "*.", as in "*.example.com"');
  }
  return { ok: true, value: { kind: 'wildcard', suffix: host.value } };
}

function splitHostPort(authority: string): Parsed<{ host: string; port: string | undefined }> {
  if (authority.startsWith('[')) {
    const close = authority.indexOf(']');
    if (close === -1) return fail('has an IPv6 address without its closing "]"');
    const after = authority.slice(close + 1);
    if (after === '') return { ok: true, value: { host: authority, port: undefined } };
    if (!after.startsWith(':')) return fail('has unexpected characters after the IPv6 address');
    return { ok: true, value: { host: authority.slice(0, close + 1), port: after.slice(1) } };
  }
  const colon = authority.indexOf(':');
  if (colon === -1) return { ok: true, value: { host: authority, port: undefined } };
  if (authority.indexOf(':', colon + 1) !== -1) {
    return fail('looks like an IPv6 address: write it in brackets, as in "[::1]" or "http://[::1]:3000"');
  }
  return { ok: true, value: { host: authority.slice(0, colon), port: authority.slice(colon + 1) } };
}

function parsePort(text: string): Parsed<number> {
  if (text === '') return fail('has an empty port');
  if (!PORT.test(text)) return fail('has a non-numeric port');
  const port = Number(text);
  if (port < 1 || port > 65535) return fail('has a port out of range (1-65535)');
  return { ok: true, value: port };
}

/**
 * Host → canonical form. `domainToASCII` is WHATWG's host parser and is lenient (`a/b` → `a`, `%41` is
 * decoded, `127.1` becomes `127.0.0.1`), so ASCII punctuation and numeric forms are screened first and
 * only the IDNA mapping of non-ASCII text is left to it.
 */
export function canonicalHost(text: string): Parsed<string> {
  if (text.startsWith('[')) {
    if (!text.endsWith(']')) return fail('has an IPv6 address without its closing "]"');
    const inner = text.slice(1, -1);
    if (inner.includes('%')) return fail('must not contain an IPv6 zone id');
    const parts = parseIPv6(inner);
    return parts ? { ok: true, value: `[${formatIPv6(parts)}]` } : fail('is not a valid IPv6 address');
  }
  const name = text.endsWith('.') ? text.slice(0, -1) : text;
  if (name === '') return fail('must contain a host name');
  for (const ch of name) {
    if (ch.charCodeAt(0) < 0x80 && !ASCII_HOST_CHARS.test(ch))
      return fail(`contains an invalid character ${quote(ch)}`);
  }
  const lastLabel = name.slice(name.lastIndexOf('.') + 1);
  if (NUMERIC_LABEL.test(lastLabel)) {
    return parseIPv4(name) >= 0
      ? { ok: true, value: name }
      : fail('is not a valid IPv4 address (use a.b.c.d)');
  }
  const ascii = domainToASCII(name);
  if (ascii === '') return fail('is not a valid host name');
  return checkAsciiName(ascii);
}

function checkAsciiName(name: string): Parsed<string> {
  if (name.length > MAX_NAME_LENGTH) return fail(`is longer than ${MAX_NAME_LENGTH} characters`);
  const labels = name.split('.');
  for (const label of labels) {
    if (label === '') return fail('has an empty label (two dots in a row, or a leading dot)');
    if (label.length > MAX_LABEL_LENGTH)
      return fail(`has a label longer than ${MAX_LABEL_LENGTH} characters`);
    if (!ASCII_HOST_CHARS.test(label)) return fail('is not a valid host name');
    if (label.startsWith('-') || label.endsWith('-')) return fail('has a label that starts or ends with "-"');
    // Node 24's URL parser passes an undecodable punycode label through unchanged where Node 22 rejects
    // it; decoding it ourselves keeps one answer on every runtime.
    if (label.startsWith('xn--') && !isDecodablePunycode(label)) return fail('is not a valid host name');
  }
  // IDNA mapping can turn full-width digits into a numeric last label: then it must be a plain IPv4.
  if (NUMERIC_LABEL.test(labels[labels.length - 1] ?? '') && parseIPv4(name) < 0) {
    return fail('is not a valid IPv4 address (use a.b.c.d)');
  }
  return { ok: true, value: name };
}

function isDecodablePunycode(label: string): boolean {
  const unicode = domainToUnicode(label);
  return unicode !== '' && unicode !== label;
}

function fail(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}
