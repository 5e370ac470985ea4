import { CLIENT_ERROR_MESSAGES } from '../errors/client-error.js';
import { ERROR_CODES, type ErrorCode } from '../errors/codes.js';
import { quote } from '../rules/text.js';
import { EXPOSE_HEADERS } from './exposed-headers.js';
import { sendHead, type ProxyResponse } from './exchange-io.js';

/** The codes the proxy answers with itself (DESIGN §4 table), each with its fixed human sentence. */
export const PROXY_ERROR_MESSAGES = {
  route_not_found:
    'No such provider. Use https://<proxy>/<provider>/<provider path>, e.g. /openai/v1/chat/completions.',
  invalid_path:
    'The path has a dot segment (. or ..), a backslash or a ;-parameter after dots, also when percent-encoded. ' +
    'Send the provider path as the provider documents it.',
  missing_token: 'No token: send your sanitized token as "Authorization: Bearer svc_hb_…".',
  invalid_token: 'The token is not a valid sanitized token (svc_hb_…) of this service.',
  token_revoked:
    'This token has been revoked, which cannot be undone. Ship a new token (dashboard, or POST /v1/tokens).',
  token_expired:
    'This token has expired (its expires_at has passed). Ship a new token (dashboard, or POST /v1/tokens).',
  provider_mismatch: 'This token belongs to another provider than the one named in the path.',
  origin_not_allowed: 'This token may not be used from this origin.',
  ip_not_allowed: 'This token may not be used from this IP address.',
  ip_backoff: 'Too many unauthorized requests from this IP address; retry after the Retry-After delay.',
  rate_limited: "This token's rate limit is used up; retry after the Retry-After delay.",
  quota_exceeded: "The account's monthly plan quota is used up.",
  budget_exceeded: 'The budget of this token or its account would be exceeded by this request.',
  upstream_unreachable: 'The provider could not be reached.',
  upstream_timeout: 'The provider did not answer in time.',
  store_unavailable: 'The token store is unavailable; retry shortly.',
  kek_unavailable:
    'The key-encryption key is unavailable (an HSM that does not answer, or a KEK version this server cannot load); retry shortly.',
  internal_error: 'Internal error in the proxy.',
  // HTTP/2 only for these two: node:http's parser answers HTTP/1.1 (src/errors/client-error.ts).
  headers_too_large: CLIENT_ERROR_MESSAGES.headers_too_large,
  request_timeout: CLIENT_ERROR_MESSAGES.request_timeout,
  // Only CONNECT over HTTP/2 gets it (node:http drops a CONNECT's connection itself).
  method_not_allowed:
    'CONNECT is not proxied: send provider requests to https://<proxy>/<provider>/<provider path>.',
} as const;

export type ProxyErrorCode = keyof typeof PROXY_ERROR_MESSAGES;

/**
 * Refusals that count toward IP backoff (DESIGN §10: every refused 401 and 403), and
 * `provider_mismatch`: a known token used where it does not belong is unauthorized use too.
 */
export type DeniedCode = Extract<
  ProxyErrorCode,
  | 'missing_token'
  | 'invalid_token'
  | 'token_revoked'
  | 'token_expired'
  | 'provider_mismatch'
  | 'origin_not_allowed'
  | 'ip_not_allowed'
>;

/** `origin_not_allowed` when the request named no origin at all: the usual server-side mistake. */
export const NO_ORIGIN_MESSAGE =
  'This token may not be used from this origin: the request has no Origin or Referer header. ' +
  'Browsers send one; a server-side caller must send an Origin header with an allowed origin.';

/** `route_not_found`: which prefix was not a provider, and the ones that are (a rare path). */
export function routeNotFoundMessage(prefix: string | undefined, providers: readonly string[]): string {
  const asked =
    prefix === undefined || prefix === ''
      ? 'The path names no provider.'
      : `No provider ${quote(prefix, 40)}.`;
  return (
    `${asked} Use https://<proxy>/<provider>/<provider path>, e.g. /openai/v1/chat/completions; ` +
    `providers here: ${providers.join(', ')}.`
  );
}

/** A sentence for a rarer refusal that names its particulars; built only on that path. */
export function providerMismatchMessage(tokenProvider: string, pathProvider: string): string {
  return (
    `This token is for provider ${JSON.stringify(tokenProvider)}; use /${tokenProvider}/… ` +
    `instead of /${pathProvider}/….`
  );
}

export function quotaExceededMessage(limit: number, resetsAt: string): string {
  return `The account's monthly plan quota of ${limit} requests is used up; it resets on ${resetsAt}.`;
}

/** `budget_exceeded`: which budget, and when it resets (ms since the epoch; null: never). */
export function budgetExceededMessage(
  scope: 'token' | 'account',
  budget: string,
  resetsAt: number | null,
): string {
  const whose = scope === 'token' ? "This token's" : "The account's";
  const reset =
    resetsAt === null
      ? 'it does not reset: raise or remove the budget (PATCH /v1/tokens/:id or /v1/account).'
      : `it resets at ${new Date(resetsAt).toISOString()}.`;
  return `${whose} budget of ${budget} would be exceeded by this request's worst case (input plus max output tokens); ${reset}`;
}

/**
 * The body shape of DESIGN §4 and §13: `type: "error"` at the top makes the Anthropic SDKs show it as
 * an API error; `error` is what the OpenAI SDKs read.
 */
export function proxyErrorBody(code: ErrorCode, message: string, requestId: string): string {
  return JSON.stringify({
    type: 'error',
    error: { type: 'tokenproxy_error', code, message, request_id: requestId },
  });
}

interface PreparedError {
  readonly status: number;
  /** The body up to the request id, and what follows it: only the id is added per response. */
  readonly head: string;
  readonly tail: string;
}

/** A code's body with its fixed sentence, made once: only the request id is added per response. */
function prepare(code: ProxyErrorCode, message: string): PreparedError {
  const full = proxyErrorBody(code, message, '\u0000');
  const at = full.indexOf('\\u0000');
  return {
    status: ERROR_CODES[code].status,
    head: full.slice(0, at),
    tail: full.slice(at + '\\u0000'.length),
  };
}

/**
 * Refusals a retry of the same request cannot turn around, marked `x-should-retry: false`, which the
 * OpenAI and Anthropic SDKs obey over their own rules. Without it they retried a 429 `ip_backoff`
 * after its Retry-After, and each retry was one more unauthorized attempt, deepening the backoff (and
 * hiding the refusal's reason behind 2, 8 and 32 s of waiting); `quota_exceeded` and
 * `budget_exceeded` reset in hours or never. `rate_limited` and tokenproxy's own 5xx stay retryable.
 */
const NOT_RETRIED: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'missing_token',
  'invalid_token',
  'token_revoked',
  'token_expired',
  'provider_mismatch',
  'origin_not_allowed',
  'ip_not_allowed',
  'ip_backoff',
  'quota_exceeded',
  'budget_exceeded',
  'route_not_found',
  'invalid_path',
  'method_not_allowed',
  'headers_too_large',
  // Node's HTTP/1.1 parser's refusal (src/errors/client-error.ts): the same bytes parse no better.
  'malformed_request',
]);

/** Whether a refusal is sent with `x-should-retry: false` (also the parser's, on the proxy listener). */
export function isNotRetried(code: ErrorCode): boolean {
  return NOT_RETRIED.has(code);
}

const PREPARED = new Map<ProxyErrorCode, PreparedError>();
for (const code of Object.keys(PROXY_ERROR_MESSAGES) as ProxyErrorCode[]) {
  PREPARED.set(code, prepare(code, PROXY_ERROR_MESSAGES[code]));
}
const PREPARED_NO_ORIGIN = prepare('origin_not_allowed', NO_ORIGIN_MESSAGE);

/**
 * Writes a proxy error. When the caller sent an `Origin`, the error carries CORS headers for it
 * whatever the token allows: a browser app can then read the code (`origin_not_allowed`, …) instead of
 * an opaque network error, and the body reveals nothing (no key, no token, no provider data).
 * Request ids are ours (`req_` + base58), so they never need JSON escaping. `message` replaces the
 * code's fixed sentence: NO_ORIGIN_MESSAGE is prepared too; any other is built here, which only the
 * rare refusals that name particulars (provider_mismatch, quota_exceeded) pay for.
 */
export function writeProxyError(
  res: ProxyResponse,
  code: ProxyErrorCode,
  requestId: string,
  origin: string | undefined,
  /** More header name/value pairs (`Retry-After`, `RateLimit-*`). */
  extra?: readonly string[] | null,
  message?: string,
): number {
  const prepared =
    message === undefined
      ? (PREPARED.get(code) as PreparedError)
      : message === NO_ORIGIN_MESSAGE
        ? PREPARED_NO_ORIGIN
        : prepare(code, message);
  const body = prepared.head + requestId + prepared.tail;
  const headers: string[] = [
    'content-type',
    'application/json',
    'content-length',
    String(Buffer.byteLength(body)),
    'cache-control',
    'no-store',
    'x-content-type-options',
    'nosniff',
    'x-request-id',
    requestId,
    'request-id',
    requestId,
    'x-tokenproxy-request-id',
    requestId,
  ];
  if (origin !== undefined) {
    headers.push(
      'access-control-allow-origin',
      origin,
      'vary',
      'Origin',
      'access-control-expose-headers',
      EXPOSE_HEADERS,
    );
  }
  if (NOT_RETRIED.has(code)) headers.push('x-should-retry', 'false');
  if (extra !== undefined && extra !== null) for (const item of extra) headers.push(item);
  sendHead(res, prepared.status, headers);
  res.end(body);
  return prepared.status;
}
