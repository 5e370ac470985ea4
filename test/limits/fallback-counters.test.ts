import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type RedisConnection } from '../../src/cluster/redis-connection.js';
import { MemoryCounters } from '../../src/limits/counters.js';
import { FallbackCounters } from '../../src/limits/fallback-counters.js';
import { RedisCounters } from '../../src/limits/redis-counters.js';
import { eventually, startRedis, type TestRedis } from '../cluster/support.js';

/** DESIGN §9: shared while Redis answers, this process's own while it does not; never an error. */
describe('FallbackCounters on a Redis that goes away and comes back', () => {
  let redis: TestRedis;
  let connection: RedisConnection;
  let local: MemoryCounters;
  let counters: FallbackCounters;

  beforeAll(async () => {
    redis = await startRedis();
    connection = connectRedis({ url: redis.url }, pino({ level: 'silent' }));
    local = new MemoryCounters();
    counters = new FallbackCounters(new RedisCounters(connection.client), local, connection);
    await eventually(() => connection.up);
  }, 60_000);

  afterAll(async () => {
    counters?.close();
    await connection?.close();
    await redis?.stop();
  });

  it('counts in Redis while it is up: another process sees the same window', async () => {
    const other = new RedisCounters(connection.client);
    expect((await counters.hit('rl:t', 60_000, 1_000)).count).toBe(1);
    expect((await other.hit('rl:t', 60_000, 1_001)).count).toBe(2);
    expect(local.sizes.windows).toBe(0);
  });

  it('Redis killed: the call in flight is answered from memory, later ones synchronously', async () => {
    await redis.kill();
    const answer = counters.hit('rl:t', 60_000, 2_000);
    expect((await answer).count).toBe(1); // memory's own window: the shared count is out of reach
    await eventually(() => !connection.up);
    const next = counters.hit('rl:t', 60_000, 2_001);
    expect(next).not.toBeInstanceOf(Promise);
    expect(next).toEqual({ count: 2, resetAt: 62_000 });
    expect(counters.sharing).toBe(false);
  });

  it('Redis back: counts go to Redis again by themselves', async () => {
    await redis.start();
    await eventually(() => connection.up, 30_000);
    expect(counters.sharing).toBe(true);
    // The restarted Redis is empty: a fresh window there, not memory's count of 2.
    expect((await counters.hit('rl:t', 60_000, 3_000)).count).toBe(1);
  }, 60_000);
});
