/**
 * The one closed list of error codes tokenproxy answers with, on both listeners.
 *
 * Every code has a fixed HTTP status and error type, so a code always means the same thing to a
 * client. `docs/errors.md` documents each code with how to solve it; a test keeps the two in step.
 */

export type ErrorType =
  'invalid_request' | 'authentication' | 'not_found' | 'conflict' | 'plan_limit' | 'rate_limit' | 'internal';

interface CodeSpec {
  readonly status: number;
  readonly type: ErrorType;
}

export const ERROR_CODES = {
  // Request shape (management API)
  invalid_json: { status: 400, type: 'invalid_request' },
  body_too_large: { status: 413, type: 'invalid_request' },
  unsupported_media_type: { status: 415, type: 'invalid_request' },
  missing_parameter: { status: 400, type: 'invalid_request' },
  invalid_parameter: { status: 400, type: 'invalid_request' },
  unknown_parameter: { status: 400, type: 'invalid_request' },
  unknown_provider: { status: 400, type: 'invalid_request' },
  invalid_cursor: { status: 400, type: 'invalid_request' },
  provider_mismatch: { status: 400, type: 'invalid_request' },
  method_not_allowed: { status: 405, type: 'invalid_request' },
  malformed_request: { status: 400, type: 'invalid_request' },
  request_timeout: { status: 408, type: 'invalid_request' },
  headers_too_large: { status: 431, type: 'invalid_request' },

  // Account API keys
  missing_api_key: { status: 401, type: 'authentication' },
  invalid_api_key: { status: 401, type: 'authentication' },
  insufficient_scope: { status: 403, type: 'authentication' },
  plan_change_forbidden: { status: 403, type: 'authentication' },

  // Dashboard sessions (DESIGN §12)
  session_expired: { status: 401, type: 'authentication' },
  csrf_rejected: { status: 403, type: 'authentication' },
  too_many_attempts: { status: 429, type: 'rate_limit' },

  // Resources
  route_not_found: { status: 404, type: 'not_found' },
  token_not_found: { status: 404, type: 'not_found' },
  key_not_found: { status: 404, type: 'not_found' },
  webhook_not_found: { status: 404, type: 'not_found' },
  api_key_not_found: { status: 404, type: 'not_found' },
  request_log_not_found: { status: 404, type: 'not_found' },
  event_not_found: { status: 404, type: 'not_found' },
  key_deleted: { status: 409, type: 'conflict' },
  token_not_active: { status: 409, type: 'conflict' },
  webhook_disabled: { status: 409, type: 'conflict' },

  // Idempotency-Key on POST routes (management API)
  idempotency_conflict: { status: 409, type: 'conflict' },
  idempotency_in_progress: { status: 409, type: 'conflict' },

  // Plans
  plan_limit_exceeded: { status: 403, type: 'plan_limit' },

  // Proxy: request shape
  invalid_path: { status: 400, type: 'invalid_request' },

  // Proxy: token checks
  missing_token: { status: 401, type: 'authentication' },
  invalid_token: { status: 401, type: 'authentication' },
  token_revoked: { status: 401, type: 'authentication' },
  token_expired: { status: 401, type: 'authentication' },
  origin_not_allowed: { status: 403, type: 'authentication' },
  ip_not_allowed: { status: 403, type: 'authentication' },
  ip_backoff: { status: 429, type: 'rate_limit' },
  rate_limited: { status: 429, type: 'rate_limit' },
  quota_exceeded: { status: 429, type: 'rate_limit' },
  budget_exceeded: { status: 429, type: 'rate_limit' },

  // Proxy: upstream
  upstream_unreachable: { status: 502, type: 'internal' },
  upstream_timeout: { status: 504, type: 'internal' },

  // Server side
  store_unavailable: { status: 503, type: 'internal' },
  kek_unavailable: { status: 503, type: 'internal' },
  internal_error: { status: 500, type: 'internal' },
} as const satisfies Record<string, CodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;

export const ALL_ERROR_CODES = Object.keys(ERROR_CODES) as ErrorCode[];

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CODES, value);
}
