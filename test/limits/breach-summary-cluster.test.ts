import { beforeEach, describe, expect, it } from 'vitest';
import { summaryGraceMs } from '../../src/limits/breach.js';
import { RedisCounters } from '../../src/limits/redis-counters.js';
import { until } from '../support/poll.js';
import { attempt, breachMember, useMembersRedis } from './breach-members.js';

const T0 = Date.UTC(2026, 10, 29, 9, 0, 0);
const GRACE = summaryGraceMs(true);

/**
 * DESIGN §6: the attempts the caps held back make one summary per token at the end of the minute,
 * however many processes refused them. Two members on one real Redis, each flushing on its own.
 */
describe('breach summaries of a cluster: one per token, with every member’s attempts', () => {
  const shared = useMembersRedis();
  const client = () => shared.connection.client;
  beforeEach(async () => {
    await client().sendCommand(['FLUSHALL']);
  });

  /** Members A and B: 12 attempts from 12 addresses, A refusing the odd ones and B the even ones. */
  function flood(clock: { at: number }) {
    const a = breachMember(clock, new RedisCounters(client()), GRACE);
    const b = breachMember(clock, new RedisCounters(client()), GRACE);
    for (let i = 1; i <= 12; i++) {
      const member = i % 2 === 1 ? a : b;
      member.breach.onUnauthorized(attempt(`192.0.2.${i}`, `https://evil${i % 3}.example`, clock.at + i));
    }
    const summaries = () =>
      [...a.events, ...b.events].filter((e) => e.data.summary === true).map((e) => e.data);
    return { a, b, summaries };
  }

  it('each member pools its part when the minute ends; the first to take the pool sends it, once', async () => {
    const clock = { at: T0 };
    const { a, b, summaries } = flood(clock);
    await until('the three alerts the token cap allows', () => a.events.length + b.events.length >= 3);
    // Each member flushes on its own timer: A just after the minute, B four seconds later.
    await a.breach.flush(T0 + 61_000);
    await b.breach.flush(T0 + 64_000);
    await new Promise((r) => setTimeout(r, 100)); // a summary sent now would be published by then
    expect(summaries()).toEqual([]); // pooled, waiting for the other members' parts
    await a.breach.flush(T0 + 61_000 + GRACE);
    await until('the summary published', () => summaries().length >= 1);
    await b.breach.flush(T0 + 64_000 + GRACE);
    await a.breach.flush(T0 + 200_000);
    await b.breach.flush(T0 + 200_000);
    await new Promise((r) => setTimeout(r, 100)); // a second summary would be published by now
    expect(a.events.length + b.events.length).toBe(4);
    const [summary] = summaries();
    // 12 attempts, 3 alerted: the 9 held back by both members, in one event sent by A.
    expect(summaries()).toHaveLength(1);
    expect(a.events.some((e) => e.data.summary === true)).toBe(true);
    expect(summary).toMatchObject({
      token_id: 'tok_1',
      summary: true,
      attempts: 9,
      reasons: { origin_not_allowed: 9 },
      ip_count: 9,
      origin_count: 3,
      counts_capped: false,
    });
    const alerted = new Set(
      [...a.events, ...b.events].filter((e) => e.data.summary !== true).map((e) => e.data.ip),
    );
    const all = Array.from({ length: 12 }, (_, i) => `192.0.2.${i + 1}`);
    expect(new Set(summary?.ips as string[])).toEqual(new Set(all.filter((ip) => !alerted.has(ip))));
    expect(String(summary?.first_seen) < String(summary?.last_seen)).toBe(true);
  });

  it('a member that stops sends the pool at once, with the parts already in it; the rest follow', async () => {
    const clock = { at: T0 };
    const { a, b, summaries } = flood(clock);
    await until('the three alerts the token cap allows', () => a.events.length + b.events.length >= 3);
    await a.breach.flush(T0 + 61_000); // A's part pooled
    clock.at = T0 + 62_000;
    await b.breach.close(); // B stops before its flush: pools its part and sends both
    expect(summaries()).toHaveLength(1);
    expect(summaries()[0]).toMatchObject({ attempts: 9, ip_count: 9 });
    await a.breach.flush(T0 + 61_000 + GRACE); // A finds the pool taken
    await a.breach.close();
    expect(summaries()).toHaveLength(1);
  });

  it('alone (no grace), a member sends its summary at its first flush after the minute, as before', async () => {
    const clock = { at: T0 };
    const solo = breachMember(clock, new RedisCounters(client()), summaryGraceMs(false));
    for (let i = 1; i <= 5; i++)
      solo.breach.onUnauthorized(attempt(`192.0.2.${i}`, 'https://evil.example', T0));
    await until('three alerts', () => solo.events.length >= 3);
    await solo.breach.flush(T0 + 60_000);
    await until('the summary', () => solo.events.length >= 4);
    expect(solo.events[3]?.data).toMatchObject({ summary: true, attempts: 2, ip_count: 2 });
  });

  it('a member whose take fails sends its own part rather than lose the summary', async () => {
    const clock = { at: T0 };
    class TakeFails extends RedisCounters {
      override takeSummary(): Promise<undefined> {
        return Promise.reject(new Error('Redis went away'));
      }
    }
    const lonely = breachMember(clock, new TakeFails(client()), GRACE);
    for (let i = 1; i <= 6; i++)
      lonely.breach.onUnauthorized(attempt(`192.0.2.${i}`, 'https://evil.example', T0 + i));
    await until('three alerts', () => lonely.events.length >= 3);
    await lonely.breach.flush(T0 + 61_000);
    await lonely.breach.flush(T0 + 61_000 + GRACE);
    await until('the summary', () => lonely.events.length >= 4);
    expect(lonely.events[3]?.data).toMatchObject({ summary: true, attempts: 3, ip_count: 3 });
  });
});
