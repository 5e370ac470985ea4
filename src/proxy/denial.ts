import type { UnauthorizedReason } from '../anomalies/record.js';
import { MAX_REFUSED_RECORD_BYTES } from '../requestlog/record.js';
import { NO_ORIGIN_MESSAGE, providerMismatchMessage, type DeniedCode } from './errors.js';
import type { Exchange } from './exchange.js';
import type { TokenEntry } from './token-cache.js';
import type { Upstream } from './upstream.js';

/**
 * A refused 401/403, unless the IP is in backoff: then 429 `ip_backoff` (DESIGN §4 and §10). Either
 * way the attempt counts toward the IP's backoff, and the refusals DESIGN §6 names reach the anomaly
 * log and the breach alerts.
 */
export function deny(ex: Exchange, code: DeniedCode): void {
  const limits = ex.deps.limits;
  if (limits === undefined) return denied(ex, code, 0);
  let wait: number | Promise<number>;
  try {
    wait = limits.unauthorized(ex.ip, ex.wallStart);
  } catch (err) {
    ex.logError(err, 'ip backoff failed');
    wait = 0;
  }
  if (wait instanceof Promise) {
    wait.then(
      (w) => denied(ex, code, w),
      (err: unknown) => {
        ex.logError(err, 'ip backoff failed');
        denied(ex, code, 0);
      },
    );
  } else {
    denied(ex, code, wait);
  }
}

function denied(ex: Exchange, code: DeniedCode, retryAfter: number): void {
  if (ex.clientGone) return;
  if (retryAfter > 0) {
    ex.refuse('ip_backoff', ['Retry-After', String(retryAfter)]);
    // Logged in the anomaly log (and coalesced into the breach alerts' counts) when the refusal it
    // stands for would be: a revoked or expired token's use is not an anomaly entry, backoff or not.
    if (ex.token !== null && LOGGED.has(code)) unauthorized(ex, 'ip_backoff');
    return;
  }
  if (code === 'origin_not_allowed') {
    const headers = ex.req.headers;
    const none = headers.origin === undefined && headers.referer === undefined;
    ex.refuse(code, null, none ? NO_ORIGIN_MESSAGE : undefined);
    unauthorized(ex, code);
  } else if (code === 'provider_mismatch') {
    const entry = ex.token as TokenEntry;
    const pathProvider = (ex.upstream as Upstream).id;
    ex.refuse(code, null, providerMismatchMessage(entry.token.provider, pathProvider));
    // A mismatch from an allowed origin is most likely the owner's own bug: logged and counted,
    // but only an alert when the origin is not allowed either (DESIGN §6).
    unauthorized(ex, code, !entry.origins.matches(ex.origin));
  } else {
    ex.refuse(code);
    if (code === 'ip_not_allowed') unauthorized(ex, code);
  }
}

/** The refusals the anomaly log records (DESIGN §6): use from where the token does not allow. */
const LOGGED: ReadonlySet<DeniedCode> = new Set<DeniedCode>([
  'origin_not_allowed',
  'ip_not_allowed',
  'provider_mismatch',
]);

function unauthorized(ex: Exchange, reason: UnauthorizedReason, alert?: boolean): void {
  try {
    ex.deps.onUnauthorized({
      // Cut like the refusal's own record: a flood of refusals must not carry kilobytes each.
      ...ex.observed(MAX_REFUSED_RECORD_BYTES),
      timestamp: new Date(ex.wallStart).toISOString(),
      reason,
      ...(alert === undefined ? {} : { alert }),
    });
  } catch (err) {
    ex.logError(err, 'unauthorized-attempt handler failed');
  }
}
