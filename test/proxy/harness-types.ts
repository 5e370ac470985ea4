import type { Agent, Dispatcher } from 'undici';
import type { PlanLimits } from '../../src/accounts/plans.js';
import type { AnomalyWriter } from '../../src/anomalies/anomaly-writer.js';
import type { UnauthorizedAttempt } from '../../src/anomalies/record.js';
import type { ApiServer } from '../../src/api/context.js';
import type { NewEvent } from '../../src/events/publisher.js';
import type { Limits } from '../../src/limits/index.js';
import type { ProxyConfig, UsageDeps } from '../../src/proxy/deps.js';
import type { Counters } from '../../src/limits/counters.js';
import type { PriceData } from '../../src/usage/prices.js';
import type { ProxyServer } from '../../src/proxy/server.js';
import type { Provider } from '../../src/providers/providers.js';
import type { RequestLogRecord } from '../../src/requestlog/record.js';
import type { PlanName } from '../../src/store/records.js';
import type { OpenedDatabase } from '../support/databases.js';
import type { MockProvider } from '../support/mock-provider.js';

/** The types of the proxy harness (harness.ts), which re-exports them all. */

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
  /** The proxy listener's idle timeout for HTTP/2 sessions (default the server's 65 s). */
  readonly idleTimeoutMs?: number;
  /** The time a whole HTTP/2 request gets (default the server's 10 min). */
  readonly requestTimeoutMs?: number;
  /** The proxy listener's TLS handshake limit (default the server's 20 s). */
  readonly handshakeTimeoutMs?: number;
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
