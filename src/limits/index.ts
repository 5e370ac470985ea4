import type { Logger } from 'pino';
import type { AnomalyWriter } from '../anomalies/anomaly-writer.js';
import type { Config } from '../config/load.js';
import type { EventPublisher } from '../events/publisher.js';
import type { Store } from '../store/store.js';
import { DEFAULT_ANOMALY_SETTINGS, type AnomalySettings } from './anomaly-model.js';
import { createBreachHandler, summaryGraceMs, type BreachHandler } from './breach.js';
import { MemoryCounters, type Counters } from './counters.js';
import { createProxyLimits, type ProxyLimits } from './proxy-limits.js';

export interface Limits {
  /** The proxy's `onUnauthorized`: anomaly log plus coalesced `breach.detected`. */
  readonly breach: BreachHandler;
  /** The proxy's `limits`: IP backoff, rate limits, quotas, anomaly detection. */
  readonly proxy: ProxyLimits;
  /** The counters behind every limit, shared with the budgets (src/usage/budget-guard.ts). */
  readonly counters: Counters;
  /** Stops the timers (sweeps, trailing alerts) and announces the breach alerts still owed. */
  close(): Promise<void>;
}

export interface LimitsOptions {
  readonly config: Pick<
    Config,
    | 'plans'
    | 'anomalySpikeFactor'
    | 'anomalyMinRequests'
    | 'anomalyDistinctIps'
    | 'anomalyWarmupMs'
    | 'workers'
    | 'redis'
  >;
  readonly store: Pick<Store, 'accounts'>;
  readonly anomalies: Pick<AnomalyWriter, 'onUnauthorized' | 'write'>;
  readonly publisher: EventPublisher;
  readonly logger?: Logger | undefined;
  readonly now?: (() => number) | undefined;
  /** In-memory counters unless given (a shared implementation for several processes). */
  readonly counters?: Counters | undefined;
  /** Trailing breach alerts are checked this often (ms); 0 = only when `breach.flush` is called. */
  readonly breachFlushEveryMs?: number | undefined;
  readonly planTtlMs?: number | undefined;
}

/**
 * The anomaly settings of one process. Baselines are per process (docs/cluster.md), but the request
 * floor is the service's: under `--workers N` node:cluster hands each worker about 1/N of a token's
 * connections, so of its requests; a worker holding the whole floor would report a spike only at N
 * times it. Each worker takes its share (rounded up). The distinct-IP floor stays whole: a client
 * with several connections reaches several workers, so each sees close to all of a token's
 * addresses, not 1/N of them.
 */
export function anomalySettingsFrom(config: LimitsOptions['config']): AnomalySettings {
  return {
    ...DEFAULT_ANOMALY_SETTINGS,
    spikeFactor: config.anomalySpikeFactor,
    minRequests: Math.max(1, Math.ceil(config.anomalyMinRequests / Math.max(1, config.workers))),
    distinctIps: config.anomalyDistinctIps,
    warmupMs: config.anomalyWarmupMs,
  };
}

/** Everything src/limits adds to a server, built once at start (src/server/start.ts, test harness). */
export function createLimits(options: LimitsOptions): Limits {
  const counters = options.counters ?? new MemoryCounters();
  const breach = createBreachHandler({
    counters,
    anomalies: options.anomalies,
    publisher: options.publisher,
    logger: options.logger,
    now: options.now,
    flushEveryMs: options.breachFlushEveryMs,
    // Members of a cluster merge a token's summary; a process alone sends its own at once.
    summaryGraceMs: summaryGraceMs(options.config.redis !== undefined, options.breachFlushEveryMs),
  });
  const proxy = createProxyLimits({
    counters,
    store: options.store,
    plans: options.config.plans,
    publisher: options.publisher,
    anomalies: options.anomalies,
    anomaly: anomalySettingsFrom(options.config),
    logger: options.logger,
    planTtlMs: options.planTtlMs,
  });
  return {
    breach,
    proxy,
    counters,
    async close() {
      proxy.close();
      await breach.close();
    },
  };
}
