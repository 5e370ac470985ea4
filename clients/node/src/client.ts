import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ApiKeys, Audit } from './access.js';
import { fromWire, renameId, toSnake } from './case.js';
import { CertificateError, ConnectionError } from './errors.js';
import { Page, PagePromise } from './pagination.js';
import {
  AccountResource,
  Anomalies,
  Events,
  Keys,
  Logs,
  Providers,
  Tokens,
  UsageResource,
  Webhooks,
} from './resources.js';
import { parseJson, toError } from './responses.js';
import { backoff, retryDelay, sleep } from './retry.js';
import { ID_FIELDS, ROUTES, type RouteName } from './routes.js';
import {
  fetchTransport,
  nodeTransport,
  type FetchLike,
  type Transport,
  type TransportResponse,
} from './transport.js';
import type { ListParams, RequestOptions } from './types.js';

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
  // A #private field: console.log(client) and util.inspect do not show it.
  readonly #apiKey: string;
  private readonly transport: Transport;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? process.env.TOKENPROXY_API_KEY;
    if (apiKey === undefined || apiKey === '') {
      throw new TypeError('TokenProxy needs an API key: pass { apiKey } or set TOKENPROXY_API_KEY.');
    }
    checkApiKey(apiKey);
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
    // the first attempt's result instead of creating a second token, and a retried delete with the
    // first attempt's answer instead of 404.
    if (method === 'POST' || method === 'DELETE')
      headers['idempotency-key'] = call.options?.idempotencyKey ?? randomUUID();

    const maxRetries = call.options?.maxRetries ?? this.maxRetries;
    const timeoutMs = call.options?.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      let response: TransportResponse;
      try {
        response = await this.transport({ method, url, headers, body, timeoutMs });
      } catch (err) {
        // Every method is safe to repeat (GET, PATCH of absolute values, POST and DELETE with their key).
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

/**
 * A key with a space, a line break or a non-ASCII character cannot go into a header: node:http would
 * throw a bare ERR_INVALID_CHAR on the first call. Say so at once, without the key.
 */
function checkApiKey(key: string): void {
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code < 0x21 || code > 0x7e) {
      throw new TypeError(
        `The API key has a character that cannot be sent in an HTTP header at position ${i + 1} (${describeChar(code)}). ` +
          'Copy the key again exactly as printed: svc_sk_ followed by 43 letters and digits.',
      );
    }
  }
}

function describeChar(code: number): string {
  if (code === 0x0a || code === 0x0d) return 'a line break';
  if (code === 0x20 || code === 0x09) return 'a space or tab';
  const hex = code.toString(16).toUpperCase().padStart(4, '0');
  return code > 0x7e ? `the non-ASCII character U+${hex}` : `the control character U+${hex}`;
}
