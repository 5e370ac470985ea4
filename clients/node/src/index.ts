export { TokenProxy, VERSION, type ClientOptions } from './client.js';
export type {
  Tokens,
  Keys,
  Webhooks,
  Events,
  Anomalies,
  Logs,
  AccountResource,
  Providers,
} from './resources.js';
export {
  TokenProxyError,
  InvalidRequestError,
  AuthenticationError,
  PermissionError,
  PlanLimitError,
  NotFoundError,
  ConflictError,
  RateLimitError,
  InternalServerError,
  ConnectionError,
  TimeoutError,
  CertificateError,
  WebhookVerificationError,
} from './errors.js';
export { Page, PagePromise } from './pagination.js';
export { ROUTES, ID_FIELDS, type RouteName, type HttpMethod } from './routes.js';
export { verifyWebhook, type VerifyOptions, type WebhookHeaders } from './webhooks.js';
export type { FetchLike } from './transport.js';
export type * from './types.js';
export type {
  ApiKeys,
  Audit,
  ApiKey,
  ApiKeyScope,
  CreatedApiKey,
  ApiKeyCreateParams,
  AuditEntry,
  AuditListParams,
} from './access.js';
