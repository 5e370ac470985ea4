import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { TokenProxyError } from '../errors/tokenproxy-error.js';
import {
  StoreConflictError,
  StoreNotFoundError,
  StorePlanLimitError,
  StoreUnavailableError,
} from '../store/errors.js';
import { isVaultError } from '../vault/vault.js';
import { DISPLAY_NAME_RULE } from '../rules/display-name.js';

interface AjvError {
  readonly keyword: string;
  readonly instancePath: string;
  readonly params: Record<string, unknown>;
  readonly message?: string;
}

/**
 * Turns anything thrown inside a management route into the one error body of DESIGN §5. Unknown
 * errors become a plain 500 with the request id; their details go to the server log only.
 */
export function toTokenProxyError(err: unknown): TokenProxyError {
  if (err instanceof TokenProxyError) return err;
  if (err instanceof StoreUnavailableError) return storeUnavailable(err);
  if (isVaultError(err) && err.code === 'kek_unavailable') {
    return new TokenProxyError(
      'kek_unavailable',
      'The key-encryption key (HSM) cannot be reached right now, so no key can be sealed or opened. Try again shortly.',
    );
  }
  if (err instanceof StorePlanLimitError) {
    return new TokenProxyError(
      'plan_limit_exceeded',
      `Your plan allows ${err.limit} active tokens. Revoke a token or move to a larger plan.`,
    );
  }
  if (err instanceof StoreNotFoundError) {
    return err.what === 'key'
      ? new TokenProxyError('key_not_found', 'No key with this key_id in your account.', { param: 'key_id' })
      : new TokenProxyError('internal_error', 'Internal error.');
  }
  if (err instanceof StoreConflictError) {
    if (err.reason === 'token_not_active') {
      return new TokenProxyError(
        'token_not_active',
        'This token is revoked or has expired, and an ended token stays ended: its expires_at cannot change. Create a new token (POST /v1/tokens).',
        { param: 'expires_at' },
      );
    }
    return err.reason === 'key_deleted'
      ? new TokenProxyError(
          'key_deleted',
          'This key was deleted; its ciphertext is gone. Create a new key.',
          {
            param: 'key_id',
          },
        )
      : new TokenProxyError(
          'provider_mismatch',
          'The key of key_id belongs to another provider than "provider" names. Leave "provider" out (a token takes its key\'s provider; GET /v1/keys/:id shows it) or give a key of that provider.',
          {
            param: 'provider',
          },
        );
  }
  const fe = err as Partial<FastifyError> & { validation?: AjvError[]; validationContext?: string };
  if (fe.validation && fe.validation.length > 0) return fromValidation(fe.validation, fe.validationContext);
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new TokenProxyError('invalid_json', 'The request body is not valid JSON.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new TokenProxyError('invalid_json', 'The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new TokenProxyError('body_too_large', 'The request body is larger than 1 MB.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new TokenProxyError(
        'unsupported_media_type',
        'Send the body as JSON with Content-Type: application/json.',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new TokenProxyError('invalid_json', 'The Content-Length header does not match the body.');
  }
  if (err instanceof SyntaxError)
    return new TokenProxyError('invalid_json', 'The request body is not valid JSON.');
  return new TokenProxyError(
    'internal_error',
    'Internal error. The request id identifies it in the server log.',
  );
}

/**
 * One code for every store that cannot serve (clients retry it alike); the message says whether it
 * is away, refuses writes (only the operator can end that: free disk space, make the database
 * writable, so a retry soon after will not help until then) or cancelled the statement (a retry may
 * pass; a limit too tight for the work is the operator's to raise).
 */
function storeUnavailable(err: StoreUnavailableError): TokenProxyError {
  switch (err.reason) {
    case 'full':
      return new TokenProxyError(
        'store_unavailable',
        "The database's disk is full, so nothing can be stored and nothing was changed. Reading still works. " +
          'Try again later; the operator must free disk space (/readyz reports it).',
      );
    case 'read_only':
      return new TokenProxyError(
        'store_unavailable',
        'The database is read-only right now, so nothing can be stored and nothing was changed. Reading still works. ' +
          'Try again later; the operator must make it writable again (/readyz reports it).',
      );
    case 'cancelled':
      // True of each cause PostgreSQL gives one SQLSTATE for: its timeouts and an administrator's cancel.
      return new TokenProxyError(
        'store_unavailable',
        "The database cancelled this request's statement before it finished, so nothing was changed: a time limit " +
          'set on the database (such as statement_timeout or lock_timeout) ran out, or an administrator cancelled it. ' +
          "Try again; if it keeps happening, the operator can raise the database's statement_timeout " +
          "(the server log has the database's words under the request id).",
      );
    case 'file_missing':
    case 'file_replaced':
      return new TokenProxyError(
        'store_unavailable',
        `The database file was ${err.reason === 'file_missing' ? 'deleted or moved away' : 'replaced'} while the server runs: ` +
          'what it stored now would be lost when it stops, so nothing was changed. Reading still works (from the file it ' +
          'opened). The operator must put the file back or restart the server (/readyz reports it).',
      );
    case 'unreachable':
      return new TokenProxyError(
        'store_unavailable',
        'The database is unavailable right now. Try again shortly.',
      );
  }
}

/** `/allowed_hosts/0` → `allowed_hosts[0]`, `/rate_limit/window` → `rate_limit.window`. */
function paramName(path: string, child?: string): string {
  const parts = path.split('/').filter(Boolean);
  if (child !== undefined) parts.push(child);
  let out = '';
  for (const part of parts) {
    if (/^\d+$/.test(part)) out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out;
}

function snakeCase(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

// One clear problem at a time, the most telling first: a camelCase field sent instead of its
// snake_case name shows up as both "unknown" and "missing", and "unknown" explains both.
const PRIORITY = ['additionalProperties', 'required'];

function rank(e: AjvError): number {
  const i = PRIORITY.indexOf(e.keyword);
  return i === -1 ? PRIORITY.length : i;
}

function fromValidation(errors: AjvError[], context: string | undefined): TokenProxyError {
  const e = errors.reduce((best, cur) => (rank(cur) < rank(best) ? cur : best));
  const where =
    context === 'querystring' ? 'query parameter' : context === 'params' ? 'path parameter' : 'field';
  if (e.keyword === 'required') {
    const name = paramName(e.instancePath, String(e.params.missingProperty));
    return new TokenProxyError('missing_parameter', `Missing required ${where} "${name}".`, { param: name });
  }
  if (e.keyword === 'additionalProperties') {
    const field = String(e.params.additionalProperty);
    const name = paramName(e.instancePath, field);
    const snake = snakeCase(field);
    const hint =
      snake !== field ? ` Fields are snake_case: did you mean "${paramName(e.instancePath, snake)}"?` : '';
    return new TokenProxyError('unknown_parameter', `Unknown ${where} "${name}".${hint}`, { param: name });
  }
  const name = paramName(e.instancePath);
  // A value outside an enumeration (`?status=bogus`) fails every `const` branch of its anyOf: list
  // the accepted values instead of Ajv's "must be equal to constant".
  if (e.keyword === 'const' || e.keyword === 'enum' || e.keyword === 'anyOf') {
    const allowed = errors
      .filter((x) => x.instancePath === e.instancePath)
      .flatMap((x) =>
        x.keyword === 'const'
          ? [x.params.allowedValue]
          : x.keyword === 'enum'
            ? asArray(x.params.allowedValues)
            : [],
      );
    if (allowed.length > 0) {
      const list = allowed.map((v) => JSON.stringify(v)).join(', ');
      return new TokenProxyError('invalid_parameter', `Invalid ${where} "${name}": must be one of ${list}.`, {
        param: name,
      });
    }
  }
  if (name === '') {
    return new TokenProxyError('invalid_json', 'The request body must be a JSON object.');
  }
  const means = e.keyword === 'pattern' ? PATTERN_MEANS[name] : undefined;
  if (means !== undefined) {
    return new TokenProxyError('invalid_parameter', `Invalid ${where} "${name}": ${means}.`, { param: name });
  }
  return new TokenProxyError('invalid_parameter', `Invalid ${where} "${name}": ${describe(e)}.`, {
    param: name,
  });
}

/** What a value checked by a schema pattern must look like, for the parameters that have one. */
const PATTERN_MEANS: Readonly<Record<string, string>> = {
  status: 'expected an HTTP status from 100 to 599 (such as 429) or a class from 1xx to 5xx (such as 4xx)',
  name: `expected ${DISPLAY_NAME_RULE}`,
};

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? (value as unknown[]) : [];
}

function describe(e: AjvError): string {
  switch (e.keyword) {
    case 'type':
      return `expected ${String(e.params.type)}`;
    case 'minLength':
      return Number(e.params.limit) === 1
        ? 'must not be empty'
        : `must be at least ${String(e.params.limit)} characters`;
    case 'maxLength':
      return `must be at most ${String(e.params.limit)} characters`;
    case 'minimum':
      return `must be at least ${String(e.params.limit)}`;
    case 'maximum':
      return `must be at most ${String(e.params.limit)}`;
    case 'format':
      return e.params.format === 'date-time'
        ? 'expected an ISO 8601 date-time such as 2030-01-31T12:00:00.000Z'
        : `expected a valid ${String(e.params.format)}`;
    case 'pattern':
      return 'contains characters that are not accepted';
    case 'anyOf':
      return 'has the wrong type or format';
    default:
      return e.message ?? 'invalid value';
  }
}

/** The management API's one error body (DESIGN §5), for routes and for the listener's own refusals. */
export function apiErrorBody(error: TokenProxyError, requestId: string): { error: Record<string, string> } {
  return {
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      ...(error.param === undefined ? {} : { param: error.param }),
      request_id: requestId,
    },
  };
}

export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: TokenProxyError,
): FastifyReply {
  if (error.headers) void reply.headers(error.headers);
  // Also set here for answers Fastify gives outside the route's hooks (frameworkErrors).
  void reply.header('x-request-id', request.id);
  void reply.header('x-content-type-options', 'nosniff');
  return reply.code(error.status).send(apiErrorBody(error, request.id));
}
