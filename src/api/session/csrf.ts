/**
 * Cross-site request forgery rules for cookie-authenticated requests (DESIGN §12). Pure: the caller
 * passes the request's method, `Origin` and `Host`.
 */

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The dashboard's own origin: `public_api_url`'s origin when set, else `https://<Host>` of the
 * request (so https://127.0.0.1:8443 and https://localhost:8443 both work). Undefined without a
 * usable Host.
 */
export function dashboardOrigin(
  host: string | undefined,
  publicApiUrl: string | undefined,
): string | undefined {
  if (publicApiUrl !== undefined) return new URL(publicApiUrl).origin;
  if (host === undefined || host === '' || /[\s/\\@?#]/.test(host)) return undefined;
  try {
    return new URL(`https://${host}`).origin;
  } catch {
    return undefined;
  }
}

/**
 * Whether a request authenticated by cookie may go ahead: safe methods always; POST, PATCH, DELETE
 * (and anything else) only with an `Origin` exactly equal to the dashboard's origin. A missing or
 * `null` Origin is refused.
 */
export function csrfAllows(
  method: string,
  origin: string | undefined,
  expected: string | undefined,
): boolean {
  if (SAFE_METHODS.has(method.toUpperCase())) return true;
  if (origin === undefined || origin === 'null' || expected === undefined) return false;
  return origin === expected;
}
