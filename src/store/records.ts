import type { Budget } from '../usage/budget.js';

/**
 * What the store keeps, in the shape the rest of the server uses (camelCase, parsed JSON).
 * Timestamps are ISO 8601 UTC strings with milliseconds (`2026-01-02T03:04:05.678Z`): they sort as
 * text in both dialects, so ordering and cursors need no dialect-specific date handling.
 */

/** A plan's name: a built-in one (`free`, `unlimited`) or one from the config file's `plans`. */
export type PlanName = string;

export interface AccountRecord {
  readonly id: string;
  readonly name: string;
  readonly plan: PlanName;
  readonly alertEmail: string | null;
  readonly createdAt: string;
  /** Spend cap over all the account's tokens (issue 19); null or absent for none. */
  readonly budget?: Budget | null | undefined;
}

/** A provider's real key, stored only as vault ciphertext. */
export interface ProviderKeyRecord {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly provider: string;
  /** Last 4 characters of the real key, or '' for short keys. */
  readonly hint: string;
  /** Vault envelope; null once the key is deleted (the ciphertext is destroyed). */
  readonly ciphertext: Buffer | null;
  readonly createdAt: string;
  readonly rotatedAt: string | null;
  readonly deletedAt: string | null;
  /** Active tokens that use this key. */
  readonly tokenCount: number;
}

export type TokenStatus = 'active' | 'revoked' | 'expired';
export const TOKEN_STATUSES: readonly TokenStatus[] = ['active', 'revoked', 'expired'];

export interface RateLimit {
  readonly requests: number;
  readonly window: string;
}

export interface TokenRecord {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  readonly provider: string;
  readonly keyId: string;
  /** SHA-256 hex digest of the sanitized token; the token itself is never stored. */
  readonly digest: string;
  readonly hint: string;
  readonly authorizedOrigins: readonly string[];
  readonly authorizedIps: readonly string[];
  readonly rateLimit: RateLimit | null;
  /** Stored status. `expired` is also derived on read from `expiresAt` (see tokenStatusAt). */
  readonly status: TokenStatus;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  readonly requestCount: number;
  /** Spend cap of the token (issue 19); null or absent for none. */
  readonly budget?: Budget | null | undefined;
}

/** A position in a newest-first list: the last item of the previous page. */
export interface PageAfter {
  readonly createdAt: string;
  readonly id: string;
}

export interface PageQuery {
  readonly limit: number;
  readonly after?: PageAfter | undefined;
}

export interface Page<T> {
  readonly items: readonly T[];
  readonly hasMore: boolean;
}

/** The status a token has at `now`: a stored `active` token past its expiry reads as `expired`. */
export function tokenStatusAt(token: TokenRecord, now: string): TokenStatus {
  if (token.status === 'active' && token.expiresAt !== null && token.expiresAt <= now) {
    return 'expired';
  }
  return token.status;
}

/** A stored request-log record (specification §2.5); `id` is the request id. */
export interface RequestLogEntry {
  /** The request id (`req_…`), sent to the caller as `x-tokenproxy-request-id`. */
  readonly id: string;
  /** ISO 8601 UTC with milliseconds. */
  readonly timestamp: string;
  /** Null when no token matched. */
  readonly accountId: string | null;
  readonly tokenId: string | null;
  /** Provider id of the path (`/openai/...` → `openai`), null when the path names none. */
  readonly provider: string | null;
  readonly origin: string | null;
  readonly ip: string;
  readonly country: string | null;
  readonly pop: string;
  /** Path as received, with the `/<provider>` prefix, without the query string. */
  readonly path: string;
  readonly status: number;
  /** Whether the origin (and IP) check passed. */
  readonly authorized: boolean;
  /** Time the proxy adds, excluding the provider's own time. */
  readonly latencyMs: number;
  /**
   * The proxy's own error code when the proxy answered (src/errors/codes.ts); null when the provider
   * answered, its own errors included, and when the client left before any answer.
   */
  readonly errorCode: string | null;
  /** The model the request named or the answer reported (src/usage); null when unknown. */
  readonly model: string | null;
  /** Tokens the provider reported for the request; null when its answer said nothing. */
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
  /** Cost in micro-USD from the price table; null for an unlisted model or unknown usage. */
  readonly costMicros: number | null;
}

/** An anomaly-log entry of a known token. `id` is the request id for breaches. */
export interface AnomalyEntry {
  readonly id: string;
  readonly accountId: string;
  readonly tokenId: string;
  readonly timestamp: string;
  readonly origin: string | null;
  readonly ip: string;
  readonly country: string | null;
  readonly path: string;
  readonly reason: string;
  /** `breach` for unauthorized requests; later kinds such as `rate_spike` share the table. */
  readonly kind: string;
  /** Kind-specific JSON (a rate spike's numbers); null for breaches. */
  readonly details: unknown;
}

/** Where a timestamped list item sits for keyset pagination (its cursor). */
export function timestampPosition(entry: { readonly timestamp: string; readonly id: string }): PageAfter {
  return { createdAt: entry.timestamp, id: entry.id };
}

/** A webhook endpoint. `secret` is the signing secret as a vault envelope (never shown after creation). */
export interface WebhookRecord {
  readonly id: string;
  readonly accountId: string;
  readonly url: string;
  /** Event types, or `['*']` for all. */
  readonly events: readonly string[];
  readonly secret: Buffer;
  readonly createdAt: string;
  readonly disabledAt: string | null;
  readonly disabledReason: string | null;
  /** First failed attempt since the last successful delivery; null while healthy. */
  readonly failingSince: string | null;
}

/** An event as committed to the outbox. */
export interface EventRecord {
  readonly id: string;
  readonly accountId: string;
  readonly type: string;
  readonly createdAt: string;
  readonly data: Readonly<Record<string, unknown>>;
}

export type DeliveryChannel = 'webhook' | 'email';

/** A delivery attempt claimed from the outbox, with everything needed to send it. */
export interface ClaimedDelivery {
  readonly id: string;
  readonly channel: DeliveryChannel;
  /** Attempts made before this one. */
  readonly attempts: number;
  readonly event: EventRecord;
  /** The endpoint for webhook deliveries; null when it has been deleted since. */
  readonly webhook: WebhookRecord | null;
  /** Recipient of an e-mail delivery. */
  readonly emailTo: string | null;
}
