import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import {
  createInvalidation,
  invalidationMessage,
  parseInvalidation,
  type InvalidationScope,
} from '../../src/cluster/invalidation.js';
import { connectRedis, reconnectDelayMs, type RedisConnection } from '../../src/cluster/redis-connection.js';
import { redactRedisUrl } from '../../src/cluster/redis-url.js';
import { until } from '../support/poll.js';
import { REDIS_POLL, startRedis, type TestRedis } from './support.js';

describe('invalidation messages', () => {
  const table: [string, ReturnType<typeof parseInvalidation>][] = [
    [invalidationMessage('tokens', 'a'), { scope: 'tokens', from: 'a' }],
    [invalidationMessage('accounts', 'b'), { scope: 'accounts', from: 'b' }],
    [invalidationMessage('all', 'c'), { scope: 'all', from: 'c' }],
    ['{"scope":"everything","from":"x"}', undefined],
    ['not json', undefined],
    ['{}', undefined],
  ];
  for (const [message, expected] of table) {
    it(`${message} → ${JSON.stringify(expected)}`, () =>
      expect(parseInvalidation(message)).toEqual(expected));
  }

  it('reconnect delays double from 100 ms to a 5 s cap, jittered down by at most 20 %', () => {
    expect([0, 1, 2, 5, 6, 20].map((n) => reconnectDelayMs(n, () => 0))).toEqual([
      100, 200, 400, 3200, 5000, 5000,
    ]);
    expect(reconnectDelayMs(20, () => 1)).toBe(4000);
  });

  it('a Redis URL is logged without its password', () => {
    expect(redactRedisUrl('redis://user:s3cret@cache:6379/0')).toBe('redis://user:***@cache:6379/0');
    expect(redactRedisUrl('rediss://cache:6380')).toBe('rediss://cache:6380');
  });
});

describe('the invalidation bus on a real Redis', () => {
  let redis: TestRedis;
  let a: RedisConnection;
  let b: RedisConnection;
  const logger = pino({ level: 'silent' });
  const dropsA: InvalidationScope[] = [];
  const dropsB: InvalidationScope[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    a = connectRedis({ url: redis.url }, logger);
    b = connectRedis({ url: redis.url }, logger);
    await until('both connections to Redis to be up', () => a.up && b.up, REDIS_POLL);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
  });

  it('a change in one process drops the cache at once there and, through Redis, in the other', async () => {
    const busA = createInvalidation({ connection: a, drop: (s) => dropsA.push(s), logger });
    createInvalidation({ connection: b, drop: (s) => dropsB.push(s), logger });
    // The subscriptions are made in the background; a message before them would be lost.
    await until(
      'both processes to subscribe to tokenproxy:invalidate',
      async () =>
        ((await redis.command(['PUBSUB', 'NUMSUB', 'tokenproxy:invalidate'])) as [string, number])[1] === 2,
      REDIS_POLL,
    );
    busA.invalidate('tokens');
    expect(dropsA).toEqual(['tokens']); // synchronously: the next request of A reads the store
    await until("B's drop of the tokens cache", () => dropsB.length === 1, REDIS_POLL);
    expect(dropsB).toEqual(['tokens']);
    // A skips its own message: one drop, not two.
    await new Promise((r) => setTimeout(r, 200));
    expect(dropsA).toEqual(['tokens']);
  });

  it('after Redis comes back, every process drops its whole cache (messages may have been lost)', async () => {
    dropsA.length = 0;
    dropsB.length = 0;
    await redis.kill();
    await until('both connections to notice Redis is gone', () => !a.up && !b.up, REDIS_POLL);
    // Publishing while Redis is away neither throws nor waits; the local drop still happens.
    createInvalidation({ connection: a, drop: () => undefined, logger }).invalidate('tokens');
    await redis.start();
    await until(
      'both processes to drop their whole cache',
      () => dropsA.includes('all') && dropsB.includes('all'),
      { timeoutMs: 30_000 },
    );
    await until('both connections to be up again', () => a.up && b.up, { timeoutMs: 30_000 });
  }, 60_000);
});
