import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, probeDelayMs } from '../../src/cluster/redis-connection.js';
import { MemoryCounters } from '../../src/limits/counters.js';
import { FallbackCounters } from '../../src/limits/fallback-counters.js';
import { summaryGraceMs } from '../../src/limits/breach.js';
import { RedisCounters } from '../../src/limits/redis-counters.js';
import type { SummaryPart } from '../../src/limits/summary-part.js';
import { REDIS_POLL, startRedis } from '../cluster/support.js';
import { until } from '../support/poll.js';
import { attempt, breachMember } from './breach-members.js';

const T0 = Date.UTC(2026, 10, 29, 9, 0, 0);

/** A redis-server of its own, and FallbackCounters over a connection to it, once it is up. */
async function fallbackOnOwnRedis(logger: pino.Logger) {
  const redis = await startRedis();
  const connection = connectRedis({ url: redis.url }, logger);
  const local = new MemoryCounters();
  const counters = new FallbackCounters(new RedisCounters(connection.client), local, connection);
  await until('the connection to Redis to be up', () => connection.up, REDIS_POLL);
  return { redis, connection, local, counters };
}

/**
 * The describe block's own Redis and FallbackCounters over it, from before its first test to after
 * its last (resumed first, should a test have left it paused); `lines` gets its log lines.
 */
function useOwnRedis(lines?: string[]): Awaited<ReturnType<typeof fallbackOnOwnRedis>> {
  const own = {} as Awaited<ReturnType<typeof fallbackOnOwnRedis>>;
  beforeAll(async () => {
    const logger =
      lines === undefined
        ? pino({ level: 'silent' })
        : pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    Object.assign(own, await fallbackOnOwnRedis(logger));
  }, 60_000);
  afterAll(async () => {
    own.redis?.resume();
    own.counters?.close();
    await own.connection?.close();
    await own.redis?.stop();
  });
  return own;
}

/** DESIGN §9: shared while Redis answers, this process's own while it does not; never an error. */
describe('FallbackCounters on a Redis that goes away and comes back', () => {
  const own = useOwnRedis();
  it('counts in Redis while it is up: another process sees the same window', async () => {
    const other = new RedisCounters(own.connection.client);
    expect((await own.counters.hit('rl:t', 60_000, 1_000)).count).toBe(1);
    expect((await other.hit('rl:t', 60_000, 1_001)).count).toBe(2);
    expect(own.local.sizes.windows).toBe(0);
  });

  it('Redis killed: the call in flight is answered from memory, later ones synchronously', async () => {
    await own.redis.kill();
    const answer = own.counters.hit('rl:t', 60_000, 2_000);
    expect((await answer).count).toBe(1); // memory's own window: the shared count is out of reach
    await until('the connection to notice Redis is gone', () => !own.connection.up, REDIS_POLL);
    const next = own.counters.hit('rl:t', 60_000, 2_001);
    expect(next).not.toBeInstanceOf(Promise);
    expect(next).toEqual({ count: 2, resetAt: 62_000 });
    expect(own.counters.sharing).toBe(false);
  });

  it('Redis back: counts go to Redis again by themselves', async () => {
    await own.redis.start();
    await until('the connection to the restarted Redis to be up', () => own.connection.up, {
      timeoutMs: 30_000,
    });
    expect(own.counters.sharing).toBe(true);
    // The restarted Redis is empty: a fresh window there, not memory's count of 2.
    expect((await own.counters.hit('rl:t', 60_000, 3_000)).count).toBe(1);
  }, 60_000);
});

describe('breach summary parts across a Redis outage', () => {
  const own = useOwnRedis();
  const part = (attempts: number, ip: string): SummaryPart => ({
    attempts,
    reasons: { origin_not_allowed: attempts },
    origins: ['https://evil.example'],
    ips: [ip],
    capped: false,
    first: '2026-11-29T09:00:00.000Z',
    last: '2026-11-29T09:00:59.000Z',
  });

  it('a part pooled while Redis is away is kept in memory and sent with the shared pool once it is back', async () => {
    const other = new RedisCounters(own.connection.client);
    await own.redis.kill();
    await until('the connection to notice Redis is gone', () => !own.connection.up, REDIS_POLL);
    expect(
      own.counters.poolSummary('breach-summary:t', part(4, '192.0.2.1'), 600_000, 1_000),
    ).toBeUndefined();
    // What start-cluster does at every outage: the counts are stale, the waiting parts are not.
    own.local.clear();
    await own.redis.start();
    await until('the connection to the restarted Redis to be up', () => own.connection.up, {
      timeoutMs: 30_000,
    });
    await other.poolSummary('breach-summary:t', part(3, '192.0.2.2'), 600_000, 2_000); // another member's
    expect(await own.counters.takeSummary('breach-summary:t', 3_000)).toMatchObject({
      attempts: 7,
      ips: ['192.0.2.2', '192.0.2.1'],
      origins: ['https://evil.example'],
    });
    expect(await own.counters.takeSummary('breach-summary:t', 3_000)).toBeUndefined();
    expect(await other.takeSummary('breach-summary:t', 3_000)).toBeUndefined();
  }, 60_000);

  it('a take while Redis is away rejects, and takes memory’s parts with it', async () => {
    await own.counters.poolSummary('breach-summary:u', part(5, '192.0.2.5'), 600_000, 4_000); // in Redis
    await own.redis.kill();
    await until('the connection to notice Redis is gone', () => !own.connection.up, REDIS_POLL);
    expect(
      own.counters.poolSummary('breach-summary:u', part(2, '192.0.2.6'), 600_000, 4_500),
    ).toBeUndefined(); // memory
    await expect(own.counters.takeSummary('breach-summary:u', 5_000)).rejects.toThrow(/out of reach/);
    // Drained: the breach handler sends its own parts instead, so memory must not send them again.
    expect(own.local.takeSummary('breach-summary:u', 5_000)).toBeUndefined();
    await own.redis.start();
    await until('the connection to the restarted Redis to be up', () => own.connection.up, {
      timeoutMs: 30_000,
    });
  }, 60_000);

  it('the breach handler sends the part it pooled in Redis when the pool is out of reach at the take', async () => {
    const clock = { at: T0 };
    const member = breachMember(clock, own.counters, summaryGraceMs(true));
    for (let i = 1; i <= 6; i++)
      member.breach.onUnauthorized(attempt(`192.0.2.${i}`, 'https://evil.example', T0 + i));
    await until('three alerts', () => member.events.length >= 3);
    await member.breach.flush(T0 + 61_000); // pooled in Redis
    await own.redis.kill();
    await until('the connection to notice Redis is gone', () => !own.connection.up, REDIS_POLL);
    await member.breach.flush(T0 + 61_000 + summaryGraceMs(true));
    await until('the summary', () => member.events.length >= 4);
    expect(member.events[3]?.data).toMatchObject({ summary: true, attempts: 3, ip_count: 3 });
    await own.redis.start();
    await until('the connection to the restarted Redis to be up', () => own.connection.up, {
      timeoutMs: 30_000,
    });
  }, 60_000);
});

describe('a Redis that answers with errors (maxmemory reached: it refuses writes but answers PING)', () => {
  const lines: string[] = [];
  const own = useOwnRedis(lines);

  it('probe delays after relapses: 1 s doubling to 30 s', () => {
    expect([0, 1, 2, 4, 5, 6, 40].map(probeDelayMs)).toEqual([1000, 2000, 4000, 16000, 30000, 30000, 30000]);
  });

  it('counts per process while writes are refused, without flapping, and shares again once they pass', async () => {
    await own.redis.command(['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
    await own.redis.command(['CONFIG', 'SET', 'maxmemory', '1']);
    // The refused command is answered from memory, and Redis counts as away.
    expect((await own.counters.hit('rl:oom', 60_000, 1_000)).count).toBe(1);
    expect(own.connection.up).toBe(false);
    // PING still answers; only a write proves Redis usable, so it stays away (4 s: four probes).
    const deadline = Date.now() + 4_000;
    while (Date.now() < deadline) {
      expect(own.connection.up).toBe(false);
      await new Promise((r) => setTimeout(r, 50));
    }
    const warnings = lines.filter((l) => l.includes('Redis answers commands with an error'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('OOM');
    expect(lines.filter((l) => l.includes('Redis is back'))).toHaveLength(0);

    await own.redis.command(['CONFIG', 'SET', 'maxmemory', '0']);
    await until('the connection to be up once writes pass', () => own.connection.up, { timeoutMs: 5_000 });
    expect((await own.counters.hit('rl:oom', 60_000, 2_000)).count).toBe(1); // Redis's own window
    expect(lines.filter((l) => l.includes('Redis is back'))).toHaveLength(1);
  }, 30_000);

  it('a connection to a Redis that refuses writes does not count as up until one passes', async () => {
    await own.redis.command(['CONFIG', 'SET', 'maxmemory', '1']);
    const freshLines: string[] = [];
    const fresh = connectRedis(
      { url: own.redis.url },
      pino({ level: 'info' }, { write: (line: string) => void freshLines.push(line) }),
    );
    try {
      await until(
        "the 'refuses tokenproxy' warning",
        () => freshLines.some((l) => l.includes('refuses tokenproxy')),
        { timeoutMs: 5_000 },
      );
      expect(fresh.client.isReady).toBe(true);
      expect(fresh.up).toBe(false);
      expect(freshLines.filter((l) => l.includes('connected to Redis'))).toHaveLength(0);
      await own.redis.command(['CONFIG', 'SET', 'maxmemory', '0']);
      await until('the new connection to be up once writes pass', () => fresh.up, { timeoutMs: 5_000 });
      expect(freshLines.filter((l) => l.includes('connected to Redis'))).toHaveLength(1);
    } finally {
      await own.redis.command(['CONFIG', 'SET', 'maxmemory', '0']);
      await fresh.close();
    }
  }, 30_000);

  it('a Redis that fails again right after each recovery is probed less and less often', async () => {
    // Failures the probe cannot see (a command that times out under load, say), right after a recovery.
    const downFor = async (): Promise<number> => {
      const start = Date.now();
      own.connection.suspect(new Error('command timed out'));
      expect(own.connection.up).toBe(false);
      await until('the suspected connection to be up again', () => own.connection.up, { timeoutMs: 10_000 });
      return Date.now() - start;
    };
    // Lower bounds only: a slow machine can only make Redis look away for longer.
    expect(await downFor()).toBeGreaterThanOrEqual(2_000); // a relapse of the recovery above
    expect(await downFor()).toBeGreaterThanOrEqual(4_000);
  }, 30_000);
});

describe('a Redis that hangs with its connections open (SIGSTOP: a stalled host, a black hole)', () => {
  const lines: string[] = [];
  const own = useOwnRedis(lines);

  it('a call is answered from memory after the command timeout, and Redis counts as away until it answers', async () => {
    expect((await own.counters.hit('rl:hang', 60_000, 1_000)).count).toBe(1);
    own.redis.pause();
    try {
      // The client's own timeout stops at the write; without ours this waited as long as Redis did.
      const started = Date.now();
      const answer = await own.counters.hit('rl:hang', 60_000, 1_001);
      expect(answer.count).toBe(1); // memory's own window
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(own.connection.up).toBe(false);
      expect(lines.some((l) => l.includes('did not answer within 500 ms'))).toBe(true);
      // From now on without waiting at all.
      expect(own.counters.hit('rl:hang', 60_000, 1_002)).not.toBeInstanceOf(Promise);
    } finally {
      own.redis.resume();
    }
    await until('the connection to be up once Redis answers', () => own.connection.up, { timeoutMs: 20_000 });
    expect((await own.counters.hit('rl:hang', 60_000, 2_000)).count).toBeGreaterThanOrEqual(2);
  }, 40_000);
});
