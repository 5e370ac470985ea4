import type { Generated, Insertable, Selectable } from 'kysely';

/**
 * Table types for Kysely, identical in both dialects. Timestamps are ISO 8601 UTC text with
 * milliseconds so they compare and sort as text; JSON columns are text so SQLite and PostgreSQL
 * store them the same way.
 */

export interface AccountsTable {
  id: string;
  name: string;
  plan: string;
  alert_email: string | null;
  created_at: string;
  /** Migration 0014: JSON `{"amount_usd"|"tokens", "period"}` or null. */
  budget: Generated<string | null>;
}

export interface ApiKeysTable {
  digest: string;
  /** `ak_…`; every row has one since migration 0012. */
  id: string | null;
  account_id: string;
  name: Generated<string>;
  /** `full` or `read`. */
  scope: Generated<string>;
  start: string;
  created_at: string;
  revoked_at: string | null;
}

export interface AuditLogTable {
  id: string;
  account_id: string;
  created_at: string;
  action: string;
  object_id: string | null;
  /** `api_key`, `session` or `cli`. */
  actor_type: string;
  actor_id: string | null;
  actor_name: string;
  ip: string | null;
}

export interface ProviderKeysTable {
  id: string;
  account_id: string;
  name: string;
  provider: string;
  hint: string;
  ciphertext: Buffer | null;
  /** Id of the KEK version that wrapped the ciphertext's data key; null once the key is deleted. */
  kek_id: Generated<string | null>;
  created_at: string;
  rotated_at: string | null;
  deleted_at: string | null;
}

export interface TokensTable {
  id: string;
  account_id: string;
  name: string;
  provider: string;
  key_id: string;
  digest: string;
  hint: string;
  /** JSON array of strings. */
  authorized_origins: string;
  /** JSON array of strings. */
  authorized_ips: string;
  /** JSON `{requests, window}` or null. */
  rate_limit: string | null;
  status: string;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  request_count: Generated<number>;
  /** Migration 0014: JSON `{"amount_usd"|"tokens", "period"}` or null. */
  budget: Generated<string | null>;
}

export interface UsageTable {
  account_id: string;
  /** `YYYY-MM`, UTC. */
  period: string;
  requests: number;
}

export interface RequestLogsTable {
  id: string;
  account_id: string | null;
  token_id: string | null;
  provider: string | null;
  timestamp: string;
  origin: string | null;
  ip: string;
  country: string | null;
  pop: string;
  path: string;
  status: number;
  /** 0 or 1 in both dialects. */
  authorized: number;
  latency_ms: number;
  /** Migration 0006; null for rows written before it. */
  error_code: string | null;
  /** Migration 0014; null when unknown (and for rows written before it). */
  model: Generated<string | null>;
  input_tokens: Generated<number | null>;
  output_tokens: Generated<number | null>;
  cost_micros: Generated<number | null>;
}

export interface AnomaliesTable {
  id: string;
  account_id: string;
  token_id: string;
  timestamp: string;
  origin: string | null;
  ip: string;
  country: string | null;
  path: string;
  reason: string;
  kind: Generated<string>;
  /** JSON text or null. */
  details: string | null;
}

export interface IdempotencyKeysTable {
  account_id: string;
  idempotency_key: string;
  fingerprint: string;
  started_at: string;
  expires_at: string;
  /** Null while the first request is in flight. */
  response_status: number | null;
  /** Vault envelope of the response body; null while in flight. */
  response_body: Buffer | null;
  kek_id: Generated<string | null>;
}

export interface WebhooksTable {
  id: string;
  account_id: string;
  url: string;
  /** JSON array of event types, or `["*"]`. */
  events: string;
  /** The signing secret, as a vault envelope. */
  secret: Buffer;
  kek_id: Generated<string | null>;
  created_at: string;
  disabled_at: string | null;
  disabled_reason: string | null;
  /** First failed attempt since the last successful delivery; null while healthy. */
  failing_since: string | null;
}

export interface EventsTable {
  id: string;
  account_id: string;
  type: string;
  created_at: string;
  /** JSON object. */
  data: string;
}

export interface DeliveriesTable {
  id: string;
  event_id: string;
  account_id: string;
  /** `webhook` or `email`. */
  channel: string;
  webhook_id: string | null;
  email_to: string | null;
  /** `pending`, `delivered` or `failed`. */
  status: string;
  attempts: Generated<number>;
  next_attempt_at: string;
  /** Lease of the process sending the attempt; expired leases are free to claim. */
  locked_until: string | null;
  last_error: string | null;
  created_at: string;
  completed_at: string | null;
}

/** One row per KEK version (migration 0007). */
export interface KekVersionsTable {
  /** The KEK's 8-byte fingerprint as hex: the id every envelope sealed under it carries. */
  id: string;
  /** `local` or `pkcs11`. */
  provider: string;
  /** Where the KEK lives, safe to print (the HSM key label and token); null for `local`. */
  label: string | null;
  /** A vault envelope of a known plaintext under this KEK: opening it proves the KEK. */
  canary: Buffer;
  /** The MAC keys this version inherited from the one it replaced, sealed under it (migration 0011). */
  mac_keys: Buffer | null;
  created_at: string;
  /** Set when no envelope uses the version any more and it may be destroyed. */
  retired_at: string | null;
}

export interface DashboardSessionsTable {
  digest: string;
  account_id: string;
  /** The API key signed in with (0015); null only in rows written before it, which 0015 deletes. */
  api_key_id: string | null;
  created_at: string;
  last_seen_at: string;
  idle_expires_at: string;
  expires_at: string;
}

export interface UsageRollupsTable {
  account_id: string;
  /** Start of the hour, ISO 8601 UTC with milliseconds. */
  hour: string;
  /** `forwarded` or a refusal reason (src/requestlog/rollups.ts). */
  outcome: string;
  requests: number;
}

export interface JobLeasesTable {
  name: string;
  /** The holding process (src/cluster/job-lock.ts). */
  holder: string;
  lease_until: string;
}

/** Migration 0014: per hour, token and model (`''` when unknown). */
export interface UsageModelRollupsTable {
  account_id: string;
  hour: string;
  token_id: string;
  model: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost_micros: number;
}

/** One attempt of a webhook delivery (migration 0013). */
export interface DeliveryAttemptsTable {
  delivery_id: string;
  /** 1 for the first attempt. */
  attempt: number;
  account_id: string;
  attempted_at: string;
  /** The receiver's HTTP status; null when no answer came (timeout, connection, DNS, refused). */
  status_code: number | null;
  duration_ms: number;
  /** Null on success; else `http_status`, `timeout`, `connection`, `dns`, `refused` or `other`. */
  error_class: string | null;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  provider_keys: ProviderKeysTable;
  tokens: TokensTable;
  usage: UsageTable;
  request_logs: RequestLogsTable;
  anomalies: AnomaliesTable;
  idempotency_keys: IdempotencyKeysTable;
  webhooks: WebhooksTable;
  events: EventsTable;
  deliveries: DeliveriesTable;
  kek_versions: KekVersionsTable;
  dashboard_sessions: DashboardSessionsTable;
  usage_rollups: UsageRollupsTable;
  job_leases: JobLeasesTable;
  usage_model_rollups: UsageModelRollupsTable;
  audit_log: AuditLogTable;
  delivery_attempts: DeliveryAttemptsTable;
}

export type AccountRow = Selectable<AccountsTable>;
export type ProviderKeyRow = Selectable<ProviderKeysTable>;
export type TokenRow = Selectable<TokensTable>;
export type NewTokenRow = Insertable<TokensTable>;
export type RequestLogRow = Selectable<RequestLogsTable>;
export type AnomalyRow = Selectable<AnomaliesTable>;
export type NewProviderKeyRow = Insertable<ProviderKeysTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type EventRow = Selectable<EventsTable>;
