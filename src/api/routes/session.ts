import { Type } from 'typebox';
import { audited } from '../audit.js';
import type { ApiDeps, ApiServer } from '../context.js';
import { clearSessionCookie, sessionCookieValue, sessionSetCookie } from '../session/cookie.js';
import { requireSameOrigin } from '../session/request-auth.js';
import { SESSION_ABSOLUTE_MS, type DashboardSessions } from '../session/sessions.js';

/** Routes the API-key check skips: they are how a browser gets (and gives up) a session. */
export const SESSION_ROUTE = '/v1/session';

const SignInBody = Type.Object(
  { api_key: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);

/**
 * Dashboard sign-in and sign-out (DESIGN §12). Browser-only, so hidden from the OpenAPI document and
 * the client libraries, which use the API key directly. Both need the dashboard's own `Origin`:
 * another site can neither sign a visitor in to its account nor sign them out.
 */
export function sessionRoutes(
  app: ApiServer,
  options: { sessions: DashboardSessions; publicApiUrl: string | undefined; now: () => Date },
  deps: ApiDeps,
): void {
  const { sessions, publicApiUrl, now } = options;

  app.post('/session', { schema: { hide: true, body: SignInBody } }, async (request, reply) => {
    requireSameOrigin(request, publicApiUrl);
    const at = now();
    const verified = await sessions.verify(request.body.api_key, request.clientIp, at);
    request.account = verified.account;
    request.actor = { type: 'api_key', id: verified.key.id, name: verified.key.name };
    const signedIn = await audited(deps, request, async (tx, audit) => {
      const opened = await sessions.open(verified, at, tx);
      await audit('session.created', null);
      return opened;
    });
    void reply.header('set-cookie', sessionSetCookie(signedIn.cookieValue, SESSION_ABSOLUTE_MS / 1000));
    void reply.header('cache-control', 'no-store');
    return reply.code(201).send({
      object: 'session',
      account_id: signedIn.account.id,
      account_name: signedIn.account.name,
      expires_at: signedIn.expiresAt.toISOString(),
    });
  });

  app.delete('/session', { schema: { hide: true } }, async (request, reply) => {
    requireSameOrigin(request, publicApiUrl);
    const value = sessionCookieValue(request.headers.cookie);
    if (value !== undefined) await sessions.signOut(value);
    void reply.header('set-cookie', clearSessionCookie());
    return reply.code(204).send();
  });
}
