import { EXPOSE_HEADERS } from './exposed-headers.js';
import { redactText } from './redact.js';

/**
 * Header rules of the key swap (DESIGN §4 steps 6-9) and of the way back. Name sets are built once;
 * a request costs one pass over its raw headers.
 */

/** Hop-by-hop headers (RFC 9110 §7.6.1) plus ones that only describe the client's connection to us. */
const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'http2-settings',
];

/** Every header that can carry a credential: the caller's token must never reach the provider. */
const CREDENTIALS = [
  'authorization',
  'x-api-key',
  'x-goog-api-key',
  'api-key',
  'proxy-authorization',
  'cookie',
];

/**
 * Where the request came from, which the provider has no business knowing and which could steer a
 * naive upstream (`host`, `x-forwarded-host`; `x-original-url` and `x-rewrite-url`, which IIS and
 * some frameworks take as the real path, bypassing our path checks). `expect` is handled by our
 * listener (100-continue) and undici refuses to forward it. `accept-encoding` is replaced (see
 * ACCEPT_ENCODING).
 */
const ORIGIN_AND_ROUTING = [
  'origin',
  'referer',
  'host',
  'forwarded',
  'x-real-ip',
  'expect',
  'accept-encoding',
  'x-original-url',
  'x-rewrite-url',
];

const DROP_REQUEST = new Set<string>([...HOP_BY_HOP, ...CREDENTIALS, ...ORIGIN_AND_ROUTING]);

/**
 * Upstream answers must be readable bytes so the real key can be found and redacted if the provider
 * echoes it (a gzip stream would hide it). LLM answers are small or streamed token by token, so the
 * bandwidth cost is small; the client-to-proxy hop is usually local or on a fast edge.
 */
export const ACCEPT_ENCODING = 'identity';

/**
 * Builds the outbound header list (flat `[name, value, …]`, duplicates and case preserved) from the
 * caller's raw headers, without any header in DROP_REQUEST, any `x-forwarded-*`, any `proxy-*`, or any
 * header the caller named in `Connection`, or any HTTP/2 pseudo-header; then appends the provider's auth header and identity
 * encoding. `content-length` stays: undici frames the streamed body by it (and refuses a body that
 * does not match it), so the provider sees the same framing the caller chose.
 */
export function upstreamHeaders(
  raw: readonly string[],
  connection: string | undefined,
  authName: string,
  authValue: string,
): string[] {
  const named = connection === undefined ? undefined : connectionNamed(connection);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    // HTTP/2 pseudo-headers (`:authority`, `:path`, …) describe the client's stream, not the request.
    if (name.charCodeAt(0) === 58 /* : */) continue;
    const lower = name.toLowerCase();
    if (DROP_REQUEST.has(lower)) continue;
    // A custom provider's own key header may carry the caller's token: never pass it on.
    if (lower === authName) continue;
    if (lower.startsWith('x-forwarded-') || lower.startsWith('proxy-')) continue;
    if (named?.has(lower)) continue;
    out.push(name, raw[i + 1] as string);
  }
  out.push(authName, authValue, 'accept-encoding', ACCEPT_ENCODING);
  return out;
}

/** Header names listed in a `Connection` header are hop-by-hop for this message (RFC 9110 §7.6.1). */
function connectionNamed(value: string): Set<string> | undefined {
  let set: Set<string> | undefined;
  for (const part of value.split(',')) {
    const name = part.trim().toLowerCase();
    if (name === '' || name === 'keep-alive' || name === 'close') continue;
    (set ??= new Set()).add(name);
  }
  return set;
}

/**
 * Response headers not passed back: hop-by-hop ones, `content-length` (redaction may change the body
 * length, so bodies are re-framed by our listener), the provider's CORS headers (ours replace them),
 * and what would act on the proxy's own origin in a browser: the provider's HSTS policy
 * (`includeSubDomains; preload` for api.openai.com) and its alternative services (`alt-svc: h3=…`
 * would send browsers to QUIC on the proxy's host). The operator sets those for their own host.
 */
const DROP_RESPONSE = new Set<string>([
  ...HOP_BY_HOP,
  'content-length',
  'strict-transport-security',
  'alt-svc',
  'access-control-allow-origin',
  'access-control-allow-credentials',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
]);

export function dropResponseHeader(lowerName: string, hasBody: boolean): boolean {
  if (lowerName === 'content-length') return hasBody;
  return DROP_RESPONSE.has(lowerName) || lowerName.startsWith('proxy-');
}

/** The key's forms as text (KeyPatterns), and the length of the shortest, for header values. */
export interface HeaderSecrets {
  readonly shortest: number;
  readonly texts: readonly string[];
}

/**
 * A value shorter than every form cannot hold one: most headers (`date`, `content-type`…), so the
 * forms' strings are only made when a provider sends a value long enough.
 */
function redactHeader(value: string, secrets: HeaderSecrets): string {
  return value.length < secrets.shortest ? value : redactText(value, secrets.texts);
}

/**
 * The provider's response headers as relayed (flat `[name, value, …]`): without DROP_RESPONSE, with
 * every secret form redacted, `Vary` extended by `Origin`, then our request id, the token's
 * `RateLimit-*` headers and, for a caller that sent an Origin, our CORS headers. `decoded`: the body
 * is relayed decoded (answer-encoding.ts), so its `content-encoding` no longer applies.
 */
export function relayedHeaders(
  upstream: Record<string, string | string[] | undefined>,
  hasBody: boolean,
  secrets: HeaderSecrets,
  origin: string | undefined,
  requestId: string,
  limitHeaders: readonly string[] | null,
  decoded = false,
): string[] {
  const out: string[] = [];
  let vary = false;
  // Names the provider's own `Connection` lists are hop-by-hop for its answer. undici reports
  // `keep-alive` on nearly every answer, which names nothing: no split for it.
  const connection = upstream.connection;
  const named =
    typeof connection === 'string' && connection !== 'keep-alive' && connection !== 'close'
      ? connectionNamed(connection)
      : undefined;
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined) continue;
    if (dropResponseHeader(name, hasBody)) continue;
    if (named?.has(name)) continue;
    if (decoded && name === 'content-encoding') continue;
    if (typeof value === 'string') {
      if (name === 'vary' && origin !== undefined) {
        vary = true;
        out.push(name, `${redactHeader(value, secrets)}, Origin`);
      } else {
        out.push(name, redactHeader(value, secrets));
      }
    } else {
      for (const item of value) out.push(name, redactHeader(item, secrets));
    }
  }
  out.push('x-tokenproxy-request-id', requestId);
  if (limitHeaders !== null) for (const item of limitHeaders) out.push(item);
  if (origin !== undefined) {
    out.push('access-control-allow-origin', origin, 'access-control-expose-headers', EXPOSE_HEADERS);
    if (!vary) out.push('vary', 'Origin');
  }
  return out;
}

/** The response to this request carries no body whatever its headers say (RFC 9110 §6.4.1). */
export function responseHasBody(method: string, status: number): boolean {
  return method !== 'HEAD' && status !== 204 && status !== 304 && status >= 200;
}

/**
 * The sanitized token from `Authorization: Bearer <t>`; for providers whose own SDKs send the key in
 * a header of their own (`header:x-api-key`), from that header too (DESIGN §10). `null`: no token sent;
 * `''`: a credential header that is not a bearer token (reported as an invalid token).
 */
export function tokenFrom(
  authorization: string | undefined,
  providerHeaderValue: string | string[] | undefined,
): string | null {
  if (authorization !== undefined && authorization !== '') {
    if (authorization.length > 7 && /^bearer$/i.test(authorization.slice(0, 6)) && authorization[6] === ' ') {
      return authorization.slice(7).trim();
    }
    return '';
  }
  if (typeof providerHeaderValue === 'string' && providerHeaderValue !== '')
    return providerHeaderValue.trim();
  if (Array.isArray(providerHeaderValue)) return '';
  return null;
}
