import { sendHead, type ProxyRequest, type ProxyResponse } from './exchange-io.js';

/**
 * CORS of the proxy (DESIGN §4). Browsers are the main callers: preflights carry no token, so they
 * are answered here for any origin; the real request is then checked against the token's origins,
 * and only an authorized answer (or our own error, see errors.ts) is readable by the page.
 */

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';

/** Used when a preflight lists no headers: what the OpenAI and Anthropic browser SDKs send. */
const DEFAULT_ALLOW_HEADERS = [
  'authorization',
  'content-type',
  'x-api-key',
  'x-goog-api-key',
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'openai-organization',
  'openai-project',
  'x-stainless-arch',
  'x-stainless-lang',
  'x-stainless-os',
  'x-stainless-package-version',
  'x-stainless-retry-count',
  'x-stainless-runtime',
  'x-stainless-runtime-version',
  'x-stainless-timeout',
  'x-stainless-helper-method',
].join(', ');

/** Chromium caps preflight caching at 2 hours; longer values would only be cut. */
const MAX_AGE = '7200';

export function isPreflight(req: ProxyRequest): boolean {
  return (
    req.method === 'OPTIONS' &&
    req.headers.origin !== undefined &&
    req.headers['access-control-request-method'] !== undefined
  );
}

/** 204 allowing the requesting origin, the methods, and the requested headers (echoed). */
export function writePreflight(res: ProxyResponse, origin: string, requestHeaders: string | undefined): void {
  sendHead(res, 204, [
    'access-control-allow-origin',
    origin,
    'access-control-allow-methods',
    ALLOW_METHODS,
    'access-control-allow-headers',
    requestHeaders === undefined || requestHeaders.trim() === '' ? DEFAULT_ALLOW_HEADERS : requestHeaders,
    'access-control-max-age',
    MAX_AGE,
    'vary',
    'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
  ]);
  res.end();
}
