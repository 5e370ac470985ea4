import { createClient } from '@redis/client';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { RedisClient } from '../../src/cluster/redis-connection.js';
import { MemoryCounters, type Counters } from '../../src/limits/counters.js';
import { RedisCounters } from '../../src/limits/redis-counters.js';
import { startRedis, type TestRedis } from '../cluster/support.js';

/**
 * The counters' suites run each case on both implementations: MemoryCounters, and RedisCounters on a
 * redis-server of the file's own (started before its first test, stopped after its last).
 */
export function useCounterImplementations(): {
  IMPLEMENTATIONS: { name: string; make: () => Counters }[];
  redisClient: () => RedisClient;
} {
  let memory: MemoryCounters | undefined;
  let redis: TestRedis | undefined;
  let client: RedisClient | undefined;
  afterEach(() => memory?.close());
  beforeAll(async () => {
    redis = await startRedis();
    client = createClient({ url: redis.url });
    await client.connect();
  }, 60_000);
  afterAll(async () => {
    client?.destroy();
    await redis?.stop();
  });
  const redisClient = (): RedisClient => {
    if (client === undefined) throw new Error('the suite’s Redis is not up yet');
    return client;
  };
  return {
    IMPLEMENTATIONS: [
      { name: 'MemoryCounters', make: () => (memory = new MemoryCounters()) },
      { name: 'RedisCounters', make: () => new RedisCounters(redisClient()) },
    ],
    redisClient,
  };
}
