import { renameId } from './case.js';
import type { TokenProxy } from './client.js';
import type { PagePromise } from './pagination.js';
import { ID_FIELDS } from './routes.js';
import type {
  Account,
  AccountUpdateParams,
  Anomaly,
  AnomalyListParams,
  CreatedToken,
  CreatedWebhook,
  Delivery,
  Event,
  EventListParams,
  Key,
  KeyCreateParams,
  KeyRotateParams,
  ListParams,
  LogListParams,
  Provider,
  RequestLog,
  RequestOptions,
  Token,
  TokenCreateParams,
  TokenListParams,
  TokenUpdateParams,
  Usage,
  UsageParams,
  Webhook,
  WebhookCreateParams,
  WebhookUpdateParams,
  WebhookTest,
  RedeliverParams,
  Redelivery,
} from './types.js';

/**
 * The method groups of TokenProxy (`client.tokens`, `client.keys`, …). ApiKeys and Audit live in
 * access.ts beside their types, which types.ts does not hold.
 */

export class Tokens {
  constructor(private readonly client: TokenProxy) {}
  /** POST /v1/tokens. The result's `sanitizedKey` is shown only here. */
  create(params: TokenCreateParams, options?: RequestOptions): Promise<CreatedToken> {
    return this.client.request('tokens.create', { body: params, options });
  }
  /** GET /v1/tokens, newest first. */
  list(params?: TokenListParams, options?: RequestOptions): PagePromise<Token> {
    return this.client.list('tokens.list', params, options);
  }
  /** GET /v1/tokens/:id */
  get(id: string, options?: RequestOptions): Promise<Token> {
    return this.client.request('tokens.get', { id, options });
  }
  /** DELETE /v1/tokens/:id. Idempotent; the token comes back with status `revoked`. */
  revoke(id: string, options?: RequestOptions): Promise<Token> {
    return this.client.request('tokens.revoke', { id, options });
  }
  /** PATCH /v1/tokens/:id. Effective on the token's next request. */
  update(id: string, params: TokenUpdateParams, options?: RequestOptions): Promise<Token> {
    return this.client.request('tokens.update', { id, body: params, options });
  }
  /**
   * POST /v1/tokens/revoke_all: the kill switch. Revokes every active token of the account (one
   * `token.revoked` event each) and returns them.
   */
  async revokeAll(options?: RequestOptions): Promise<Token[]> {
    const raw = await this.client.request<{ data: Record<string, unknown>[] }>('tokens.revokeAll', {
      options,
    });
    return (raw.data ?? []).map((item) => renameId(item, ID_FIELDS.tokens) as unknown as Token);
  }
}

export class Keys {
  constructor(private readonly client: TokenProxy) {}
  /** POST /v1/keys */
  create(params: KeyCreateParams, options?: RequestOptions): Promise<Key> {
    return this.client.request('keys.create', { body: params, options });
  }
  /** GET /v1/keys */
  list(params?: ListParams, options?: RequestOptions): PagePromise<Key> {
    return this.client.list('keys.list', params, options);
  }
  /** GET /v1/keys/:id */
  get(id: string, options?: RequestOptions): Promise<Key> {
    return this.client.request('keys.get', { id, options });
  }
  /** POST /v1/keys/:id/rotate. Tokens using the key send the new one from their next request. */
  rotate(id: string, params: KeyRotateParams, options?: RequestOptions): Promise<Key> {
    return this.client.request('keys.rotate', { id, body: params, options });
  }
  /** DELETE /v1/keys/:id. Destroys the stored key and revokes its tokens. */
  delete(id: string, options?: RequestOptions): Promise<Key> {
    return this.client.request('keys.delete', { id, options });
  }
}

export class Webhooks {
  constructor(private readonly client: TokenProxy) {}
  /** POST /v1/webhooks. The result's `secret` (for verifyWebhook) is shown only here. */
  create(params: WebhookCreateParams, options?: RequestOptions): Promise<CreatedWebhook> {
    return this.client.request('webhooks.create', { body: params, options });
  }
  /** GET /v1/webhooks */
  list(params?: ListParams, options?: RequestOptions): PagePromise<Webhook> {
    return this.client.list('webhooks.list', params, options);
  }
  /** GET /v1/webhooks/:id */
  get(id: string, options?: RequestOptions): Promise<Webhook> {
    return this.client.request('webhooks.get', { id, options });
  }
  /** DELETE /v1/webhooks/:id */
  delete(id: string, options?: RequestOptions): Promise<Webhook> {
    return this.client.request('webhooks.delete', { id, options });
  }
  /** GET /v1/webhooks/:id/deliveries: recent deliveries to the endpoint and their outcome, newest first. */
  deliveries(id: string, params?: ListParams, options?: RequestOptions): PagePromise<Delivery> {
    return this.client.list('webhooks.deliveries', params, options, id, 'deliveries');
  }
  /** PATCH /v1/webhooks/:id: `{ enabled: true }` re-enables a disabled endpoint, `false` stops it. */
  update(id: string, params: WebhookUpdateParams, options?: RequestOptions): Promise<Webhook> {
    return this.client.request('webhooks.update', { id, body: params, options });
  }
  /** POST /v1/webhooks/:id/test: queues a signed `ping` event to the endpoint. */
  test(id: string, options?: RequestOptions): Promise<WebhookTest> {
    return this.client.request('webhooks.test', { id, options });
  }
}

export class Events {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/events */
  list(params?: EventListParams, options?: RequestOptions): PagePromise<Event> {
    return this.client.list('events.list', params, options);
  }
  /**
   * POST /v1/events/:id/redeliver: sends the event again, to `webhookId` only or to every enabled
   * endpoint subscribed to its type.
   */
  redeliver(id: string, params?: RedeliverParams, options?: RequestOptions): Promise<Redelivery> {
    return this.client.request('events.redeliver', { id, query: params ?? {}, options });
  }
}

export class Anomalies {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/anomalies */
  list(params?: AnomalyListParams, options?: RequestOptions): PagePromise<Anomaly> {
    return this.client.list('anomalies.list', params, options);
  }
}

export class Logs {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/logs */
  list(params?: LogListParams, options?: RequestOptions): PagePromise<RequestLog> {
    return this.client.list('logs.list', params, options);
  }
  /** GET /v1/logs/:request_id: the record of the request id a caller got in `x-tokenproxy-request-id`. */
  get(requestId: string, options?: RequestOptions): Promise<RequestLog> {
    return this.client.request('logs.get', { id: requestId, options });
  }
}

export class AccountResource {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/account */
  get(options?: RequestOptions): Promise<Account> {
    return this.client.request('account.get', { options });
  }
  /** PATCH /v1/account */
  update(params: AccountUpdateParams, options?: RequestOptions): Promise<Account> {
    return this.client.request('account.update', { body: params, options });
  }
}

export class Providers {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/providers: every provider, on one page (the endpoint takes no parameters). */
  list(options?: RequestOptions): PagePromise<Provider> {
    return this.client.list('providers.list', {}, options);
  }
}

export class UsageResource {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/usage: forwarded and refused requests per bucket over the window. */
  get(params?: UsageParams, options?: RequestOptions): Promise<Usage> {
    return this.client.request('usage.get', { query: params ?? {}, options });
  }
}
