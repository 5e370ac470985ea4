import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Agent, request } from 'undici';
import { createAccount } from '../../src/accounts/create-account.js';
import type { UnauthorizedAttempt } from '../../src/anomalies/record.js';
import { buildApiApp } from '../../src/api/app.js';
import type { NewEvent } from '../../src/events/publisher.js';
import { createLogger } from '../../src/observability/logger.js';
import type { ProxyConfig } from '../../src/proxy/deps.js';
import { connectionLimits } from '../../src/config/connection-limits.js';
import { createProxyServer, type ProxyServer } from '../../src/proxy/server.js';
import { ProviderRegistry } from '../../src/providers/providers.js';
import { createCountryResolver } from '../../src/requestlog/country.js';
import { generateSelfSigned } from '../../src/tls/self-signed.js';
import { createLocalVault } from '../../src/vault/local-kek.js';
import type { DatabaseFixture } from '../support/databases.js';
import { startMockProvider } from '../support/mock-provider.js';
import { limitsAndUsage } from './harness-limits.js';
import { recordingVault, requestLogRecorder } from './harness-recorders.js';
import type { HarnessOptions, ProxyHarness, ProxyJson } from './harness-types.js';

// The harness's types live in harness-types.ts, what it collects in harness-recorders.ts and its
// optional limits and usage in harness-limits.ts; tests import all of it from here.
export { PROTOCOLS } from './harness-types.js';
export type {
  HarnessLimits,
  HarnessOptions,
  HarnessUsage,
  Protocol,
  ProxyHarness,
  ProxyJson,
  ProxyResponse,
  SendOptions,
  TokenOptions,
} from './harness-types.js';

export const APP_ORIGIN = 'https://app.example.com';

/**
 * Starts a real proxy on 127.0.0.1 (self-signed TLS 1.3), a real store, a real vault, the management
 * API (in-process, `inject`) wired to invalidate the proxy's token cache, and the HTTPS mock provider
 * standing in for `openai` and `anthropic`. Everything the proxy hands out is collected.
 */
export async function startProxyHarness(
  fixture: DatabaseFixture,
  options: HarnessOptions = {},
): Promise<ProxyHarness> {
  const mock = await startMockProvider({ gapMs: 60 });
  const db = await fixture.create();
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'tokenproxy-proxy-'));
  const caFile = path.join(tmp, 'provider-ca.pem');
  await writeFile(caFile, `${mock.caCertPem}\n${options.extraCaPem ?? ''}`);

  const { vault, decrypted, holdDecrypts } = recordingVault(createLocalVault(randomBytes(32)));

  const logLines: string[] = [];
  const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });
  const { sink: requestLog, records, waitForRecord, waitForRecords } = requestLogRecorder();
  const unauthorized: UnauthorizedAttempt[] = [];
  const events: NewEvent[] = [];
  const { plans, limits, anomalyLog, usage } = limitsAndUsage(options, {
    store: db.store,
    logger,
    unauthorized,
    events,
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
    connections: connectionLimits({ proxy: 'auto', upstream: 'auto' }, undefined),
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
      countryOf: await createCountryResolver({ countryHeader: 'cf-ipcountry', geoipDb: undefined }),
      logger,
      now: options.now,
    },
    {
      tls: { key: tls.keyPem, cert: tls.certPem },
      http2: options.http2,
      idleTimeoutMs: options.idleTimeoutMs,
      handshakeTimeoutMs: options.handshakeTimeoutMs,
      requestTimeoutMs: options.requestTimeoutMs,
    },
  );
  proxyRef.current = proxy;
  const httpVersions: string[] = [];
  // HTTP/1.1 requests come to the server's `request` event, HTTP/2 ones as streams (src/proxy/h2-stream.ts);
  // an h2 request also seen by `request` would be counted twice, and the tests' counts would show it.
  proxy.server.on('request', (req: { httpVersion: string }) => void httpVersions.push(req.httpVersion));
  proxy.server.on('stream', () => void httpVersions.push('2.0'));
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
    holdDecrypts,
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
    waitForRecords,
    async close() {
      await proxy.close(500);
      await limits?.close();
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
