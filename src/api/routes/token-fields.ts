import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import { parseAllowedHosts } from '../../rules/allowed-hosts.js';
import { parseWindow } from '../../rules/duration.js';
import { LATEST_INSTANT, storedInstant } from '../../rules/instant.js';
import { parseAllowedIps } from '../../rules/ip-match.js';
import type { RateLimit } from '../../store/records.js';
import { parseBudget, type Budget } from '../../usage/budget.js';

/** Checks of a token's editable fields, shared by create (POST) and edit (PATCH); errors name the field. */

export function allowedHostsField(value: readonly string[]): string[] {
  const hosts = parseAllowedHosts(value);
  if (!hosts.ok) {
    throw new TokenProxyError('invalid_parameter', hosts.message, {
      param: hosts.index === null ? 'allowed_hosts' : `allowed_hosts[${hosts.index}]`,
    });
  }
  return hosts.value;
}

export function allowedIpsField(value: readonly string[]): string[] {
  const parsed = parseAllowedIps(value);
  if (!parsed.ok) {
    throw new TokenProxyError('invalid_parameter', parsed.message, {
      param: parsed.index === null ? 'allowed_ips' : `allowed_ips[${parsed.index}]`,
    });
  }
  return parsed.value;
}

export function rateLimitField(value: { requests: number; window: string }): RateLimit {
  const w = parseWindow(value.window);
  if (!w.ok) {
    throw new TokenProxyError('invalid_parameter', `Invalid field "rate_limit.window": ${w.message}`, {
      param: 'rate_limit.window',
    });
  }
  return { requests: value.requests, window: w.canonical };
}

/** A future instant, normalised to ISO with milliseconds. */
export function expiresAtField(value: string, now: Date): string {
  const t = Date.parse(value);
  // The date-time format admits a leap second (…:60), which JavaScript's dates cannot hold.
  if (Number.isNaN(t)) {
    throw new TokenProxyError(
      'invalid_parameter',
      `Invalid field "expires_at": ${JSON.stringify(value.slice(0, 64))} is not an instant that can be stored ` +
        '(a leap second, :60, is not); send an ISO 8601 date-time such as 2030-01-31T12:00:00.000Z.',
      { param: 'expires_at' },
    );
  }
  if (!(t > now.getTime())) {
    throw new TokenProxyError('invalid_parameter', 'Invalid field "expires_at": it must be in the future.', {
      param: 'expires_at',
    });
  }
  const stored = storedInstant(t);
  if (stored === undefined) {
    throw new TokenProxyError(
      'invalid_parameter',
      `Invalid field "expires_at": it must be no later than ${LATEST_INSTANT}; for a token that never expires, send null.`,
      { param: 'expires_at' },
    );
  }
  return stored;
}

/** A budget (docs/usage.md): exactly one of `amount_usd` and `tokens`, and a period; null removes it. */
export function budgetField(value: unknown, param = 'budget'): Budget | null {
  if (value === null) return null;
  const parsed = parseBudget(value, param);
  if (!parsed.ok) throw new TokenProxyError('invalid_parameter', parsed.message, { param });
  return parsed.budget;
}
