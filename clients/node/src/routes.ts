/**
 * Every library method and the one REST endpoint it calls (DESIGN §7: 1:1). Methods look their
 * endpoint up here, and `test/clients/coverage.test.ts` checks this table against the server's
 * OpenAPI document, so a route without a method (or the reverse) fails the build.
 */
export const ROUTES = {
  'tokens.create': { method: 'POST', path: '/tokens' },
  'tokens.list': { method: 'GET', path: '/tokens' },
  'tokens.get': { method: 'GET', path: '/tokens/:id' },
  'tokens.revoke': { method: 'DELETE', path: '/tokens/:id' },
  'tokens.update': { method: 'PATCH', path: '/tokens/:id' },
  'tokens.revokeAll': { method: 'POST', path: '/tokens/revoke_all' },
  'keys.create': { method: 'POST', path: '/keys' },
  'keys.list': { method: 'GET', path: '/keys' },
  'keys.get': { method: 'GET', path: '/keys/:id' },
  'keys.rotate': { method: 'POST', path: '/keys/:id/rotate' },
  'keys.delete': { method: 'DELETE', path: '/keys/:id' },
  'webhooks.create': { method: 'POST', path: '/webhooks' },
  'webhooks.list': { method: 'GET', path: '/webhooks' },
  'webhooks.get': { method: 'GET', path: '/webhooks/:id' },
  'webhooks.delete': { method: 'DELETE', path: '/webhooks/:id' },
  'webhooks.deliveries': { method: 'GET', path: '/webhooks/:id/deliveries' },
  'webhooks.update': { method: 'PATCH', path: '/webhooks/:id' },
  'webhooks.test': { method: 'POST', path: '/webhooks/:id/test' },
  'events.list': { method: 'GET', path: '/events' },
  'events.redeliver': { method: 'POST', path: '/events/:id/redeliver' },
  'anomalies.list': { method: 'GET', path: '/anomalies' },
  'logs.list': { method: 'GET', path: '/logs' },
  'logs.get': { method: 'GET', path: '/logs/:id' },
  'account.get': { method: 'GET', path: '/account' },
  'account.update': { method: 'PATCH', path: '/account' },
  'providers.list': { method: 'GET', path: '/providers' },
  'usage.get': { method: 'GET', path: '/usage' },
  'apiKeys.create': { method: 'POST', path: '/api_keys' },
  'apiKeys.list': { method: 'GET', path: '/api_keys' },
  'apiKeys.delete': { method: 'DELETE', path: '/api_keys/:id' },
  'audit.list': { method: 'GET', path: '/audit' },
} as const satisfies Record<string, { readonly method: HttpMethod; readonly path: string }>;

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';
export type RouteName = keyof typeof ROUTES;

/**
 * The one naming exception to the mechanical snake_case ↔ camelCase conversion: the field that
 * identifies an object itself is `id` (`token.id`, as the specification's Node example has it).
 * References to other objects keep their names (`realKeyRef`, a log record's `tokenId`).
 */
export const ID_FIELDS: Readonly<Record<string, string>> = {
  tokens: 'token_id',
  keys: 'key_id',
  webhooks: 'webhook_id',
  anomalies: 'anomaly_id',
  deliveries: 'delivery_id',
  account: 'account_id',
};
