import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { Config } from '../config/load.js';
import { MemoryCounters, type Counters } from '../limits/counters.js';
import { FallbackCounters } from '../limits/fallback-counters.js';
import { RedisCounters } from '../limits/redis-counters.js';
import { createInvalidation, type Invalidation, type InvalidationScope } from './invalidation.js';
import type { RedisConnection } from './redis-connection.js';

/** What `serve` gets from src/cluster: built once at start, before the limits and the proxy. */
export interface Cluster {
  /** Undefined without `redis`: the limits keep their in-memory counters. */
  readonly counters: Counters | undefined;
  /** Dependencies that work but degraded (`redis` while it is away), for /readyz. */
  degraded(): readonly string[];
  /** Calls `listener` when the counters switch between Redis and memory (quota seeds must be redone). */
  onCountersSwitched(listener: () => void): void;
  /** The invalidation bus, once the caches it drops exist. */
  invalidation(drop: (scope: InvalidationScope) => void): Invalidation;
  close(): Promise<void>;
}

export async function startCluster(
  config: Pick<Config, 'redis' | 'redisCa'>,
  logger: Logger,
  registry: Registry,
): Promise<Cluster> {
  // Imported only with `redis`: the Redis client's ~420 modules cost a server without it ~4 MB of
  // heap for nothing.
  const connection: RedisConnection | undefined =
    config.redis === undefined
      ? undefined
      : (await import('./redis-connection.js')).connectRedis(
          { url: config.redis, ca: config.redisCa },
          logger,
        );
  let counters: FallbackCounters | undefined;
  let local: MemoryCounters | undefined;
  if (connection !== undefined) {
    local = new MemoryCounters();
    counters = new FallbackCounters(new RedisCounters(connection.client), local, connection);
    new Gauge({
      name: 'tokenproxy_redis_up',
      help: 'Whether Redis answers (1) or limits are counted per process meanwhile (0).',
      registers: [registry],
      // With --workers the primary gathers every worker's value: 0 if any of them has lost Redis
      // (summed, two workers read 2, and one of them down read as up).
      aggregator: 'min',
      collect() {
        this.set(connection.up ? 1 : 0);
      },
    });
    // Whatever memory counted during an earlier outage is stale by the next one.
    connection.onChange((up) => {
      if (!up) local?.clear();
    });
  }
  return {
    counters,
    degraded: () => (connection === undefined || connection.up ? [] : ['redis']),
    onCountersSwitched(listener) {
      connection?.onChange(() => listener());
    },
    invalidation: (drop) => createInvalidation({ connection, drop, logger }),
    async close() {
      counters?.close();
      await connection?.close();
    },
  };
}
