import { describe, expect, it } from 'vitest';
import { RedisCounters } from '../../src/limits/redis-counters.js';
import { REDIS_POLL } from '../cluster/support.js';
import { until } from '../support/poll.js';
import { attempt, breachMember as handler, useMembersRedis } from './breach-members.js';

const T0 = Date.UTC(2026, 10, 24, 12, 0, 0);

describe('breach alerts a process still owes when it stops', () => {
  it('close() sends the pending summary, with the trailing alerts owed, at once and once, and waits for it', async () => {
    const clock = { at: T0 };
    const { breach, events } = handler(clock);
    // Ten addresses: three alerts (the token's cap a minute), seven held back for the summary.
    for (let i = 1; i <= 10; i++)
      breach.onUnauthorized(attempt(`192.0.2.${i}`, 'https://evil.example', clock.at));
    // And two more attempts of the first tuple, coalesced into its trailing alert.
    clock.at += 5_000;
    breach.onUnauthorized(attempt('192.0.2.1', 'https://evil.example', clock.at));
    breach.onUnauthorized(attempt('192.0.2.1', 'https://evil.example', clock.at));
    // The three alerts are published (each takes a moment); nothing else is sent before close().
    await until('three alerts published', () => events.length >= 3);
    expect(events).toHaveLength(3);

    // Ten seconds into the minute the process is told to stop: nothing is left for "later".
    clock.at += 5_000;
    await breach.close();
    const data = events.map((e) => e.data);
    // The first address's trailing alert (2 attempts) joins the summary: 7 held back + 2 = 9
    // attempts, from 8 addresses.
    expect(data, JSON.stringify(data)).toHaveLength(4);
    expect(data[3]).toMatchObject({ summary: true, attempts: 9, ip_count: 8 });
    expect(data[3]?.ips).toContain('192.0.2.1');
    // Closing again, or a flush after the minute, sends nothing more.
    await breach.close();
    await breach.flush(T0 + 120_000);
    expect(events).toHaveLength(4);
  });

  it("a trailing alert still owed goes out at close() as its token's summary, counted locally", async () => {
    const clock = { at: T0 };
    const { breach, events } = handler(clock);
    breach.onUnauthorized(attempt('192.0.2.1', 'https://evil.example', clock.at));
    clock.at += 5_000;
    breach.onUnauthorized(attempt('192.0.2.1', 'https://evil.example', clock.at));
    breach.onUnauthorized(attempt('192.0.2.1', 'https://evil.example', clock.at));
    await until('the first alert published', () => events.length >= 1);
    expect(events).toHaveLength(1);
    await breach.close();
    expect(events.map((e) => e.data)).toEqual([
      expect.objectContaining({ ip: '192.0.2.1', attempts: 1 }),
      expect.objectContaining({ summary: true, attempts: 2, ips: ['192.0.2.1'] }),
    ]);
  });

  it('with nothing owed, close() sends nothing', async () => {
    const clock = { at: T0 };
    const { breach, events } = handler(clock);
    breach.onUnauthorized(attempt('192.0.2.1', 'https://evil.example', clock.at));
    await until('the alert published', () => events.length >= 1);
    await breach.close();
    expect(events).toHaveLength(1);
  });
});

describe('breach alerts owed at shutdown, two members on one real Redis', () => {
  const shared = useMembersRedis();

  it('a member that stops does not touch the shared window: the other still sends its trailing alert', async () => {
    const clock = { at: T0 };
    const a = handler(clock, new RedisCounters(shared.connection.client));
    const b = handler(clock, new RedisCounters(shared.connection.client));
    a.breach.onUnauthorized(attempt('192.0.2.1', 'https://evil.example', clock.at));
    await until("member A's first breach event", () => a.events.length === 1, REDIS_POLL);
    // Thirty seconds later both members see the same tuple again: coalesced on each.
    clock.at += 30_000;
    a.breach.onUnauthorized(attempt('192.0.2.1', 'https://evil.example', clock.at));
    b.breach.onUnauthorized(attempt('192.0.2.1', 'https://evil.example', clock.at));
    // A stops at once, with the Redis answers possibly still on their way: it waits for them.
    await a.breach.close();
    expect(a.events.map((e) => e.data)).toEqual([
      expect.objectContaining({ attempts: 1 }),
      expect.objectContaining({ summary: true, attempts: 1 }),
    ]);
    // B's trailing alert comes a minute after B first held one back (its own clock of the tuple),
    // for both coalesced attempts: A's stop left the shared count and window as they were.
    await new Promise((r) => setTimeout(r, 200)); // B's Redis answer, settled in the background
    await b.breach.flush(T0 + 91_000);
    await until("member B's flushed breach event", () => b.events.length > 0, { timeoutMs: 5_000 });
    expect(b.events.map((e) => e.data)).toEqual([expect.objectContaining({ ip: '192.0.2.1', attempts: 2 })]);
    await b.breach.close();
  });
});
