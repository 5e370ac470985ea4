import type { ServerResponse } from 'node:http';
import { ERROR_CODES } from '../errors/codes.js';
import { EXPOSE_HEADERS } from './cors.js';

/** The codes the proxy answers with itself (DESIGN §4 table), each with its fixed human sentence. */
export const PROXY_ERROR_MESSAGES = {
  route_not_found:
    'No such provider. Use https://<proxy>/<provider>/<provider path>, e.g. /openai/v1/chat/completions.',
  missing_token: 'No token: send your sanitized token as "Authorization: Bearer svc_hb_…".',
  invalid_token: 'The token is not a valid sanitized token (svc_hb_…) of this service.',
  token_revoked: 'This token has been revoked.',
  token_expired: 'This token has expired.',
  provider_mismatch: 'This token belongs to another provider than the one named in the path.',
  origin_not_allowed: 'This token may not be used from this origin.',
  ip_not_allowed: 'This token may not be used from this IP address.',
  ip_backoff: 'Too many unauthorized requests from this IP address; retry after the Retry-After delay.',
  rate_limited: "This token's rate limit is used up; retry after the Retry-After delay.",
  quota_exceeded: "The account's monthly plan quota is used up.",
  upstream_unreachable: 'The provider could not be reached.',
  upstream_timeout: 'The provider did not answer in time.',
  store_unavailable: 'The token store is unavailable; retry shortly.',
  kek_unavailable: 'The key-encryption key (HSM) is unavailable; retry shortly.',
  internal_error: 'Internal error in the proxy.',
} as const;

export type ProxyErrorCode = keyof typeof PROXY_ERROR_MESSAGES;

interface PreparedError {
  readonly status: number;
  /** The body up to the request id, and what follows it: only the id is added per response. */
  readonly head: string;
  readonly tail: string;
}

const PREPARED = new Map<ProxyErrorCode, PreparedError>();
for (const code of Object.keys(PROXY_ERROR_MESSAGES) as ProxyErrorCode[]) {
  const message = PROXY_ERROR_MESSAGES[code];
  const full = JSON.stringify({
    error: { type: 'tokenproxy_error', code, message, request_id: '\u0000' },
  });
  const at = full.indexOf('\\u0000');
  PREPARED.set(code, {
    status: ERROR_CODES[code].status,
    head: full.slice(0, at),
    tail: full.slice(at + '\\u0000'.length),
  });
}

/**
 * Writes a proxy error. When the caller sent an `Origin`, the error carries CORS headers for it
 * whatever the token allows: a browser app can then read the code (`origin_not_allowed`, …) instead of
 * an opaque network error, and the body reveals nothing (no key, no token, no provider data).
 * Request ids are ours (`req_` + base58), so they never need JSON escaping.
 */
export function writeProxyError(
  res: ServerResponse,
  code: ProxyErrorCode,
  requestId: string,
  origin: string | undefined,
  /** More header name/value pairs (`Retry-After`, `RateLimit-*`). */
  extra?: readonly string[] | null,
): number {
  const prepared = PREPARED.get(code) as PreparedError;
  const body = prepared.head + requestId + prepared.tail;
  const headers: string[] = [
    'content-type',
    'application/json',
    'content-length',
    String(Buffer.byteLength(body)),
    'cache-control',
    'no-store',
    'x-request-id',
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
  if (extra !== undefined && extra !== null) for (const item of extra) headers.push(item);
  res.writeHead(prepared.status, headers);
  res.end(body);
  return prepared.status;
}
