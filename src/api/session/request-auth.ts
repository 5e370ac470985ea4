import type { FastifyRequest } from 'fastify';
import { SESSION_ACTOR_NAME } from '../../audit/actions.js';
import { TokenProxyError } from '../../errors/tokenproxy-error.js';
import type { ApiKeyScope, Actor } from '../../store/access-records.js';
import type { AccountRecord } from '../../store/records.js';
import { sessionCookieValue } from './cookie.js';
import { csrfAllows, dashboardOrigin } from './csrf.js';
import type { DashboardSessions } from './sessions.js';

/** Who a /v1 request is, for the audit log, and what it may do. */
export interface Caller {
  readonly account: AccountRecord;
  readonly actor: Actor;
  readonly scope: ApiKeyScope;
}

/**
 * Who a /v1 request is: an `Authorization: Bearer` API key when the request carries one (scripts,
 * client libraries), else the dashboard's session cookie. A cookie-authenticated POST/PATCH/DELETE
 * must come from the dashboard's own origin (DESIGN §12); it is refused before anything is read.
 * Sessions have full scope: a read-only key cannot sign in (see DashboardSessions.signIn).
 */
export async function authenticateRequest(
  request: FastifyRequest,
  options: {
    readonly sessions: DashboardSessions;
    readonly publicApiUrl: string | undefined;
    readonly now: () => Date;
    readonly bearer: (header: string | undefined) => Promise<Caller>;
  },
): Promise<Caller> {
  const { authorization, cookie } = request.headers;
  if (authorization !== undefined) return options.bearer(authorization);
  const value = sessionCookieValue(cookie);
  if (value === undefined) return options.bearer(undefined);
  requireSameOrigin(request, options.publicApiUrl);
  const account = await options.sessions.authenticate(value, options.now());
  return { account, actor: { type: 'session', id: null, name: SESSION_ACTOR_NAME }, scope: 'full' };
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

const READ_METHODS = new Set(['GET', 'HEAD']);

/** A read-only API key may read everything and change nothing: every other method is a write. */
export function requireScope(request: FastifyRequest, caller: Caller): void {
  if (caller.scope === 'full' || READ_METHODS.has(request.method)) return;
  throw new TokenProxyError(
    'insufficient_scope',
    `The API key "${caller.actor.name}" is read-only and cannot ${request.method} ${
      request.routeOptions.url ?? request.url.split('?')[0]
    }. Use a key with scope "full" (create one with POST /v1/api_keys using a full key).`,
  );
}
