/**
 * The dashboard's only way to the server: same-origin fetch to /v1 with the session cookie (the
 * browser sends it; scripts cannot read it). The API key is sent once, to sign in, and never kept.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Called when the session is gone (401), so the app can show the sign-in form. */
let onSignedOut: () => void = () => undefined;
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

export async function api<T>(method: Method, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`/v1${path}`, {
      method,
      credentials: 'same-origin',
      cache: 'no-store',
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? null : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'tokenproxy did not answer. Check that the server is running.');
  }
  if (res.status === 204) return undefined as T;
  const json = (await res.json().catch(() => null)) as unknown;
  if (!res.ok) {
    const error = (json as { error?: { code?: string; message?: string } } | null)?.error;
    const retry = res.headers.get('retry-after');
    const failure = new ApiError(
      res.status,
      error?.code ?? 'unknown_error',
      error?.message ?? `The server answered ${res.status}.`,
      retry === null ? null : Number(retry),
    );
    if (res.status === 401 && path !== '/session') onSignedOut();
    throw failure;
  }
  return json as T;
}

export function query(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    if (value !== undefined && value !== '') q.set(key, String(value));
  const text = q.toString();
  return text === '' ? '' : `?${text}`;
}

export interface List<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Pages of 100 a view reads at most: 10,000 items, a list far longer than a page shows. */
const MAX_PAGES = 100;

/** A whole list, page after page, newest first; `complete` is false when it was cut at MAX_PAGES. */
export interface Whole<T> {
  items: T[];
  complete: boolean;
}

/**
 * Every item of a list endpoint. Views that look tokens up by id (names in the logs, the Revoke
 * buttons, the kill switch) read the whole list: reading only its first page made older tokens
 * show as deleted and their Revoke buttons disappear once an account had more than 100.
 */
export async function listAll<T>(path: string): Promise<Whole<T>> {
  const items: T[] = [];
  const glue = path.includes('?') ? '&' : '?';
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const next: List<T> = await api<List<T>>(
      'GET',
      `${path}${glue}limit=100${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
    );
    items.push(...next.data);
    if (!next.has_more || next.next_cursor === null) return { items, complete: true };
    cursor = next.next_cursor;
  }
  return { items, complete: false };
}

export interface Budget {
  amount_usd?: number;
  tokens?: number;
  period: 'day' | 'month' | 'total';
}

/** Spend against one budget in its current period (GET /v1/usage `budgets`). */
export interface BudgetStatus {
  scope: 'account' | 'token';
  token_id: string | null;
  budget: Budget;
  period: string;
  used: number;
  limit: number;
  unit: 'usd' | 'tokens';
  fraction: number;
  resets_at: string | null;
}

export interface Account {
  account_id: string;
  name: string;
  plan: string;
  limits: { active_tokens: number | null; requests_per_month: number | null };
  usage: { period_start: string; requests: number; active_tokens: number };
  alert_email: string | null;
  created_at: string;
  budget: Budget | null;
}

export interface Token {
  token_id: string;
  name: string;
  target_provider: string;
  real_key_ref: string;
  authorized_origins: string[];
  authorized_ips: string[];
  rate_limit: { requests: number; window: string } | null;
  status: 'active' | 'revoked' | 'expired';
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  request_count: number;
  sanitized_key_hint: string;
  proxy_base_url: string;
  budget: Budget | null;
}

export interface Key {
  key_id: string;
  name: string;
  provider: string;
  hint: string;
  created_at: string;
  rotated_at: string | null;
  deleted_at: string | null;
  token_count: number;
}

export interface Anomaly {
  anomaly_id: string;
  timestamp: string;
  token_id: string;
  origin: string | null;
  ip: string;
  country: string | null;
  path: string;
  reason: string;
  kind: string;
  details: Record<string, unknown> | null;
}

export interface LogRecord {
  request_id: string;
  timestamp: string;
  token_id: string | null;
  origin: string | null;
  ip: string;
  country: string | null;
  pop: string;
  path: string;
  status: number;
  authorized: boolean;
  latency_ms: number;
}

export interface Webhook {
  webhook_id: string;
  url: string;
  events: string[];
  created_at: string;
  disabled_at: string | null;
  disabled_reason: string | null;
  failing_since: string | null;
}

export interface Delivery {
  delivery_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_error: string | null;
  created_at: string;
  completed_at: string | null;
  attempt_log: {
    attempt: number;
    attempted_at: string;
    status_code: number | null;
    duration_ms: number;
    error_class: string | null;
  }[];
}

export interface Provider {
  id: string;
  base_url: string;
}

export interface Usage {
  start: string;
  end: string;
  forwarded: number;
  refused: number;
  refused_by_reason: Record<string, number>;
  buckets: { start: string; forwarded: number; refused: number }[];
  spend: { requests: number; input_tokens: number; output_tokens: number; cost_micros: number };
  budgets: BudgetStatus[];
}
