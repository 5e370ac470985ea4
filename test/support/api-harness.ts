import { randomBytes } from 'node:crypto';
import type { Registry } from 'prom-client';
import { createAccount } from '../../src/accounts/create-account.js';
import { PLANS } from '../../src/accounts/plans.js';
import { buildApiApp } from '../../src/api/app.js';
import type { ApiServer } from '../../src/api/context.js';
import { createLogger } from '../../src/observability/logger.js';
import { ProviderRegistry, type Provider } from '../../src/providers/providers.js';
import { compileIpMatcher } from '../../src/rules/ip-match.js';
import type { PlanName } from '../../src/store/records.js';
import type { Store } from '../../src/store/store.js';
import { createLocalVault } from '../../src/vault/local-kek.js';
import type { Vault } from '../../src/vault/vault.js';
import type { DatabaseFixture, OpenedDatabase } from './databases.js';

export interface ApiResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** Parsed JSON body (undefined when the body is not JSON). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary response shapes
  readonly body: any;
}

export interface RequestOptions {
  readonly body?: unknown;
  /** Raw body, sent as is (for malformed JSON tests; bytes for encodings that are not UTF-8). */
  readonly raw?: string | Buffer;
  readonly apiKey?: string | null;
  readonly headers?: Record<string, string>;
}

export interface ApiHarness {
  readonly app: ApiServer;
  readonly db: OpenedDatabase;
  readonly store: Store;
  readonly vault: Vault;
  /** Every JSON log line the server wrote. */
  readonly logs: string[];
  /** API key of the harness's own account (plan `free` unless given). */
  readonly apiKey: string;
  readonly accountId: string;
  request(method: string, url: string, options?: RequestOptions): Promise<ApiResponse>;
  newAccount(name: string, plan?: PlanName): Promise<{ apiKey: string; accountId: string }>;
  close(): Promise<void>;
}

export const PROXY_URL = 'https://proxy.test:8444';

export async function startApiHarness(
  fixture: DatabaseFixture,
  options: {
    plan?: PlanName;
    providers?: Provider[];
    now?: () => Date;
    metricsRegistry?: Registry;
    /** Serve TLS, for tests that listen on a real socket. */
    https?: { key: string; cert: string; handshakeTimeoutMs?: number };
    /** How long a request head may take to arrive (20 s unless shortened). */
    headTimeoutMs?: number;
    /** The `trust_proxy` setting's entries. */
    trustProxy?: string[];
  } = {},
): Promise<ApiHarness> {
  const db = await fixture.create();
  const vault = createLocalVault(randomBytes(32));
  const logs: string[] = [];
  const logger = createLogger('debug', { write: (line: string) => void logs.push(line) });
  const now = options.now ?? (() => new Date());
  const app = await buildApiApp(
    {
      store: db.store,
      vault,
      providers: new ProviderRegistry(options.providers ?? []),
      publicProxyUrl: PROXY_URL,
      plans: PLANS,
      now,
      trustProxy: options.trustProxy === undefined ? null : compileIpMatcher(options.trustProxy),
    },
    {
      logger,
      version: 'test',
      metricsRegistry: options.metricsRegistry,
      https: options.https,
      headTimeoutMs: options.headTimeoutMs,
    },
  );
  await app.ready();
  const own = await createAccount(db.store, 'harness', options.plan ?? 'free', now());

  async function request(method: string, url: string, opts: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.apiKey === undefined ? own.apiKey : opts.apiKey;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let payload: string | Buffer | undefined;
    if (opts.raw !== undefined) payload = opts.raw;
    else if (opts.body !== undefined) payload = JSON.stringify(opts.body);
    if (payload !== undefined) headers['content-type'] ??= 'application/json';
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers,
      ...(payload === undefined ? {} : { payload }),
    });
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, headers: res.headers as ApiResponse['headers'], text: res.body, body };
  }

  return {
    app,
    db,
    store: db.store,
    vault,
    logs,
    apiKey: own.apiKey,
    accountId: own.account.id,
    request,
    async newAccount(name, plan = 'free') {
      const created = await createAccount(db.store, name, plan, now());
      return { apiKey: created.apiKey, accountId: created.account.id };
    },
    async close() {
      await app.close();
      await db.cleanup();
    },
  };
}
