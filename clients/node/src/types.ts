/**
 * Objects of the management API (DESIGN §5) as this library shows them: camelCase, and the object's
 * own id as `id`. Timestamps are ISO 8601 UTC strings with milliseconds, as sent.
 */

export interface RateLimit {
  readonly requests: number;
  /** A count and a unit: `30s`, `1m`, `1h`, `1d`. */
  readonly window: string;
}

export type TokenStatus = 'active' | 'revoked' | 'expired';

/** A spend cap: exactly one of `amountUsd` and `tokens` (input + output), per day, month or in total. */
export interface Budget {
  readonly amountUsd?: number | undefined;
  readonly tokens?: number | undefined;
  readonly period: 'day' | 'month' | 'total';
}

export interface Token {
  /** The token_id (not secret). */
  readonly id: string;
  readonly name: string;
  readonly targetProvider: string;
  /** Id of the key resource holding the real key. */
  readonly realKeyRef: string;
  readonly authorizedOrigins: string[];
  readonly authorizedIps: string[];
  readonly rateLimit: RateLimit | null;
  readonly status: TokenStatus;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  readonly requestCount: number;
  readonly sanitizedKeyHint: string;
  /** Base URL for provider SDKs: `baseURL: proxyBaseUrl + '/v1'` for OpenAI. */
  readonly proxyBaseUrl: string;
  /** The token's budget, or null. */
  readonly budget: Budget | null;
}

export interface CreatedToken extends Token {
  /** The sanitized token `svc_hb_…`, returned only by `tokens.create`. */
  readonly sanitizedKey: string;
}

export interface Key {
  readonly id: string;
  readonly name: string;
  readonly provider: string;
  /** Last 4 characters of the real key ("" for keys under 12 characters). */
  readonly hint: string;
  readonly createdAt: string;
  readonly rotatedAt: string | null;
  readonly deletedAt: string | null;
  readonly tokenCount: number;
}

export interface Account {
  readonly id: string;
  readonly name: string;
  readonly plan: string;
  readonly limits: { readonly activeTokens: number | null; readonly requestsPerMonth: number | null };
  readonly usage: { readonly periodStart: string; readonly requests: number; readonly activeTokens: number };
  readonly alertEmail: string | null;
  readonly createdAt: string;
  /** The budget over all the account's tokens, or null. */
  readonly budget: Budget | null;
  /** The server's `log_retention` and `rollup_retention` (`"30d"`, or `"forever"`). */
  readonly retention: { readonly logs: string; readonly rollups: string };
}

export interface Provider {
  readonly id: string;
  readonly baseUrl: string;
  /** `bearer` or `header:<name>`. */
  readonly auth: string;
  readonly builtin: boolean;
  readonly proxyBaseUrl: string;
}

export interface Webhook {
  readonly id: string;
  readonly url: string;
  /** Event types, or `["*"]` for all. */
  readonly events: string[];
  readonly createdAt: string;
  /** Set when tokenproxy stopped delivering to it (deliveries failed for too long). */
  readonly disabledAt: string | null;
  readonly disabledReason: string | null;
  /** First failed attempt since the last successful delivery; null while healthy. */
  readonly failingSince: string | null;
}

export interface CreatedWebhook extends Webhook {
  /** `whsec_…`, for `verifyWebhook`; returned only by `webhooks.create`. */
  readonly secret: string;
}

export interface Event {
  /** `evt_…`, also the `webhook-id` of its deliveries. */
  readonly id: string;
  readonly type: string;
  readonly createdAt: string;
  /** The event's data, names camelCased like everything else (`tokenId`). */
  readonly data: Record<string, unknown>;
}

export interface Anomaly {
  readonly id: string;
  readonly timestamp: string;
  readonly tokenId: string;
  readonly origin: string | null;
  readonly ip: string;
  readonly country: string | null;
  readonly path: string;
  readonly reason: string;
  readonly kind: string;
  /** What an anomaly of authorized use measured (names camelCased, as everywhere); null for breaches. */
  readonly details: Readonly<Record<string, unknown>> | null;
}

export interface RequestLog {
  /** The proxied request's id (`x-tokenproxy-request-id`). */
  readonly requestId: string;
  readonly timestamp: string;
  readonly tokenId: string | null;
  readonly origin: string | null;
  readonly ip: string;
  readonly country: string | null;
  readonly pop: string;
  readonly path: string;
  readonly status: number;
  readonly authorized: boolean;
  readonly latencyMs: number;
  /** The proxy's own error code when it refused or failed the request; null when it was forwarded. */
  readonly errorCode: string | null;
  /** The model, tokens the provider reported and their cost in micro-USD; null when unknown. */
  readonly model: string | null;
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
  readonly costMicros: number | null;
}

export interface ListParams {
  /** Page size, 1 to 100 (server default 20). */
  readonly limit?: number | undefined;
  /** `nextCursor` of a previous page; iteration handles it for you. */
  readonly cursor?: string | undefined;
}

export interface TokenCreateParams {
  readonly name: string;
  readonly provider: string;
  readonly allowedHosts: readonly string[];
  /** The provider key to protect; or `keyId` of a stored key. */
  readonly realKey?: string | undefined;
  readonly keyId?: string | undefined;
  readonly allowedIps?: readonly string[] | undefined;
  readonly rateLimit?: RateLimit | undefined;
  readonly expiresAt?: string | Date | null | undefined;
  readonly budget?: Budget | null | undefined;
}

export interface TokenListParams extends ListParams {
  readonly status?: TokenStatus | undefined;
}

export interface KeyCreateParams {
  readonly name: string;
  readonly provider: string;
  readonly realKey: string;
}

export interface KeyRotateParams {
  readonly realKey: string;
}

export interface WebhookCreateParams {
  readonly url: string;
  readonly events: readonly string[];
}

export interface EventListParams extends ListParams {
  readonly type?: string | undefined;
}

export interface AnomalyListParams extends ListParams {
  readonly tokenId?: string | undefined;
}

export interface LogListParams extends ListParams {
  readonly tokenId?: string | undefined;
  readonly authorized?: boolean | undefined;
  /** One HTTP status (`'429'`) or a class (`'4xx'`). */
  readonly status?: string | undefined;
  /** ISO 8601 time with a zone: records at or after it. */
  readonly since?: string | undefined;
  /** ISO 8601 time with a zone: records before it. */
  readonly until?: string | undefined;
  /** An error code of docs/errors.md, e.g. `upstream_timeout`. */
  readonly errorCode?: string | undefined;
  /** One client IPv4 or IPv6 address. */
  readonly ip?: string | undefined;
}

/** `tokens.update`: only the fields given change; null removes the rate limit or the expiry. */
export interface TokenUpdateParams {
  readonly name?: string | undefined;
  readonly allowedHosts?: readonly string[] | undefined;
  readonly allowedIps?: readonly string[] | undefined;
  readonly rateLimit?: RateLimit | null | undefined;
  readonly expiresAt?: string | Date | null | undefined;
  /** null removes the budget. */
  readonly budget?: Budget | null | undefined;
}

export interface UsageParams {
  /** How far back: `24h` (default) or `7d`. */
  readonly window?: '24h' | '7d' | undefined;
  /** Bucket size: `1h` (default) or `1d`. */
  readonly bucket?: '1h' | '1d' | undefined;
}

/** Forwarded and refused requests over a window (GET /v1/usage), from per-hour counts. */
export interface Usage {
  readonly object: 'usage';
  readonly window: string;
  readonly bucket: string;
  readonly start: string;
  readonly end: string;
  readonly forwarded: number;
  readonly refused: number;
  /** Refusals by reason, camelCased: `originOrIpNotAllowed`, `ipBackoff`, `rateOrQuotaLimit`, … */
  readonly refusedByReason: Readonly<Record<string, number>>;
  readonly buckets: readonly {
    readonly start: string;
    readonly forwarded: number;
    readonly refused: number;
  }[];
  /** Provider tokens and cost in the window, by bucket, token and model. */
  readonly spend: UsageSpend;
  /** Spend against the account's and each token's budget, in its current period. */
  readonly budgets: readonly BudgetStatus[];
}

export interface SpendLine {
  readonly requests: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Micro-USD from the price table. */
  readonly costMicros: number;
}

export interface UsageSpend extends SpendLine {
  readonly byToken: readonly (SpendLine & { readonly tokenId: string })[];
  readonly byModel: readonly (SpendLine & { readonly model: string | null })[];
  readonly buckets: readonly (SpendLine & { readonly start: string })[];
}

export interface BudgetStatus {
  readonly scope: 'account' | 'token';
  readonly tokenId: string | null;
  readonly budget: Budget;
  readonly period: string;
  readonly used: number;
  readonly limit: number;
  readonly unit: 'usd' | 'tokens';
  readonly fraction: number;
  readonly resetsAt: string | null;
}

/** One delivery of an event to a webhook endpoint. */
export interface Delivery {
  readonly id: string;
  readonly eventId: string;
  readonly eventType: string;
  readonly status: 'pending' | 'delivered' | 'failed';
  readonly attempts: number;
  readonly lastError: string | null;
  readonly createdAt: string;
  readonly completedAt: string | null;
  /** Each attempt, oldest first; never a response body. */
  readonly attemptLog: readonly DeliveryAttempt[];
}

export interface DeliveryAttempt {
  readonly attempt: number;
  readonly attemptedAt: string;
  /** The receiver's HTTP status; null when none came. */
  readonly statusCode: number | null;
  readonly durationMs: number;
  /** `http_status`, `timeout`, `connection`, `dns`, `refused` or `other`; null on success. */
  readonly errorClass: string | null;
}

export interface WebhookUpdateParams {
  readonly enabled: boolean;
}

export interface WebhookTest {
  /** The `ping` event's id (the `webhook-id` header the receiver gets). */
  readonly eventId: string;
  readonly deliveryId: string;
}

export interface RedeliverParams {
  /** Only this endpoint; without it, every enabled endpoint subscribed to the event's type. */
  readonly webhookId?: string | undefined;
}

export interface Redelivery {
  readonly eventId: string;
  readonly deliveries: readonly { readonly deliveryId: string; readonly webhookId: string }[];
}

export interface AccountUpdateParams {
  readonly name?: string | undefined;
  /** An address, or null to clear it. */
  readonly alertEmail?: string | null | undefined;
  /** null removes the account's budget. */
  readonly budget?: Budget | null | undefined;
}

/** Per-call overrides. */
export interface RequestOptions {
  /**
   * Sent as `Idempotency-Key` on POST and DELETE calls (default: a random UUID per call, reused
   * across its retries). Pass your own to make a create or delete safe to repeat across process
   * restarts.
   */
  readonly idempotencyKey?: string | undefined;
  readonly timeoutMs?: number | undefined;
  readonly maxRetries?: number | undefined;
}
