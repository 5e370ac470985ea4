import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ApiKeys, Audit } from './access.js';
import { fromWire, isPlainObject, toSnake } from './case.js';
import { CertificateError, ConnectionError, TokenProxyError, errorForStatus } from './errors.js';
import { Page, PagePromise } from './pagination.js';
import { ID_FIELDS, ROUTES, type RouteName } from './routes.js';
import {
  fetchTransport,
  nodeTransport,
  type FetchLike,
  type Transport,
  type TransportResponse,
} from './transport.js';
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

export const VERSION = '0.1.0';

export interface ClientOptions {
  /** Account API key `svc_sk_…`. Default: the TOKENPROXY_API_KEY environment variable. */
  readonly apiKey?: string | undefined;
  /** Management API base, `https://host:8443/v1` (`/v1` is added when missing). Default `https://localhost:8443/v1`. */
  readonly baseUrl?: string | undefined;
  /**
   * Extra trusted CA certificate(s), PEM: the server's self-signed `<data-dir>/tls/cert.pem`. Public
   * CAs stay trusted and verification stays on. A string holding `-----BEGIN` is the PEM itself,
   * any other string a file path.
   */
  readonly ca?: string | Buffer | undefined;
  /** Per attempt, in milliseconds (default 60,000). */
  readonly timeoutMs?: number | undefined;
  /** Retries after a network error, 429 or 5xx (default 2). */
  readonly maxRetries?: number | undefined;
  /** Use this fetch instead of the built-in `node:https` transport (then `ca` is up to it). */
  readonly fetch?: FetchLike | undefined;
}

interface Call {
  readonly id?: string | undefined;
  readonly query?: object | undefined;
  readonly body?: object | undefined;
  readonly options?: RequestOptions | undefined;
}

const DEFAULT_BASE_URL = 'https://localhost:8443/v1';
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 2;
const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 8_000;
/** A Retry-After longer than this is not waited for: the error goes to the caller instead. */
const MAX_RETRY_AFTER_MS = 60_000;

/**
 * Client of the tokenproxy management API. Each resource method calls exactly one endpoint (see
 * ROUTES). The client logs nothing, and the API key is kept out of every error it throws.
 */
export class TokenProxy {
  readonly tokens: Tokens;
  readonly keys: Keys;
  readonly webhooks: Webhooks;
  readonly events: Events;
  readonly anomalies: Anomalies;
  readonly logs: Logs;
  readonly account: AccountResource;
  readonly providers: Providers;
  readonly usage: UsageResource;
  readonly apiKeys: ApiKeys;
  readonly audit: Audit;

  readonly baseUrl: string;
  // A #private field: console.log(client) and JSON.stringify(client) do not show it.
  readonly #apiKey: string;
  private readonly transport: Transport;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? process.env.TOKENPROXY_API_KEY;
    if (apiKey === undefined || apiKey === '') {
      throw new TypeError('TokenProxy needs an API key: pass { apiKey } or set TOKENPROXY_API_KEY.');
    }
    this.#apiKey = apiKey;
    this.baseUrl = normaliseBaseUrl(options.baseUrl ?? process.env.TOKENPROXY_BASE_URL ?? DEFAULT_BASE_URL);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.transport =
      options.fetch !== undefined ? fetchTransport(options.fetch) : nodeTransport({ ca: readCa(options.ca) });

    this.tokens = new Tokens(this);
    this.keys = new Keys(this);
    this.webhooks = new Webhooks(this);
    this.events = new Events(this);
    this.anomalies = new Anomalies(this);
    this.logs = new Logs(this);
    this.account = new AccountResource(this);
    this.providers = new Providers(this);
    this.usage = new UsageResource(this);
    this.apiKeys = new ApiKeys(this);
    this.audit = new Audit(this);
  }

  /** @internal One endpoint of ROUTES, with retries; resolves to the camelCased body. */
  async request<T>(route: RouteName, call: Call = {}): Promise<T> {
    const { method, path } = ROUTES[route];
    const resource = route.split('.')[0] ?? '';
    const url = new URL(this.baseUrl + expandPath(path, call.id));
    if (call.query !== undefined) {
      for (const [k, v] of Object.entries(toSnake(call.query) as Record<string, unknown>)) {
        url.searchParams.set(k, String(v));
      }
    }
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#apiKey}`,
      accept: 'application/json',
      'user-agent': `tokenproxy-node/${VERSION} node/${process.version}`,
    };
    let body: string | undefined;
    if (call.body !== undefined) {
      body = JSON.stringify(toSnake(call.body));
      headers['content-type'] = 'application/json';
    }
    // One key per call, the same on every retry: the server then answers a retried create with
    // the first attempt's result instead of creating a second token.
    if (method === 'POST') headers['idempotency-key'] = call.options?.idempotencyKey ?? randomUUID();

    const maxRetries = call.options?.maxRetries ?? this.maxRetries;
    const timeoutMs = call.options?.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      let response: TransportResponse;
      try {
        response = await this.transport({ method, url, headers, body, timeoutMs });
      } catch (err) {
        // Every method is safe to repeat (GET, DELETE, PATCH of absolute values, POST with its key).
        // A refused certificate is refused again: no retry, the message says how to trust it.
        if (err instanceof ConnectionError && !(err instanceof CertificateError) && attempt < maxRetries) {
          await sleep(backoff(attempt));
          continue;
        }
        throw err;
      }
      if (response.status >= 200 && response.status < 300) {
        const parsed = parseJson(response);
        return fromWire(parsed, ID_FIELDS[resource]) as T;
      }
      const error = toError(response);
      const wait = retryDelay(response, error, attempt);
      if (wait !== undefined && attempt < maxRetries) {
        await sleep(wait);
        continue;
      }
      throw error;
    }
  }

  /** @internal */
  list<T>(
    route: RouteName,
    params: ListParams & object = {},
    options?: RequestOptions,
    id?: string,
    itemResource?: string,
  ): PagePromise<T> {
    const load = async (cursor: string | undefined): Promise<Page<T>> => {
      const query = cursor === undefined ? params : { ...params, cursor };
      const raw = await this.request<{ data: unknown[]; hasMore: boolean; nextCursor: string | null }>(
        route,
        {
          id,
          query,
          options,
        },
      );
      const idField = ID_FIELDS[itemResource ?? route.split('.')[0] ?? ''];
      // The envelope went through fromWire without an id field; items get their own `id` here.
      const data = (raw.data as Record<string, unknown>[]).map((item) => renameId(item, idField) as T);
      return new Page<T>(data, raw.hasMore, raw.nextCursor, (next) => load(next));
    };
    return new PagePromise<T>(() => load(undefined));
  }
}

class Tokens {
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

class Keys {
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

class Webhooks {
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

class Events {
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

class Anomalies {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/anomalies */
  list(params?: AnomalyListParams, options?: RequestOptions): PagePromise<Anomaly> {
    return this.client.list('anomalies.list', params, options);
  }
}

class Logs {
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

class AccountResource {
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

class Providers {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/providers */
  list(params?: ListParams, options?: RequestOptions): PagePromise<Provider> {
    return this.client.list('providers.list', params, options);
  }
}

class UsageResource {
  constructor(private readonly client: TokenProxy) {}
  /** GET /v1/usage: forwarded and refused requests per bucket over the window. */
  get(params?: UsageParams, options?: RequestOptions): Promise<Usage> {
    return this.client.request('usage.get', { query: params ?? {}, options });
  }
}

export type { Tokens, Keys, Webhooks, Events, Anomalies, Logs, AccountResource, Providers, UsageResource };

function normaliseBaseUrl(value: string): string {
  const url = new URL(value);
  const path = url.pathname.replace(/\/+$/, '');
  url.pathname = path.endsWith('/v1') ? path : `${path}/v1`;
  return url.toString().replace(/\/+$/, '');
}

function readCa(ca: string | Buffer | undefined): string | Buffer | undefined {
  if (ca === undefined || Buffer.isBuffer(ca) || ca.includes('-----BEGIN')) return ca;
  return readFileSync(ca);
}

function expandPath(path: string, id: string | undefined): string {
  if (!path.includes(':id')) return path;
  if (id === undefined || id === '') throw new TypeError('An id is required.');
  return path.replace(':id', encodeURIComponent(id));
}

function renameId(item: Record<string, unknown>, idField: string | undefined): Record<string, unknown> {
  const camel = idField?.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
  if (camel === undefined || !(camel in item)) return item;
  const { [camel]: id, ...rest } = item;
  return { id, ...rest };
}

function parseJson(response: TransportResponse): unknown {
  try {
    return JSON.parse(response.body) as unknown;
  } catch {
    throw new TokenProxyError(`The API answered ${response.status} with a body that is not JSON.`, {
      status: response.status,
      code: 'invalid_response',
      requestId: response.headers['x-request-id'],
      headers: response.headers,
    });
  }
}

function toError(response: TransportResponse): TokenProxyError {
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    body = undefined;
  }
  const error = isPlainObject(body) && isPlainObject(body.error) ? body.error : {};
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const message = str(error.message) ?? `The API answered with status ${response.status}.`;
  return errorForStatus(response.status, message, {
    code: str(error.code) ?? `http_${response.status}`,
    type: str(error.type),
    param: str(error.param),
    requestId: str(error.request_id) ?? response.headers['x-request-id'],
    headers: response.headers,
  });
}

/** How long to wait before retrying this error response; undefined when it must not be retried. */
function retryDelay(
  response: TransportResponse,
  error: TokenProxyError,
  attempt: number,
): number | undefined {
  const retryable =
    response.status === 429 || response.status >= 500 || error.code === 'idempotency_in_progress';
  if (!retryable) return undefined;
  const header = response.headers['retry-after'];
  if (header === undefined) return backoff(attempt);
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - Date.now();
  if (!Number.isFinite(ms)) return backoff(attempt);
  return ms > MAX_RETRY_AFTER_MS ? undefined : Math.max(0, ms);
}

/** Exponential with jitter, so many clients failing together do not retry in lockstep. */
function backoff(attempt: number): number {
  const base = Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS * 2 ** attempt);
  return base * (0.5 + Math.random() * 0.5);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
