import { ERROR_CODES, type ErrorCode, type ErrorType } from './codes.js';

export interface ErrorOptions {
  /** The request field the error is about, in snake_case (`allowed_hosts[1]`). */
  readonly param?: string;
  /** Extra response headers, e.g. `Retry-After`. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly cause?: unknown;
}

/**
 * The one error class that crosses module boundaries. Its `message` is shown to API callers, so it
 * must name what is wrong without echoing secrets (never include a key, token or request body).
 */
export class TokenProxyError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  readonly param: string | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TokenProxyError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.param = options.param;
    this.headers = options.headers;
  }
}

export function isTokenProxyError(err: unknown): err is TokenProxyError {
  return err instanceof TokenProxyError;
}
