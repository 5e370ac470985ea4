import { quote } from '../../rules/text.js';
import { ERROR_CODES } from '../../errors/codes.js';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { LATEST_INSTANT, storedInstant } from '../../rules/instant.js';
import { formatIPv4, formatIPv6, mappedIPv4, parseIPv4, parseIPv6 } from '../../rules/ip-literal.js';

/**
 * The query parameters of `GET /v1/logs` that need more than a schema pattern: each is checked
 * here with a message that says what was wrong and what is accepted. Pure, tested on tables.
 */

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function invalid(param: string, message: string): TokenProxyError {
  return new TokenProxyError('invalid_parameter', `Invalid query parameter "${param}": ${message}`, {
    param,
  });
}

/** The date part names a day the month has: Date.parse rolls "2026-02-30" over to March 2. */
function realDay(value: string): boolean {
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  const day = Number(value.slice(8, 10));
  return month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** An ISO 8601 instant with a zone (`2026-05-01T00:00:00Z`), as the store's text form (UTC, ms). */
export function timestampParam(param: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const ms = ISO_TIMESTAMP.test(value) && realDay(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw invalid(
      param,
      `expected an ISO 8601 time with a zone such as "2026-05-01T00:00:00Z" or "2026-05-01T02:00:00+02:00", got ${quote(value, 40)}.`,
    );
  }
  const stored = storedInstant(ms);
  if (stored === undefined) {
    throw invalid(
      param,
      `expected a time from 1970-01-01T00:00:00Z to ${LATEST_INSTANT}, got ${JSON.stringify(value)}.`,
    );
  }
  return stored;
}

/** `since` (inclusive) and `until` (exclusive); `since` must come before `until`. */
export function timeRange(
  since: string | undefined,
  until: string | undefined,
): { since?: string | undefined; until?: string | undefined } {
  const from = timestampParam('since', since);
  const to = timestampParam('until', until);
  if (from !== undefined && to !== undefined && from >= to) {
    throw invalid('until', `must be later than "since" (${from}); the range is since ≤ time < until.`);
  }
  return { since: from, until: to };
}

/** One of the error codes of docs/errors.md. */
export function errorCodeParam(value: string | undefined): string | undefined {
  if (value === undefined || Object.hasOwn(ERROR_CODES, value)) return value;
  throw invalid(
    'error_code',
    `unknown error code ${quote(value, 60)}; use a code from docs/errors.md such as upstream_timeout, origin_not_allowed or rate_limited.`,
  );
}

/** An IPv4 or IPv6 address, in the form the log stores (IPv4-mapped IPv6 as IPv4, IPv6 compressed). */
export function ipParam(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (parseIPv4(value) >= 0) return value;
  const parts = parseIPv6(value);
  if (parts === undefined) {
    throw invalid(
      'ip',
      `expected one IPv4 or IPv6 address such as 203.0.113.7 or 2001:db8::1 (no range, no port), got ${quote(value, 60)}.`,
    );
  }
  const mapped = mappedIPv4(parts);
  return mapped >= 0 ? formatIPv4(mapped) : formatIPv6(parts);
}
