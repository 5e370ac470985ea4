import { TokenProxyError } from '../errors/tokenproxy-error.js';

/**
 * A body sent to an endpoint that takes none. Fastify parses it and the route never looks at it, so
 * `POST /v1/tokens/revoke_all {"token_ids": […]}` revoked every token, not the ones named: a caller
 * who thinks a field narrows the action must hear that it does not. An empty object is no field at
 * all, and is let through (tools that always send `{}`).
 */
export function unexpectedBody(method: string, route: string, body: unknown): TokenProxyError | undefined {
  if (body === undefined) return undefined;
  const endpoint = `${method} ${route}`;
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    const first = Object.keys(body)[0];
    if (first === undefined) return undefined;
    return new TokenProxyError(
      'unknown_parameter',
      `Unknown field "${first}": ${endpoint} takes no request body. Send none; nothing in a body changes what it does.`,
      { param: first },
    );
  }
  return new TokenProxyError(
    'unknown_parameter',
    `${endpoint} takes no request body. Send none; nothing in a body changes what it does.`,
  );
}

/**
 * A query parameter sent to an endpoint that takes none. Without a query schema Fastify lets it
 * through unread, so `GET /v1/providers?limit=2` answered every provider as if the limit applied;
 * every list with parameters already refuses the ones it does not know.
 */
export function unexpectedQuery(method: string, route: string, query: unknown): TokenProxyError | undefined {
  if (query === null || typeof query !== 'object') return undefined;
  const first = Object.keys(query)[0];
  if (first === undefined) return undefined;
  return new TokenProxyError(
    'unknown_parameter',
    `Unknown query parameter "${first}": ${method} ${route} takes no query parameters. Remove it.`,
    { param: first },
  );
}
