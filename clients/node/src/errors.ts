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
/** 409: `key_deleted`, `idempotency_conflict`, `idempotency_in_progress`. */
export class ConflictError extends TokenProxyError {}
/** 429, after the client's own retries. */
export class RateLimitError extends TokenProxyError {}
/** 5xx, after the client's own retries. */
export class InternalServerError extends TokenProxyError {}
/** No HTTP response: DNS, refused or reset connection, TLS failure. */
export class ConnectionError extends TokenProxyError {}
/** No complete response within `timeoutMs`. */
export class TimeoutError extends ConnectionError {}

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
