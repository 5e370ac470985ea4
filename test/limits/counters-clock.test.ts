import { beforeEach, describe, expect, it } from 'vitest';
import type { Counters } from '../../src/limits/counters.js';
import { IpBackoff } from '../../src/limits/ip-backoff.js';
import { RedisCounters } from '../../src/limits/redis-counters.js';
import { useCounterImplementations } from './counters-support.js';

/** The counters when a wall clock steps back, and when the members of a cluster disagree on it. */

const HOUR = 3_600_000;
const { IMPLEMENTATIONS, redisClient } = useCounterImplementations();
const client = () => redisClient();

for (const { name, make } of IMPLEMENTATIONS) {
  describe(name, () => {
    let counters: Counters;
    beforeEach(async () => {
      if (name === 'RedisCounters') await client().sendCommand(['FLUSHALL']);
    });

    describe('a wall clock stepped back (NTP, date -s, a VM restored)', () => {
      const T = 1_800_000_000_000;
      const BACK = HOUR;

      it('a used-up window ends at most its length after the step, its count kept', async () => {
        counters = make();
        for (let i = 0; i < 10; i++) await counters.hit('rl', 60_000, T + i);
        // An hour back: still used up (count kept), but it ends a minute from now, not 61.
        const now = T + 1_000 - BACK;
        const after = await counters.hit('rl', 60_000, now);
        expect([after.count, after.resetAt]).toEqual([11, now + 60_000]);
        const next = await counters.hit('rl', 60_000, now + 60_000);
        expect([next.count, next.resetAt]).toEqual([1, now + 120_000]);
      });

      it('an edited length still waits for the next window; the step cuts by the length opened with', async () => {
        counters = make();
        await counters.hit('rl', 3_600_000, T);
        // Edited to 1 min: the hour under way still ends as it would have.
        const edited = await counters.hit('rl', 60_000, T + 1_000);
        expect([edited.count, edited.resetAt]).toEqual([2, T + 3_600_000]);
        // 10 min back: the hour-long window ends at most an hour from now.
        const now = T + 2_000 - 600_000;
        const back = await counters.hit('rl', 60_000, now);
        expect([back.count, back.resetAt]).toEqual([3, now + 3_600_000]);
      });

      it('a backoff is over once the clock stepped back by more than its wait', async () => {
        counters = make();
        const b = new IpBackoff(counters);
        expect(await b.strike('9.9.9.9', T)).toBe(0); // waits 1 s
        // Checked again and again (the dashboard sign-in checks before it strikes): never an hour.
        expect(await b.check('9.9.9.9', T + 500 - BACK)).toBe(0);
        expect(await b.check('9.9.9.9', T + 500 - BACK + 10 * 60_000)).toBe(0);
        expect(await b.strike('9.9.9.9', T + 600 - BACK)).toBe(2); // the next attempt counts from the new clock
        expect(await b.check('9.9.9.9', T + 600 - BACK + 2_000)).toBe(0);
      });

      it('an alert sent "in the future" holds the next one back an interval, not an hour', async () => {
        counters = make();
        const I = 60_000;
        expect(await counters.coalesce('k', T, I, true)).toBe(1);
        const back = T - BACK;
        expect(await counters.coalesce('k', back, I, true)).toBe(0);
        expect(await counters.coalesce('k', back + I - 1, I, true)).toBe(0);
        expect(await counters.coalesce('k', back + I, I, true)).toBe(3);
        // The trailing alert too.
        expect(await counters.coalesce('t', T, I, true)).toBe(1);
        expect(await counters.coalesce('t', T + 1, I, false)).toBe(0);
        expect(await counters.flushCoalesced('t', back, I)).toBe(0);
        expect(await counters.flushCoalesced('t', back + I - 1, I)).toBe(0);
        expect(await counters.flushCoalesced('t', back + I, I)).toBe(1);
      });
    });
  });
}

describe('RedisCounters: members whose clocks disagree', () => {
  const T = 1_800_000_000_000;
  beforeEach(async () => {
    await client().sendCommand(['FLUSHALL']);
  });

  // Member A's clock is `skew` ahead of B's. A request every 100 ms for 10 minutes, one in `every`
  // reaching A; a limit of 10 a minute. A member corrects only what its own clock wrote, so a skew
  // changes window edges by at most the skew and never lets the limit run away.
  for (const skew of [0, 5_000, 120_000]) {
    it(`a limit of 10 a minute over two members ${skew / 1000} s apart`, async () => {
      const a = new RedisCounters(client());
      const b = new RedisCounters(client());
      let admitted = 0;
      for (let i = 0; i < 6_000; i++) {
        const t = T + i * 100;
        const onA = i % 5 === 4;
        const hit = await (onA ? a.hit('rl', 60_000, t + skew) : b.hit('rl', 60_000, t));
        if (hit.count <= 10) admitted++;
      }
      expect(admitted).toBeGreaterThanOrEqual(100);
      expect(admitted).toBeLessThanOrEqual(skew === 0 ? 100 : 110);
    });
  }

  it("a member corrects its own window after its clock stepped back, not another member's", async () => {
    const a = new RedisCounters(client());
    const b = new RedisCounters(client());
    await a.hit('mine', 60_000, T);
    const own = await a.hit('mine', 60_000, T - HOUR);
    expect(own.resetAt).toBe(T - HOUR + 60_000);
    await a.hit('theirs', 60_000, T);
    const other = await b.hit('theirs', 60_000, T - 30_000); // B lags A by 30 s
    expect(other.resetAt).toBe(T + 60_000);
  });
});
