import type { Logger } from 'pino';
import type { OnUnauthorized } from '../anomalies/record.js';
import type { Config } from '../config/load.js';
import type { ProxyLimits } from '../limits/proxy-limits.js';
import type { ProxyMetrics } from '../observability/proxy-metrics.js';
import type { ProviderRegistry } from '../providers/providers.js';
import type { RequestLogSink } from '../requestlog/record.js';
import type { Store } from '../store/store.js';
import type { BudgetGuard } from '../usage/budget-guard.js';
import type { PriceTable } from '../usage/prices.js';
import type { CountryResolver } from '../requestlog/country.js';
import type { Vault } from '../vault/vault.js';

/** The configuration fields the proxy reads. */
export type ProxyConfig = Pick<
  Config,
  | 'trustProxy'
  | 'pop'
  | 'providerCa'
  | 'upstreamConnectTimeoutMs'
  | 'upstreamHeadersTimeoutMs'
  | 'upstreamBodyTimeoutMs'
  | 'connections'
>;

/** Everything the proxy needs from the rest of the server, passed in once at start. */
export interface ProxyDeps {
  readonly store: Store;
  readonly vault: Vault;
  readonly providers: ProviderRegistry;
  readonly config: ProxyConfig;
  readonly requestLog: RequestLogSink;
  readonly onUnauthorized: OnUnauthorized;
  readonly metrics: ProxyMetrics;
  /** Called at most once per request (its record, the anomaly check): a header or a local database. */
  readonly countryOf: CountryResolver;
  /** IP backoff, rate limits, quotas and anomaly detection (src/limits); none when absent. */
  readonly limits?: ProxyLimits | undefined;
  /** Prices and budgets (src/usage); without it usage is still recorded, with no cost. */
  readonly usage?: UsageDeps | undefined;
  /** For unexpected failures only (vault, store); never given headers, tokens, keys or bodies. */
  readonly logger?: Logger | undefined;
  /** Wall clock in ms; defaults to Date.now. Token expiry and record timestamps use it. */
  readonly now?: (() => number) | undefined;
}

export interface UsageDeps {
  readonly prices: PriceTable;
  /** Reservations for budgeted tokens; none when absent. */
  readonly budgets?: BudgetGuard | undefined;
  /** Output tokens reserved when a budgeted request names no maximum (`budget_default_reservation`). */
  readonly defaultReservation: number;
}
