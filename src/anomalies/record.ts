/** Why a proxy request was refused as unauthorized (these raise breach actions, DESIGN §6 and §10). */
export const UNAUTHORIZED_REASONS = [
  'origin_not_allowed',
  'ip_not_allowed',
  'ip_backoff',
  'provider_mismatch',
] as const;
export type UnauthorizedReason = (typeof UNAUTHORIZED_REASONS)[number];

/** An unauthorized use of a known token: an anomaly-log entry, and the input of breach actions. */
export interface UnauthorizedAttempt {
  readonly requestId: string;
  readonly timestamp: string;
  readonly accountId: string;
  readonly tokenId: string;
  readonly origin: string | null;
  readonly ip: string;
  readonly country: string | null;
  readonly path: string;
  readonly reason: UnauthorizedReason;
  /**
   * Whether this attempt may raise a breach alert by itself; when absent, every reason but
   * `ip_backoff` does. The proxy sets it for `provider_mismatch`: an alert only when the origin is
   * not allowed either. Attempts that raise none are still logged and counted into the next alert.
   */
  readonly alert?: boolean;
}

/**
 * Called by the proxy for every unauthorized request, off the response path: it must return at
 * once and never throw. The server wires it to the anomaly log and (later) to webhooks, e-mail and
 * IP backoff.
 */
export type OnUnauthorized = (attempt: UnauthorizedAttempt) => void;
