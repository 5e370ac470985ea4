import type { TokenProxy } from './client.js';
import type { PagePromise } from './pagination.js';
import type { ListParams, RequestOptions } from './types.js';

/** The account's API keys and its audit log: who may act on the account, and what they did. */

export type ApiKeyScope = 'full' | 'read';

export interface ApiKey {
  /** `ak_…` */
  readonly id: string;
  readonly name: string;
  /** `read` keys may only GET: every write answers 403 `insufficient_scope`. */
  readonly scope: ApiKeyScope;
  /** The first characters of the key, to tell keys apart. */
  readonly start: string;
  readonly createdAt: string;
}

export interface CreatedApiKey extends ApiKey {
  /** `svc_sk_…`: returned only by `apiKeys.create`; only its digest is stored. */
  readonly apiKey: string;
}

export interface ApiKeyCreateParams {
  readonly name: string;
  /** Default `full`. */
  readonly scope?: ApiKeyScope | undefined;
}

export interface AuditEntry {
  /** `aud_…` */
  readonly id: string;
  /** `token.created`, `key.rotated`, `account.plan_changed`, … */
  readonly action: string;
  readonly objectId: string | null;
  readonly actor: {
    readonly type: 'api_key' | 'session' | 'cli';
    /** The API key's id for `api_key`; null otherwise. */
    readonly id: string | null;
    /** The API key's name, `dashboard session` or `cli`. */
    readonly name: string;
  };
  /** The client's address; null for the CLI. */
  readonly ip: string | null;
  readonly createdAt: string;
}

export interface AuditListParams extends ListParams {
  readonly action?: string | undefined;
  readonly objectId?: string | undefined;
}

export class ApiKeys {
  constructor(private readonly client: TokenProxy) {}
  /** POST /v1/api_keys. The result's `apiKey` is shown only here. */
  create(params: ApiKeyCreateParams, options?: RequestOptions): Promise<CreatedApiKey> {
    return this.client.request('apiKeys.create', { body: params, options });
  }
  /** GET /v1/api_keys: the account's live keys, newest first. */
  list(params?: ListParams, options?: RequestOptions): PagePromise<ApiKey> {
    return this.client.list('apiKeys.list', params, options);
  }
  /** DELETE /v1/api_keys/:id: the key stops working at once. */
  delete(id: string, options?: RequestOptions): Promise<ApiKey> {
    return this.client.request('apiKeys.delete', { id, options });
  }
}

export class Audit {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/audit: every change to the account, newest first. */
  list(params?: AuditListParams, options?: RequestOptions): PagePromise<AuditEntry> {
    return this.client.list('audit.list', params, options);
  }
}
