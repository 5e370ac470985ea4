import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DROP_REASONS, type QueueMetrics } from '../requestlog/batcher.js';
import type { ProxyMetrics } from './proxy-metrics.js';

/**
 * Prometheus metrics, served at GET /metrics on the management listener. Labels take only values
 * from closed sets (provider ids known at start, status codes, queue names): never a token, key,
 * origin, IP or path, which would both leak and grow the series without bound.
 */
export interface Metrics extends ProxyMetrics {
  /** A registry of its own (not prom-client's global one), so several servers can share a process. */
  readonly registry: Registry;
  /** The counters of one batched log queue (`request_log`, `anomaly_log`). */
  queue(name: string): QueueMetrics;
}

export interface MetricsOptions {
  /** Provider ids known at start; any other value is reported as `unknown`. */
  readonly providers: readonly string[];
  /** Process and Node.js runtime metrics (default true). */
  readonly defaultMetrics?: boolean | undefined;
}

/** The proxy adds well under a millisecond when healthy: resolution down to 0.1 ms, up to 50 ms. */
export const ADDED_LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05];
/** Providers answer in tens of milliseconds to minutes (long generations). */
export const UPSTREAM_LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

const UNKNOWN = 'unknown';

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const known = new Set(options.providers);

  const requests = new Counter({
    name: 'tokenproxy_proxy_requests_total',
    help: 'Proxied requests by provider and HTTP status returned, refused ones included.',
    labelNames: ['provider', 'status'] as const,
    registers: [registry],
  });
  const added = new Histogram({
    name: 'tokenproxy_proxy_added_latency_seconds',
    help: 'Time the proxy itself adds to a request, excluding the provider.',
    buckets: ADDED_LATENCY_BUCKETS,
    registers: [registry],
  });
  const upstream = new Histogram({
    name: 'tokenproxy_proxy_upstream_latency_seconds',
    help: "Time from sending a request upstream to the provider's response headers.",
    labelNames: ['provider'] as const,
    buckets: UPSTREAM_LATENCY_BUCKETS,
    registers: [registry],
  });

  const depths = new Map<string, () => number>();
  new Gauge({
    name: 'tokenproxy_log_queue_depth',
    help: 'Log records waiting to be stored, by queue.',
    labelNames: ['queue'] as const,
    registers: [registry],
    collect() {
      for (const [queue, depth] of depths) this.set({ queue }, depth());
    },
  });
  const dropped = new Counter({
    name: 'tokenproxy_log_dropped_total',
    help: 'Log records dropped, by queue and reason (queue_full, store_failed, worker_lost, closed).',
    labelNames: ['queue', 'reason'] as const,
    registers: [registry],
  });
  const storeFailures = new Counter({
    name: 'tokenproxy_log_store_failures_total',
    help: 'Failed attempts to store a batch of log records (retried), by queue.',
    labelNames: ['queue'] as const,
    registers: [registry],
  });

  let openConnections: (() => number) | undefined;
  new Gauge({
    name: 'tokenproxy_proxy_connections',
    help: 'Connections open on the proxy listener, TLS handshakes included.',
    registers: [registry],
    collect() {
      this.set(openConnections?.() ?? 0);
    },
  });
  const maxConnections = new Gauge({
    name: 'tokenproxy_proxy_connections_max',
    help: 'proxy_max_connections: open connections beyond which new ones are closed at accept (0: no cap).',
    registers: [registry],
  });
  const refused = new Counter({
    name: 'tokenproxy_proxy_connections_refused_total',
    help: 'Connections closed at accept because the proxy listener held proxy_max_connections.',
    registers: [registry],
  });

  // Children per label pair, found once: the hot path then does two map lookups and no allocation.
  const requestChildren = new Map<string, Map<number, Counter.Internal>>();
  const upstreamChildren = new Map<string, Histogram.Internal<'provider'>>();

  function requestCounter(provider: string, status: number): Counter.Internal {
    let byStatus = requestChildren.get(provider);
    if (byStatus === undefined) {
      byStatus = new Map();
      requestChildren.set(provider, byStatus);
    }
    let child = byStatus.get(status);
    if (child === undefined) {
      const label = Number.isInteger(status) && status >= 100 && status <= 599 ? String(status) : 'other';
      child = requests.labels({ provider, status: label });
      byStatus.set(status, child);
    }
    return child;
  }

  function upstreamHistogram(provider: string): Histogram.Internal<'provider'> {
    let child = upstreamChildren.get(provider);
    if (child === undefined) {
      child = upstream.labels({ provider });
      upstreamChildren.set(provider, child);
    }
    return child;
  }

  return {
    registry,
    observe(provider: string, status: number, addedMs: number, upstreamMs: number | null): void {
      const label = known.has(provider) ? provider : UNKNOWN;
      requestCounter(label, status).inc();
      added.observe(addedMs / 1000);
      if (upstreamMs !== null) upstreamHistogram(label).observe(upstreamMs / 1000);
    },
    watchConnections(open: () => number, max: number | undefined): void {
      openConnections = open;
      maxConnections.set(max ?? 0);
    },
    connectionRefused(): void {
      refused.inc();
    },
    queue(name: string): QueueMetrics {
      for (const reason of DROP_REASONS) dropped.labels({ queue: name, reason }).inc(0);
      storeFailures.labels({ queue: name }).inc(0);
      return {
        watchDepth: (depth) => void depths.set(name, depth),
        dropped: (count, reason, own) => dropped.labels({ queue: own ?? name, reason }).inc(count),
        storeFailed: () => storeFailures.labels({ queue: name }).inc(),
      };
    },
  };
}
