import type { TokenProxyError } from './errors.js';
import type { TransportResponse } from './transport.js';

const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 8_000;
/** A Retry-After longer than this is not waited for: the error goes to the caller instead. */
const MAX_RETRY_AFTER_MS = 60_000;

/** How long to wait before retrying this error response; undefined when it must not be retried. */
export function retryDelay(
  response: TransportResponse,
  error: TokenProxyError,
  attempt: number,
): number | undefined {
  const retryable =
    response.status === 429 || response.status >= 500 || error.code === 'idempotency_in_progress';
  if (!retryable) return undefined;
  const header = response.headers['retry-after'];
  if (header === undefined) return backoff(attempt);
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  if (!Number.isFinite(ms)) return backoff(attempt);
  return ms > MAX_RETRY_AFTER_MS ? undefined : Math.max(0, ms);
}

/** Exponential with jitter, so many clients failing together do not retry in lockstep. */
export function backoff(attempt: number): number {
  const base = Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS * 2 ** attempt);
  return base * (0.5 + Math.random() * 0.5);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
