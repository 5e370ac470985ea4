import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import type { UnauthorizedAttempt } from '../../src/anomalies/record.js';
import { connectRedis, type RedisConnection } from '../../src/cluster/redis-connection.js';
import type { NewEvent } from '../../src/events/publisher.js';
import { createBreachHandler } from '../../src/limits/breach.js';
import { MemoryCounters, type Counters } from '../../src/limits/counters.js';
import { REDIS_POLL, startRedis, type TestRedis } from '../cluster/support.js';
import { until } from '../support/poll.js';

/** One refused attempt on token `tok_1` of account `acct_1`. */
export function attempt(ip: string, origin: string, at: number): UnauthorizedAttempt {
  return {
    requestId: `req_${ip}`,
    timestamp: new Date(at).toISOString(),
    accountId: 'acct_1',
    tokenId: 'tok_1',
    origin,
    ip,
    country: null,
    path: '/openai/v1/models',
    reason: 'origin_not_allowed',
  };
}

/**
 * A breach handler as one process runs it (in-memory counters unless given), on a test clock and
 * flushed only when the test says, with a publisher that takes a moment, like the outbox.
 */
export function breachMember(
  clock: { at: number },
  counters: Counters = new MemoryCounters(),
  summaryGraceMs = 0,
) {
  const events: NewEvent[] = [];
  const breach = createBreachHandler({
    counters,
    anomalies: { onUnauthorized: () => undefined },
    publisher: {
      publish: async (event) => {
        await new Promise((r) => setTimeout(r, 20));
        events.push(event);
      },
    },
    now: () => clock.at,
    flushEveryMs: 0,
    summaryGraceMs,
  });
  return { breach, events };
}

/**
 * A redis-server of the describe block's own and a connection to it, from before its first test to
 * after its last: what the members of a cluster share.
 */
export function useMembersRedis(): { redis: TestRedis; connection: RedisConnection } {
  const shared = {} as { redis: TestRedis; connection: RedisConnection };
  beforeAll(async () => {
    shared.redis = await startRedis();
    shared.connection = connectRedis({ url: shared.redis.url }, pino({ level: 'silent' }));
    await until('the connection to Redis to be up', () => shared.connection.up, REDIS_POLL);
  }, 60_000);
  afterAll(async () => {
    await shared.connection?.close();
    await shared.redis?.stop();
  });
  return shared;
}
