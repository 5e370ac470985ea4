import type { FastifyRequest } from 'fastify';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import type { AccountRecord } from '../../store/records.js';
import { sessionCookieValue } from './cookie.js';
import { csrfAllows, dashboardOrigin } from './csrf.js';
import type { DashboardSessions } from './sessions.js';

/**
 * Who a /v1 request is: an `Authorization: Bearer` API key when the request carries one (scripts,
 * client libraries), else the dashboard's session cookie. A cookie-authenticated POST/PATCH/DELETE
 * must come from the dashboard's own origin (DESIGN §12); it is refused before anything is read.
 */
export async function authenticateRequest(
  request: FastifyRequest,
  options: {
    readonly sessions: DashboardSessions;
    readonly publicApiUrl: string | undefined;
    readonly now: () => Date;
    readonly bearer: (header: string | undefined) => Promise<AccountRecord>;
  },
): Promise<AccountRecord> {
  const { authorization, cookie } = request.headers;
  if (authorization !== undefined) return options.bearer(authorization);
  const value = sessionCookieValue(cookie);
  if (value === undefined) return options.bearer(undefined);
  requireSameOrigin(request, options.publicApiUrl);
  return options.sessions.authenticate(value, options.now());
}

/** Throws `csrf_rejected` unless the request's method is safe or its Origin is the dashboard's. */
export function requireSameOrigin(request: FastifyRequest, publicApiUrl: string | undefined): void {
  const expected = dashboardOrigin(request.headers.host, publicApiUrl);
  if (!csrfAllows(request.method, request.headers.origin, expected)) {
    throw new TokenProxyError(
      'csrf_rejected',
      `Refused: a change made with the dashboard's session cookie must come from the dashboard's own origin${
        expected === undefined ? '' : ` (${expected})`
      }. Scripts should send "Authorization: Bearer svc_sk_…" instead.`,
    );
  }
}
