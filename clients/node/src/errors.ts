/** Fields of the management API's error body, plus what the transport knows. */
export interface ErrorDetails {
  readonly status?: number | undefined;
  readonly code: string;
  readonly type?: string | undefined;
  readonly param?: string | undefined;
  readonly requestId?: string | undefined;
  readonly headers?: Readonly<Record<string, string>> | undefined;
  readonly cause?: unknown;
}

/** Base of every error the client throws for a call. Match on `code` (stable); `message` may change. */
export class TokenProxyError extends Error {
  /** HTTP status; undefined when no response arrived (ConnectionError, TimeoutError). */
  readonly status: number | undefined;
  readonly code: string;
  /** The API's error type (`invalid_request`, `authentication`, …). */
  readonly type: string | undefined;
  /** The request field at fault, snake_case as the API names it (`allowed_hosts[1]`). */
  readonly param: string | undefined;
  /** Quote it in a bug report: it finds the server's log line. */
  readonly requestId: string | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(message: string, details: ErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.status = details.status;
    this.code = details.code;
    this.type = details.type;
    this.param = details.param;
    this.requestId = details.requestId;
    this.headers = details.headers ?? {};
  }
}

/** 400, 413, 415: the request is malformed; fix it before retrying. */
export class InvalidRequestError extends TokenProxyError {}
/** 401: missing or wrong API key. */
export class AuthenticationError extends TokenProxyError {}
/** 403. */
export class PermissionError extends TokenProxyError {}
/** 403 `plan_limit_exceeded`: the plan's active-token cap is reached. */
export class PlanLimitError extends PermissionError {}
/** 404: unknown id (ids of other accounts look the same). */
export class NotFoundError extends TokenProxyError {}
/** 409: `key_deleted`, `token_not_active`, `webhook_disabled`, `idempotency_conflict`, `idempotency_in_progress`. */
export class ConflictError extends TokenProxyError {}
/** 429, after the client's own retries. */
export class RateLimitError extends TokenProxyError {}
/** 5xx, after the client's own retries. */
export class InternalServerError extends TokenProxyError {}
/** No HTTP response: DNS, refused or reset connection, TLS failure. */
export class ConnectionError extends TokenProxyError {}
/** No complete response within `timeoutMs`. */
export class TimeoutError extends ConnectionError {}
/**
 * The server's TLS certificate was refused: `certificate_untrusted` (no trusted CA signed it, such
 * as tokenproxy's generated self-signed certificate) or `certificate_invalid` (wrong host name,
 * expired). Never retried: the next attempt would be refused the same way.
 */
export class CertificateError extends ConnectionError {}

const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
]);
const INVALID = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
]);

/** The CertificateError for a TLS verification failure (from node:https or fetch), else undefined. */
export function certificateError(err: unknown): CertificateError | undefined {
  const code = tlsCode(err) ?? tlsCode((err as { cause?: unknown } | null)?.cause);
  if (code === undefined) return undefined;
  if (UNTRUSTED.has(code)) {
    return new CertificateError(
      `The tokenproxy server's TLS certificate is not trusted (${code}). A server without tls_cert ` +
        'uses the self-signed certificate in its data directory: pass it as the `ca` option ' +
        "(new TokenProxy({ ca: 'tokenproxy-data/tls/cert.pem' })) or run Node with " +
        'NODE_EXTRA_CA_CERTS=tokenproxy-data/tls/cert.pem.',
      { code: 'certificate_untrusted', cause: err },
    );
  }
  if (INVALID.has(code)) {
    return new CertificateError(
      `The tokenproxy server's TLS certificate does not fit this connection (${code}): check that ` +
        'baseUrl uses a host name the certificate names, and that the certificate has not expired.',
      { code: 'certificate_invalid', cause: err },
    );
  }
  return undefined;
}

function tlsCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (UNTRUSTED.has(code) || INVALID.has(code)) ? code : undefined;
}

/** The error for an HTTP error response, by status family. */
export function errorForStatus(status: number, message: string, details: ErrorDetails): TokenProxyError {
  const d = { ...details, status };
  if (status === 401) return new AuthenticationError(message, d);
  if (status === 403) {
    return details.code === 'plan_limit_exceeded' || details.type === 'plan_limit'
      ? new PlanLimitError(message, d)
      : new PermissionError(message, d);
  }
  if (status === 404) return new NotFoundError(message, d);
  if (status === 409) return new ConflictError(message, d);
  if (status === 429) return new RateLimitError(message, d);
  if (status >= 500) return new InternalServerError(message, d);
  if (status >= 400) return new InvalidRequestError(message, d);
  return new TokenProxyError(message, d);
}

/** The signature, timestamp or headers of a webhook delivery do not check out. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}
