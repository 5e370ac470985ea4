import { afterEach, describe, expect, it } from 'vitest';
import { backoffWaitMs, MemoryCounters } from '../../src/limits/counters.js';
import { IP_BACKOFF_POLICY, IpBackoff, retryAfterSeconds } from '../../src/limits/ip-backoff.js';

const HOUR = 3_600_000;
let counters: MemoryCounters;
afterEach(() => counters?.close());

describe('backoff schedule', () => {
  const table: [number, number][] = [
    [0, 0],
    [1, 1_000],
    [2, 2_000],
    [3, 4_000],
    [4, 8_000],
    [10, 512_000],
    [12, 2_048_000],
    [13, HOUR], // 4,096 s capped at 3,600 s
    [14, HOUR],
    [1000, HOUR],
  ];
  for (const [attempts, wait] of table) {
    it(`attempt ${attempts} → ${wait} ms`, () => {
      expect(backoffWaitMs(attempts, IP_BACKOFF_POLICY)).toBe(wait);
    });
  }

  it('Retry-After rounds up to whole seconds', () => {
    expect([0, -5, 1, 999, 1000, 1001].map(retryAfterSeconds)).toEqual([0, 0, 1, 1, 1, 2]);
  });
});

describe('IpBackoff with memory counters', () => {
  it('first attempt passes, attempts within the wait are refused and double it, an hour resets', () => {
    counters = new MemoryCounters();
    const b = new IpBackoff(counters);
    const t0 = 1_700_000_000_000;
    expect(b.check('1.2.3.4', t0)).toBe(0);
    expect(b.strike('1.2.3.4', t0)).toBe(0); // answered 401/403; now waits 1 s
    expect(b.check('1.2.3.4', t0)).toBe(1);
    expect(b.strike('1.2.3.4', t0 + 500)).toBe(2); // in backoff: 429, wait now 2 s from here
    expect(b.strike('1.2.3.4', t0 + 600)).toBe(4);
    expect(b.check('1.2.3.4', t0 + 600 + 3_999)).toBe(1);
    expect(b.check('1.2.3.4', t0 + 600 + 4_000)).toBe(0);
    // After the wait, the next attempt is answered normally but still deepens the wait (8 s).
    expect(b.strike('1.2.3.4', t0 + 10_000)).toBe(0);
    expect(b.check('1.2.3.4', t0 + 10_000)).toBe(8);
    // Other IPs are untouched.
    expect(b.check('5.6.7.8', t0 + 10_000)).toBe(0);
    // An hour without attempts forgets everything: back to 1 s.
    const later = t0 + 10_000 + HOUR;
    expect(b.strike('1.2.3.4', later)).toBe(0);
    expect(b.check('1.2.3.4', later)).toBe(1);
  });

  it('a hammering IP reaches the one-hour cap and stays there', () => {
    counters = new MemoryCounters();
    const b = new IpBackoff(counters);
    const waits: number[] = [];
    for (let i = 0; i < 16; i++) {
      void b.strike('9.9.9.9', 1000 + i);
      waits.push(b.check('9.9.9.9', 1000 + i) as number);
    }
    expect(waits.slice(0, 4)).toEqual([1, 2, 4, 8]);
    expect(waits.slice(12)).toEqual([3600, 3600, 3600, 3600]);
  });
});

describe('fixed-window counter', () => {
  it('counts within a window opened by the first hit and starts over after it', () => {
    counters = new MemoryCounters();
    const rows: [number, number, number][] = [
      // [now, expected count, expected resetAt]
      [1000, 1, 11_000],
      [1001, 2, 11_000],
      [10_999, 3, 11_000],
      [11_000, 1, 21_000],
      [30_000, 1, 40_000],
    ];
    for (const [now, count, resetAt] of rows) {
      const hit = counters.hit('k', 10_000, now);
      expect({ count: hit.count, resetAt: hit.resetAt }).toEqual({ count, resetAt });
    }
  });

  it('keys are independent; seed sets once, add accumulates until expiry', () => {
    counters = new MemoryCounters();
    expect(counters.hit('a', 1000, 0).count).toBe(1);
    expect(counters.hit('b', 1000, 0).count).toBe(1);
    expect(counters.seed('q', 5, 100, 0)).toBe(5);
    expect(counters.seed('q', 9, 100, 1)).toBe(5);
    expect(counters.add('q', 1, 100, 2)).toBe(6);
    expect(counters.add('q', 1, 200, 100)).toBe(1); // expired: starts over
  });

  it('reserve adds only within the limit, shares the values of add, and restarts after expiry', () => {
    counters = new MemoryCounters();
    // [key, amount, limit, expiresAt, now, ok, total]
    const rows: [string, number, number, number, number, boolean, number][] = [
      ['r', 40, 100, 1000, 0, true, 40],
      ['r', 60, 100, 1000, 1, true, 100], // exactly the limit fits
      ['r', 1, 100, 1000, 2, false, 100], // one more does not, and changes nothing
      ['r', 0, 100, 1000, 3, true, 100],
      ['r', 150, 100, 2000, 1000, false, 0], // expired: counts as 0, and one request alone is too big
      ['r', 30, 100, 2000, 1001, true, 30],
      ['s', 5, 4, 1000, 0, false, 0],
    ];
    for (const [key, amount, limit, expiresAt, now, ok, total] of rows) {
      expect(counters.reserve(key, amount, limit, expiresAt, now), `${key} +${amount} at ${now}`).toEqual({
        ok,
        total,
      });
    }
    // Settling uses add, on the same value: a release makes room again.
    expect(counters.add('r', -30, 2000, 1002)).toBe(0);
    expect(counters.reserve('r', 100, 100, 2000, 1003)).toEqual({ ok: true, total: 100 });
  });

  it('sweeps expired entries and caps every map', () => {
    counters = new MemoryCounters({ maxEntries: 100 });
    for (let i = 0; i < 1000; i++) {
      counters.hit(`w${i}`, 1000, 0);
      counters.add(`v${i}`, 1, 1000, 0);
      counters.strike(`b${i}`, 0, IP_BACKOFF_POLICY);
      counters.coalesce(`c${i}`, 0, 1000, true);
    }
    expect(counters.sizes).toEqual({ windows: 100, values: 100, backoffs: 100, coalesced: 100 });
    counters.sweep(HOUR + 1);
    expect(counters.sizes).toEqual({ windows: 0, values: 0, backoffs: 0, coalesced: 0 });
  });
});

describe('coalescer', () => {
  it('leading alert, then counts until the interval is over; trailing flush carries the rest', () => {
    counters = new MemoryCounters();
    const I = 60_000;
    // [now, trigger, expected covered]
    const rows: [number, boolean, number][] = [
      [0, true, 1], // first attempt alerts at once
      [1_000, true, 0],
      [2_000, false, 0], // an ip_backoff attempt: counted, never alerts by itself
      [59_999, true, 0],
      [60_000, true, 4], // 3 pending + this one
      [61_000, false, 0],
      [119_999, false, 0],
      [120_000, false, 0], // no trigger: still pending
    ];
    for (const [now, trigger, covered] of rows) {
      expect(counters.coalesce('k', now, I, trigger), `at ${now}`).toBe(covered);
    }
    expect(counters.flushCoalesced('k', 120_000, I)).toBe(3);
    expect(counters.flushCoalesced('k', 200_000, I)).toBe(0); // nothing pending
    expect(counters.coalesce('k', 180_000 + 1, I, true)).toBe(1);
  });

  it('occurrences that may not trigger never alert on their own, not even as a trailing alert', () => {
    counters = new MemoryCounters();
    for (let i = 0; i < 5; i++) expect(counters.coalesce('k', i, 60_000, false)).toBe(0);
    expect(counters.flushCoalesced('k', 120_000, 60_000)).toBe(0);
    expect(counters.coalesce('k', 130_000, 60_000, true)).toBe(6); // the next real alert covers them
  });

  it('flush before the interval is over sends nothing', () => {
    counters = new MemoryCounters();
    counters.coalesce('k', 0, 60_000, true);
    counters.coalesce('k', 10, 60_000, true);
    expect(counters.flushCoalesced('k', 59_999, 60_000)).toBe(0);
    expect(counters.flushCoalesced('k', 60_000, 60_000)).toBe(1);
  });
});
