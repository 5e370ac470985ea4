import { budgetFromText } from '../../usage/budget.js';
import { sql, type SelectQueryBuilder, type SqlBool } from 'kysely';
import {
  TOKEN_STATUSES,
  type AccountRecord,
  type AnomalyEntry,
  type EventRecord,
  type WebhookRecord,
  type Page,
  type PageQuery,
  type ProviderKeyRecord,
  type RateLimit,
  type RequestLogEntry,
  type TokenRecord,
  type TokenStatus,
} from '../records.js';
import type {
  AccountRow,
  AnomalyRow,
  EventRow,
  ProviderKeyRow,
  RequestLogRow,
  TokenRow,
  WebhookRow,
} from '../schema.js';

/** Row ↔ record conversion. Stored values are checked, so a corrupt row fails loudly, not downstream. */

function isStatus(value: string): value is TokenStatus {
  return TOKEN_STATUSES.some((status) => status === value);
}

function corrupt(column: string, value: string): Error {
  return new Error(`unexpected stored value in ${column}: ${value}`);
}

export function toAccount(row: AccountRow): AccountRecord {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    alertEmail: row.alert_email,
    createdAt: row.created_at,
    budget: budgetFromText(row.budget),
  };
}

export type ProviderKeyRowWithCount = ProviderKeyRow & { token_count: number | null };

export function toProviderKey(row: ProviderKeyRowWithCount): ProviderKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    provider: row.provider,
    hint: row.hint,
    ciphertext: row.ciphertext,
    createdAt: row.created_at,
    rotatedAt: row.rotated_at,
    deletedAt: row.deleted_at,
    tokenCount: row.token_count ?? 0,
  };
}

export function parseStringArray(column: string, text: string): string[] {
  const value: unknown = JSON.parse(text);
  if (!Array.isArray(value) || !value.every((item): item is string => typeof item === 'string')) {
    throw corrupt(column, text);
  }
  return value;
}

function parseRateLimit(text: string | null): RateLimit | null {
  if (text === null) return null;
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null) throw corrupt('tokens.rate_limit', text);
  const { requests, window } = value as Record<string, unknown>;
  if (typeof requests !== 'number' || typeof window !== 'string') throw corrupt('tokens.rate_limit', text);
  return { requests, window };
}

export function toToken(row: TokenRow): TokenRecord {
  if (!isStatus(row.status)) throw corrupt('tokens.status', row.status);
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    provider: row.provider,
    keyId: row.key_id,
    digest: row.digest,
    hint: row.hint,
    authorizedOrigins: parseStringArray('tokens.authorized_origins', row.authorized_origins),
    authorizedIps: parseStringArray('tokens.authorized_ips', row.authorized_ips),
    rateLimit: parseRateLimit(row.rate_limit),
    status: row.status,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    requestCount: row.request_count,
    budget: budgetFromText(row.budget),
  };
}

export function rateLimitText(rateLimit: RateLimit | null): string | null {
  // Only the two known fields, in a fixed order, whatever object the caller passed.
  return rateLimit === null
    ? null
    : JSON.stringify({ requests: rateLimit.requests, window: rateLimit.window });
}

export function toRequestLog(row: RequestLogRow): RequestLogEntry {
  return {
    id: row.id,
    timestamp: row.timestamp,
    accountId: row.account_id,
    tokenId: row.token_id,
    provider: row.provider,
    origin: row.origin,
    ip: row.ip,
    country: row.country,
    pop: row.pop,
    path: row.path,
    status: row.status,
    authorized: row.authorized !== 0,
    latencyMs: row.latency_ms,
    errorCode: row.error_code,
    model: row.model,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    costMicros: row.cost_micros,
  };
}

export function toAnomaly(row: AnomalyRow): AnomalyEntry {
  return {
    id: row.id,
    accountId: row.account_id,
    tokenId: row.token_id,
    timestamp: row.timestamp,
    origin: row.origin,
    ip: row.ip,
    country: row.country,
    path: row.path,
    reason: row.reason,
    kind: row.kind,
    details: row.details === null ? null : (JSON.parse(row.details) as unknown),
  };
}

/** Lists fetch one row more than asked: its presence is `hasMore`. */
export function toPage<R, T>(rows: readonly R[], limit: number, map: (row: R) => T): Page<T> {
  return { items: rows.slice(0, limit).map(map), hasMore: rows.length > limit };
}

/**
 * One page of a newest-first list keyed on (`created_at`, `id`) of a single table: the rows after the
 * cursor position, one extra row fetched to know whether more follow.
 */
export async function newestFirstPage<DB, TB extends keyof DB, O, T>(
  query: SelectQueryBuilder<DB, TB, O>,
  page: PageQuery,
  map: (row: O) => T,
): Promise<Page<T>> {
  const createdAt = sql.ref('created_at');
  const id = sql.ref('id');
  const { after } = page;
  const filtered =
    after === undefined
      ? query
      : query.where(sql<SqlBool>`(${createdAt}, ${id}) < (${after.createdAt}, ${after.id})`);
  const rows = await filtered
    .orderBy(createdAt, 'desc')
    .orderBy(id, 'desc')
    .limit(page.limit + 1)
    .execute();
  return toPage(rows, page.limit, map);
}

export function toWebhook(row: Omit<WebhookRow, 'kek_id'>): WebhookRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    events: parseStringArray('webhooks.events', row.events),
    secret: row.secret,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason,
    failingSince: row.failing_since,
  };
}

export function parseEventData(text: string): Readonly<Record<string, unknown>> {
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw corrupt('events.data', text);
  return value as Record<string, unknown>;
}

export function toEvent(row: EventRow): EventRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    type: row.type,
    createdAt: row.created_at,
    data: parseEventData(row.data),
  };
}
