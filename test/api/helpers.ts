import { expect } from 'vitest';
import { ERROR_CODES, isErrorCode } from '../../src/errors/codes.js';
import type { PlanName } from '../../src/store/records.js';
import type { ApiHarness, ApiResponse, RequestOptions } from '../support/api-harness.js';

/**
 * Typed views of the management API's JSON (DESIGN §5) and small helpers shared by the route tests.
 * The harness gives bodies as `any`; these interfaces are what the tests assert against.
 */

export interface ErrorJson {
  type: string;
  code: string;
  message: string;
  param?: string;
  request_id: string;
}

export interface RateLimitJson {
  requests: number;
  window: string;
}

export interface TokenJson {
  token_id: string;
  name: string;
  target_provider: string;
  real_key_ref: string;
  authorized_origins: string[];
  authorized_ips: string[];
  rate_limit: RateLimitJson | null;
  status: 'active' | 'revoked' | 'expired';
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  request_count: number;
  sanitized_key_hint: string;
  proxy_base_url: string;
}

export interface CreatedTokenJson extends TokenJson {
  sanitized_key: string;
}

export interface KeyJson {
  key_id: string;
  name: string;
  provider: string;
  hint: string;
  created_at: string;
  rotated_at: string | null;
  deleted_at: string | null;
  token_count: number;
}

export interface AccountJson {
  account_id: string;
  name: string;
  plan: string;
  limits: { active_tokens: number | null; requests_per_month: number | null };
  usage: { period_start: string; requests: number; active_tokens: number };
  alert_email: string | null;
  created_at: string;
}

export interface ProviderJson {
  id: string;
  base_url: string;
  auth: string;
  builtin: boolean;
  proxy_base_url: string;
}

export interface ListJson<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export const TOKEN_FIELDS = [
  'token_id',
  'name',
  'target_provider',
  'real_key_ref',
  'authorized_origins',
  'authorized_ips',
  'rate_limit',
  'status',
  'created_at',
  'last_used_at',
  'expires_at',
  'revoked_at',
  'request_count',
  'sanitized_key_hint',
  'proxy_base_url',
  'budget',
].sort();

export const KEY_FIELDS = [
  'key_id',
  'name',
  'provider',
  'hint',
  'created_at',
  'rotated_at',
  'deleted_at',
  'token_count',
].sort();

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const B58 = '[1-9A-HJ-NP-Za-km-z]';
export const SANITIZED_RE = new RegExp(`^svc_hb_${B58}{43}$`);
export const TOKEN_ID_RE = new RegExp(`^${B58}{43}$`);
export const KEY_ID_RE = new RegExp(`^key_${B58}{22}$`);

const ERROR_TYPES = [
  'invalid_request',
  'authentication',
  'not_found',
  'conflict',
  'plan_limit',
  'rate_limit',
  'internal',
];

/** A token id that is well-formed but belongs to nobody; a key id likewise. */
/** Milliseconds, for moving the test clock. */
export const SECOND = 1000;

export const UNKNOWN_TOKEN_ID = '1'.repeat(43);
export const UNKNOWN_KEY_ID = `key_${'1'.repeat(22)}`;

/**
 * Asserts the exact DESIGN §5 error shape (no other fields, no stack), that the code belongs to the
 * closed list with its fixed status and type, and that `x-request-id` equals `request_id`.
 */
export function errorOf(res: ApiResponse): ErrorJson {
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.body as { error?: unknown } | undefined;
  expect(body, `expected an error body, got ${res.text}`).toBeTypeOf('object');
  expect(Object.keys(body ?? {})).toEqual(['error']);
  const error = body?.error as ErrorJson;
  const keys = Object.keys(error);
  for (const key of keys) expect(['type', 'code', 'message', 'param', 'request_id']).toContain(key);
  for (const key of ['type', 'code', 'message', 'request_id']) expect(keys).toContain(key);
  expect(error.type).toBeTypeOf('string');
  expect(ERROR_TYPES).toContain(error.type);
  expect(error.message).toBeTypeOf('string');
  expect(error.message.length).toBeGreaterThan(0);
  if ('param' in error) expect(error.param).toBeTypeOf('string');
  expect(error.request_id).toMatch(/^\S+$/);
  expect(res.headers['x-request-id']).toBe(error.request_id);
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(isErrorCode(error.code), `unknown error code ${error.code}`).toBe(true);
  if (isErrorCode(error.code)) {
    expect(res.status).toBe(ERROR_CODES[error.code].status);
    expect(error.type).toBe(ERROR_CODES[error.code].type);
  }
  // No stack traces or internals in bodies.
  expect(res.text).not.toMatch(/\bat .+\.(?:ts|js):\d+/);
  return error;
}

/** Asserts status, code and (when given) param of an error response; returns the error. */
export function expectError(res: ApiResponse, status: number, code: string, param?: string): ErrorJson {
  expect(res.status, res.text).toBe(status);
  const error = errorOf(res);
  expect(error.code, res.text).toBe(code);
  if (param !== undefined) expect(error.param, res.text).toBe(param);
  return error;
}

// The type parameter only names what the test expects the body to be (the harness gives `any`).
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
export function ok<T>(res: ApiResponse, status = 200): T {
  expect(res.status, res.text).toBe(status);
  expect(res.headers['x-request-id']).toMatch(/^\S+$/);
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  return res.body as T;
}

/** A controllable clock for the harness `now` option: real time plus an offset moved by `advance`. */
export class Clock {
  private offset = 0;
  readonly now = (): Date => new Date(Date.now() + this.offset);
  advance(ms: number): void {
    this.offset += ms;
  }
}

/** An account of the harness with its own API key: requests made through it use that key. */
export interface Client {
  readonly apiKey: string;
  readonly accountId: string;
  request(method: string, url: string, options?: Omit<RequestOptions, 'apiKey'>): Promise<ApiResponse>;
}

export async function newClient(h: ApiHarness, plan: PlanName = 'unlimited', name = 'acct'): Promise<Client> {
  const { apiKey, accountId } = await h.newAccount(name, plan);
  return clientFor(h, apiKey, accountId);
}

export function clientFor(h: ApiHarness, apiKey: string, accountId: string): Client {
  return {
    apiKey,
    accountId,
    request: (method, url, options = {}) => h.request(method, url, { ...options, apiKey }),
  };
}

export function tokenBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'web app',
    provider: 'openai',
    allowed_hosts: ['app.example.com'],
    real_key: 'sk-test-0123456789abcdefWXYZ',
    ...overrides,
  };
}

export async function createToken(
  c: Client,
  overrides: Record<string, unknown> = {},
): Promise<CreatedTokenJson> {
  return ok<CreatedTokenJson>(await c.request('POST', '/v1/tokens', { body: tokenBody(overrides) }), 201);
}

export async function createKey(c: Client, overrides: Record<string, unknown> = {}): Promise<KeyJson> {
  const body = {
    name: 'main key',
    provider: 'openai',
    real_key: 'sk-key-0123456789abcdefWXYZ',
    ...overrides,
  };
  return ok<KeyJson>(await c.request('POST', '/v1/keys', { body }), 201);
}

/** Every token and key of an account, read from the store (any status), for "nothing changed" checks. */
export async function snapshot(
  h: ApiHarness,
  accountId: string,
): Promise<{ tokens: string[]; keys: string[] }> {
  const now = new Date(Date.now() + 365 * 24 * 3600 * 1000).toISOString();
  const tokens = await h.store.tokens.list(accountId, { now }, { limit: 1000 });
  const keys = await h.store.keys.list(accountId, { limit: 1000 });
  return {
    tokens: tokens.items.map((t) => `${t.id}:${t.status}:${t.revokedAt ?? ''}:${t.keyId}`).sort(),
    keys: keys.items.map((k) => `${k.id}:${k.hint}:${k.deletedAt ?? ''}:${k.rotatedAt ?? ''}`).sort(),
  };
}
