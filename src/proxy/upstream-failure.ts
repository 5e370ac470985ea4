import type { Logger } from 'pino';
import { ERROR_CODES } from '../errors/codes.js';
import { UNDECODABLE_ENCODING } from './answer-encoding.js';
import type { ProxyErrorCode } from './errors.js';
import { isDescriptorExhaustion, type DescriptorAlarm } from '../observability/descriptor-alarm.js';

/**
 * Why a request to a provider failed, as an operator needs it (DESIGN §13): one word per class, read
 * from the error codes of undici, Node's sockets and OpenSSL (on the error or its `cause`).
 */
export type UpstreamCause =
  | 'connect_refused'
  | 'certificate_untrusted'
  | 'certificate_invalid'
  | 'tls'
  | 'timeout'
  | 'reset'
  | 'dns'
  | 'unreachable'
  /** The answer came in a content encoding tokenproxy cannot decode (so cannot check for the key). */
  | 'content_encoding'
  /** No file descriptor was left for the connection (EMFILE, ENFILE): see the descriptor alarm. */
  | 'descriptors'
  | 'other';

/** The issuer chain does not end at a trusted CA: usually a missing `provider_ca`. */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
]);

/** Trusted chain, wrong certificate: expired, not yet valid, another host name, revoked. */
const INVALID = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_REVOKED',
  'CERT_SIGNATURE_FAILURE',
  'HOSTNAME_MISMATCH',
]);

const CAUSES: Readonly<Record<string, UpstreamCause>> = {
  ECONNREFUSED: 'connect_refused',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  UND_ERR_SOCKET: 'reset',
  UND_ERR_CLOSED: 'reset',
  ETIMEDOUT: 'timeout',
  UND_ERR_CONNECT_TIMEOUT: 'timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  ENOTFOUND: 'dns',
  EAI_AGAIN: 'dns',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EPROTO: 'tls',
  EMFILE: 'descriptors',
  ENFILE: 'descriptors',
  [UNDECODABLE_ENCODING]: 'content_encoding',
};

/** The innermost error code along `cause` (undici wraps socket errors: the inner one is specific). */
export function innermostCode(err: unknown): string | undefined {
  let found: string | undefined;
  let e = err;
  for (let depth = 0; depth < 4 && typeof e === 'object' && e !== null; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') found = code;
    e = (e as { cause?: unknown }).cause;
  }
  return found;
}

export function upstreamCause(code: string | undefined): UpstreamCause {
  if (code === undefined) return 'other';
  if (UNTRUSTED.has(code)) return 'certificate_untrusted';
  if (INVALID.has(code)) return 'certificate_invalid';
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return 'tls';
  return CAUSES[code] ?? 'other';
}

/** undici's error codes → our answer. Connect failures and early closes are 502, a silent provider 504. */
export function upstreamErrorCode(err: Error): ProxyErrorCode {
  const code = (err as { code?: unknown }).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return 'upstream_timeout';
  if (code === 'UND_ERR_INVALID_ARG' || code === 'UND_ERR_NOT_SUPPORTED') return 'internal_error';
  return 'upstream_unreachable';
}

/**
 * One warn line per failed upstream request (DESIGN §13), so a 502/504 can be diagnosed from the
 * request id the caller got: the cause class, the provider and the error's code. Never the error's
 * message (free text from libraries) or anything of the request (headers, key, body).
 */
export function logUpstreamFailure(
  logger: Logger,
  err: Error,
  requestId: string,
  provider: string,
  answered: ProxyErrorCode,
  /** The provider broke off after its headers were relayed: no error answer could be sent. */
  midAnswer: boolean,
  descriptors?: DescriptorAlarm,
): void {
  const code = innermostCode(err);
  // The line per request names the cause; the alarm says once what to change.
  if (isDescriptorExhaustion(code)) descriptors?.exhausted('upstream_connect', code ?? '');
  logger.warn(
    {
      request_id: requestId,
      provider,
      cause: upstreamCause(code),
      error_code: code ?? null,
      ...(midAnswer ? { during: 'response_body' } : { status: ERROR_CODES[answered].status }),
    },
    'upstream request failed',
  );
}
