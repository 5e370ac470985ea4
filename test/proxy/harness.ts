import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent, request, type Dispatcher } from 'undici';
import { createAccount } from '../../src/accounts/create-account.js';
import { PLANS, type PlanLimits } from '../../src/accounts/plans.js';
import { createAnomalyWriter, type AnomalyWriter } from '../../src/anomalies/anomaly-writer.js';
import type { UnauthorizedAttempt } from '../../src/anomalies/record.js';
import { buildApiApp } from '../../src/api/app.js';
import type { ApiServer } from '../../src/api/context.js';
import type { NewEvent } from '../../src/events/publisher.js';
import { createLimits, type Limits } from '../../src/limits/index.js';
import { DEFAULT_ANOMALY_SETTINGS } from '../../src/limits/anomaly-model.js';
import { createLogger } from '../../src/observability/logger.js';
import type { ProxyConfig, UsageDeps } from '../../src/proxy/deps.js';
import { MemoryCounters, type Counters } from '../../src/limits/counters.js';
import { createUsage } from '../../src/usage/create-usage.js';
import type { PriceData } from '../../src/usage/prices.js';
import { createProxyServer, type ProxyServer } from '../../src/proxy/server.js';
import { ProviderRegistry, type Provider } from '../../src/providers/providers.js';
import type { RequestLogRecord, RequestLogSink } from '../../src/requestlog/record.js';
import type { PlanName } from '../../src/store/records.js';
import { generateSelfSigned } from '../../src/tls/self-signed.js';
import { createLocalVault } from '../../src/vault/local-kek.js';
import type { Vault } from '../../src/vault/vault.js';
import type { DatabaseFixture, OpenedDatabase } from '../support/databases.js';
import { startMockProvider, type MockProvider } from '../support/mock-provider.js';

/**
 * A real proxy on 127.0.0.1 (self-signed TLS 1.3), a real store, a real vault, the management API
 * (in-process, `inject`) wired to invalidate the proxy's token cache, and the HTTPS mock provider
 * standing in for `openai` and `anthropic`. Everything the proxy hands out is collected.
 */
export interface ProxyHarness {
  readonly mock: MockProvider;
  readonly db: OpenedDatabase;
  readonly api: ApiServer;
  readonly proxy: ProxyServer;
  /** `https://localhost:<port>` */
  readonly url: string;
  readonly port: number;
  /** PEM of the proxy's certificate, for clients. */
  readonly ca: string;
  /** Trusts the proxy's certificate; speaks `protocol` to it. */
  readonly dispatcher: Agent;
  /** `httpVersion` of every request the proxy listener received, in order (`1.1`, `2.0`). */
  readonly httpVersions: string[];
  readonly records: RequestLogRecord[];
  readonly unauthorized: UnauthorizedAttempt[];
  /** Events published by the limits (only with `limits`). */
  readonly events: NewEvent[];
  /** Prices and budgets wired into the proxy, when `usage` was given. */
  readonly usage: UsageDeps | undefined;
  /** The limits wired into the proxy, when `limits` was given. */
  readonly limits: Limits | undefined;
  /** The real anomaly log writer on the store, when `limits` was given. */
  readonly anomalyLog: AnomalyWriter | undefined;
  /** Every pino line the proxy and the API wrote. */
  readonly logLines: string[];
  /** Every Buffer the vault's decrypt returned, in order. */
  readonly decrypted: Buffer[];
  /** Holds every decrypted key back from the proxy (recorded already) until the returned release. */
  holdDecrypts(): () => void;
  readonly apiKey: string;
  readonly accountId: string;
  apiCall(method: string, url: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** Creates a token through the API; returns the sanitized token and its id. */
  createToken(options: TokenOptions): Promise<{ token: string; tokenId: string; keyId: string }>;
  /** Sends one request to the proxy and reads the whole answer. */
  send(path: string, options?: SendOptions): Promise<ProxyResponse>;
  /** Waits until `count` records were written. */
  waitForRecords(count: number): Promise<RequestLogRecord[]>;
  /** Waits for the record of the request with this id (the `x-tokenproxy-request-id` header). */
  recordOf(requestId: unknown): Promise<RequestLogRecord>;
  /** Waits for the first record matching `predicate`. */
  waitForRecord(predicate: (r: RequestLogRecord) => boolean): Promise<RequestLogRecord>;
  close(): Promise<void>;
}

export interface TokenOptions {
  readonly provider?: string;
  readonly realKey?: string;
  readonly keyId?: string;
  readonly allowedHosts?: string[];
  readonly allowedIps?: string[];
  readonly expiresAt?: string;
  readonly rateLimit?: { readonly requests: number; readonly window: string };
  readonly budget?: unknown;
}

export interface SendOptions {
  readonly method?: Dispatcher.HttpMethod;
  readonly headers?: Record<string, string | string[]>;
  readonly body?: string | Buffer;
}

export interface ProxyResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** The parsed JSON body, or `{}` when the body is not JSON. */
  readonly json: ProxyJson;
}

export interface ProxyJson {
  readonly error?: { type: string; code: string; message: string; request_id: string };
  readonly [field: string]: unknown;
}

export const APP_ORIGIN = 'https://app.example.com';

export interface HarnessOptions {
  readonly config?: Partial<ProxyConfig>;
  /** Extra providers (replacing built-ins by id); openai/anthropic point at the mock unless given. */
  readonly providers?: (mockUrl: string) => Provider[];
  readonly now?: () => number;
  /** More CA certificates (PEM) the proxy trusts upstream, besides the mock's. */
  readonly extraCaPem?: string;
  /** Turns on src/limits (IP backoff, rate limits, quotas, breach alerts, anomalies); off by default. */
  readonly limits?: HarnessLimits;
  /** Turns on prices and budgets (src/usage); events go to `events`. */
  readonly usage?: HarnessUsage;
  /** Plan of the harness's own account (default `unlimited`). */
  readonly accountPlan?: PlanName;
  /** What `send` and `dispatcher` speak to the proxy (default `http/1.1`; `h2` negotiates HTTP/2). */
  readonly protocol?: Protocol;
  /** Whether the proxy listener offers HTTP/2 at all (default true). */
  readonly http2?: boolean;
}

export interface HarnessUsage {
  readonly prices?: PriceData;
  readonly defaultReservation?: number;
  /** The limits' counters when `limits` is given, else these (default: fresh in-memory ones). */
  readonly counters?: Counters;
  readonly accountTtlMs?: number;
}
export type Protocol = 'http/1.1' | 'h2';
export const PROTOCOLS: readonly Protocol[] = ['http/1.1', 'h2'];

export interface HarnessLimits {
  readonly plans?: Partial<Record<PlanName, PlanLimits>>;
  readonly anomalySpikeFactor?: number;
  readonly anomalyMinRequests?: number;
  readonly anomalyDistinctIps?: number;
  readonly anomalyWarmupMs?: number;
}

export async function startProxyHarness(
  fixture: DatabaseFixture,
  options: HarnessOptions = {},
): Promise<ProxyHarness> {
  const mock = await startMockProvider({ gapMs: 60 });
  const db = await fixture.create();
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-proxy-'));
  const caFile = path.join(tmp, 'provider-ca.pem');
  await writeFile(caFile, `${mock.caCertPem}\n${options.extraCaPem ?? ''}`);

  const realVault = createLocalVault(randomBytes(32));
  const decrypted: Buffer[] = [];
  let held: Promise<void> | null = null;
  const vault: Vault = {
    kekId: realVault.kekId,
    encrypt: (plaintext, binding) => realVault.encrypt(plaintext, binding),
    mac: (purpose, data) => realVault.mac(purpose, data),
    healthy: () => realVault.healthy(),
    close: () => realVault.close(),
    async decrypt(envelope, binding) {
      const out = await realVault.decrypt(envelope, binding);
      decrypted.push(out);
      if (held !== null) await held;
      return out;
    },
  };

  const logLines: string[] = [];
  const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });
  const records: RequestLogRecord[] = [];
  const waiters = new Set<() => void>();
  const requestLog: RequestLogSink = {
    write(record) {
      records.push(record);
      for (const wake of [...waiters]) wake();
    },
    flush: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  const unauthorized: UnauthorizedAttempt[] = [];
  const events: NewEvent[] = [];
  const plans = { ...PLANS, ...options.limits?.plans } as Record<PlanName, PlanLimits>;
  let limits: Limits | undefined;
  let anomalyLog: AnomalyWriter | undefined;
  if (options.limits !== undefined) {
    const writer = createAnomalyWriter({ store: db.store, logger, flushIntervalMs: 20 });
    anomalyLog = writer;
    const l = options.limits;
    limits = createLimits({
      config: {
        plans,
        anomalySpikeFactor: l.anomalySpikeFactor ?? DEFAULT_ANOMALY_SETTINGS.spikeFactor,
        anomalyMinRequests: l.anomalyMinRequests ?? DEFAULT_ANOMALY_SETTINGS.minRequests,
        anomalyDistinctIps: l.anomalyDistinctIps ?? DEFAULT_ANOMALY_SETTINGS.distinctIps,
        anomalyWarmupMs: l.anomalyWarmupMs ?? DEFAULT_ANOMALY_SETTINGS.warmupMs,
      },
      store: db.store,
      anomalies: {
        onUnauthorized: (attempt) => {
          unauthorized.push(attempt);
          writer.onUnauthorized(attempt);
        },
        write: (entry) => writer.write(entry),
      },
      publisher: {
        publish: (event) => {
          events.push(event);
          return Promise.resolve();
        },
      },
      logger,
      now: options.now,
      breachFlushEveryMs: 0,
    });
  }

  const usage =
    options.usage === undefined
      ? undefined
      : createUsage({
          config: {
            prices: options.usage.prices ?? {},
            budgetDefaultReservation: options.usage.defaultReservation ?? 4096,
          },
          store: db.store,
          counters: limits?.counters ?? options.usage.counters ?? new MemoryCounters(),
          publisher: {
            publish: (event) => {
              events.push(event);
              return Promise.resolve();
            },
          },
          logger,
          accountTtlMs: options.usage.accountTtlMs,
        });

  const providers = new ProviderRegistry([
    { id: 'openai', baseUrl: mock.url, auth: { kind: 'bearer' }, builtin: false },
    { id: 'anthropic', baseUrl: mock.url, auth: { kind: 'header', header: 'x-api-key' }, builtin: false },
    ...(options.providers?.(mock.url) ?? []),
  ]);

  const config: ProxyConfig = {
    trustProxy: [],
    pop: 'test-pop',
    providerCa: caFile,
    upstreamConnectTimeoutMs: 2000,
    upstreamHeadersTimeoutMs: 5000,
    upstreamBodyTimeoutMs: 5000,
    ...options.config,
  };
  const tls = await generateSelfSigned();
  const proxyRef: { current?: ProxyServer } = {};
  const api = await buildApiApp(
    {
      store: db.store,
      vault,
      providers,
      publicProxyUrl: 'https://localhost:8444',
      plans,
      now: () => new Date(options.now?.() ?? Date.now()),
      onCredentialsChanged: () => proxyRef.current?.invalidateCredentials(),
    },
    { logger, version: 'test' },
  );
  await api.ready();
  const proxy = createProxyServer(
    {
      store: db.store,
      vault,
      providers,
      config,
      requestLog,
      onUnauthorized: limits?.breach.onUnauthorized ?? ((attempt) => void unauthorized.push(attempt)),
      limits: limits?.proxy,
      usage,
      metrics: { observe: () => undefined },
      countryOf: (headers) => (typeof headers['cf-ipcountry'] === 'string' ? headers['cf-ipcountry'] : null),
      logger,
      now: options.now,
    },
    { tls: { key: tls.keyPem, cert: tls.certPem }, http2: options.http2 },
  );
  proxyRef.current = proxy;
  const httpVersions: string[] = [];
  proxy.server.on('request', (req: { httpVersion: string }) => void httpVersions.push(req.httpVersion));
  const port = await proxy.listen('127.0.0.1', 0);
  const url = `https://localhost:${port}`;
  const dispatcher = new Agent({ connect: { ca: tls.certPem }, allowH2: options.protocol === 'h2' });
  const own = await createAccount(db.store, 'proxy-tests', options.accountPlan ?? 'unlimited', new Date());

  async function apiCall(method: string, url: string, body?: unknown) {
    const res = await api.inject({
      method: method as 'GET',
      url,
      headers: {
        authorization: `Bearer ${own.apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return { status: res.statusCode, body: JSON.parse(res.body) as unknown };
  }

  function waitForRecord(predicate: (r: RequestLogRecord) => boolean): Promise<RequestLogRecord> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const found = records.find(predicate);
        if (found === undefined) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error('waited for a matching request-log record'));
      }, 5000);
      waiters.add(check);
      check();
    });
  }

  return {
    mock,
    db,
    api,
    proxy,
    url,
    port,
    ca: tls.certPem,
    dispatcher,
    httpVersions,
    records,
    unauthorized,
    events,
    limits,
    usage,
    anomalyLog,
    logLines,
    decrypted,
    holdDecrypts() {
      let release = (): void => undefined;
      held = new Promise((resolve) => (release = resolve));
      return () => {
        held = null;
        release();
      };
    },
    apiKey: own.apiKey,
    accountId: own.account.id,
    apiCall,
    async createToken(o) {
      const res = await apiCall('POST', '/v1/tokens', {
        name: 'test token',
        provider: o.provider ?? 'openai',
        allowed_hosts: o.allowedHosts ?? ['app.example.com'],
        ...(o.keyId === undefined ? { real_key: o.realKey ?? 'sk-test-default-real-key-0000000000' } : {}),
        ...(o.keyId === undefined ? {} : { key_id: o.keyId }),
        ...(o.allowedIps === undefined ? {} : { allowed_ips: o.allowedIps }),
        ...(o.expiresAt === undefined ? {} : { expires_at: o.expiresAt }),
        ...(o.rateLimit === undefined ? {} : { rate_limit: o.rateLimit }),
        ...(o.budget === undefined ? {} : { budget: o.budget }),
      });
      if (res.status !== 201) throw new Error(`token creation failed: ${JSON.stringify(res.body)}`);
      const body = res.body as { sanitized_key: string; token_id: string; real_key_ref: string };
      return { token: body.sanitized_key, tokenId: body.token_id, keyId: body.real_key_ref };
    },
    async send(p, o = {}) {
      const res = await request(`${url}${p}`, {
        dispatcher,
        method: o.method ?? 'GET',
        headers: o.headers,
        body: o.body,
      });
      const text = await res.body.text();
      let json: ProxyJson = {};
      try {
        json = JSON.parse(text) as ProxyJson;
      } catch {
        // not JSON: leave {}
      }
      return { status: res.statusCode, headers: res.headers, text, json };
    },
    recordOf(requestId) {
      return waitForRecord((r) => r.requestId === requestId);
    },
    waitForRecord,
    waitForRecords(count) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (records.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(records.slice());
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`waited for ${count} request-log records, got ${records.length}`));
        }, 5000);
        waiters.add(check);
        check();
      });
    },
    async close() {
      await proxy.close(500);
      limits?.close();
      await anomalyLog?.close();
      await dispatcher.close();
      await api.close();
      await mock.close();
      await db.cleanup();
      await rm(tmp, { recursive: true, force: true });
    },
  };
}

/** Headers a browser app at APP_ORIGIN sends with a token. */
export function bearer(token: string, origin: string = APP_ORIGIN): Record<string, string> {
  return { authorization: `Bearer ${token}`, origin };
}
